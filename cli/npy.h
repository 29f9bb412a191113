// NumPy .npy files (format 1.0-3.0), as patchfuse-run reads inputs and writes outputs.
// Reading accepts little-endian float32 ('<f4'), float64 ('<f8') and uint8 ('|u1'), C order only.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "runtime/core/result.h"

namespace patchfuse {

struct NpyArray {
  std::string descr;           // "<f4", "<f8" or "|u1" (uint8 frames)
  std::vector<int64_t> shape;
  std::vector<uint8_t> bytes;  // C order, little-endian
  size_t count() const;
  // Elements widened to double (exact for both dtypes).
  std::vector<double> to_double() const;
};

// Errors name the file and the offending header field and value.
Result<NpyArray> read_npy(const std::string& path);

// A C-order array of `descr` ("<f4", "<i4", "<i8", "<f8", "|u1"), written atomically.
Status write_npy(const std::string& path, const std::string& descr, const std::vector<int64_t>& shape, const void* data);
// float32 C-order array, written atomically.
Status write_npy_f32(const std::string& path, const std::vector<int64_t>& shape, const float* data);

}  // namespace patchfuse
