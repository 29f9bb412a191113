// safetensors reading (mmap; only the header is parsed and only the tensors asked for are touched)
// and writing (deterministic: tensors sorted by name, header padded to 8 bytes like the reference
// implementation).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/core/dtype.h"
#include "runtime/core/mapped_file.h"
#include "runtime/core/result.h"

namespace patchfuse {

// Element size of a safetensors dtype string ("F32", "BF16", "I64", "F8_E4M3", ...); 0 if unknown.
size_t safetensors_dtype_size(std::string_view dtype);

struct SafetensorsEntry {
  std::string name;
  std::string dtype;  // as written in the header
  std::vector<int64_t> shape;
  uint64_t begin = 0, end = 0;  // offsets into the data section
};

class SafetensorsFile {
 public:
  // Validates the whole header: length within the file and under 100 MB, JSON object, known
  // dtypes, byte counts == product(shape) * dtype size, offsets inside the data section and
  // no two tensors overlapping.
  static Result<SafetensorsFile> open(const std::string& path);

  const std::string& path() const { return file_.path(); }
  const std::vector<SafetensorsEntry>& entries() const { return entries_; }
  const SafetensorsEntry* find(std::string_view name) const;
  const uint8_t* data(const SafetensorsEntry& e) const { return file_.data() + data_start_ + e.begin; }
  const std::map<std::string, std::string>& metadata() const { return metadata_; }

 private:
  SafetensorsFile(MappedFile file, size_t data_start) : file_(std::move(file)), data_start_(data_start) {}
  MappedFile file_;
  size_t data_start_;
  std::vector<SafetensorsEntry> entries_;  // sorted by name
  std::map<std::string, std::string> metadata_;
};

struct TensorToWrite {
  std::string name;
  DType dtype = DType::kF32;
  std::vector<int64_t> shape;
  const uint8_t* data = nullptr;
  size_t bytes = 0;
};

// Serializes to safetensors bytes. Names must be unique.
std::vector<uint8_t> serialize_safetensors(std::vector<TensorToWrite> tensors,
                                           const std::map<std::string, std::string>& metadata);

}  // namespace patchfuse
