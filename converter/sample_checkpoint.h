// Writes a small Hugging Face-style checkpoint shaped like a known architecture (config.json, one
// or several safetensors shards with an index, random seeded weights, a few unrelated tensors),
// plus pixel_values.npy: random patches in the layout the HF image processor produces.
// The quick start converts one; the tests use it for every architecture in the table.
#pragma once

#include <cstdint>
#include <string>

#include "converter/architectures.h"
#include "runtime/core/dtype.h"
#include "runtime/core/result.h"

namespace patchfuse {

struct SampleSpec {
  const Architecture* arch = nullptr;
  DType dtype = DType::kBF16;
  int shards = 2;          // 1 writes model.safetensors, more write an index and shards
  uint64_t seed = 1;
  int64_t embed_dim = 0;   // 0: the architecture's real width; tests use smaller ones
  int64_t patches = 64;    // rows of pixel_values.npy, the matching float32 input; 0 writes none
  bool preprocessor = true;  // also write preprocessor_config.json (so the model takes frames)
};

// Creates `dir` if needed. Deterministic for a given spec.
Status write_sample_checkpoint(const std::string& dir, const SampleSpec& spec);

}  // namespace patchfuse
