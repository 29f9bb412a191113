// Test models built in memory with the real writer, and the double-precision oracle the backends
// are compared with.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "runtime/core/dtype.h"
#include "runtime/model/model_view.h"

namespace patchfuse::testing {

struct TestModule {
  std::string name;  // for test output
  int64_t in_channels = 3;
  std::vector<int64_t> kernel = {2, 14, 14};
  int64_t embed_dim = 64;
  bool bias = false;
  DType dtype = DType::kF32;
  Layout layout = Layout::kFusedLinear;
  std::vector<int64_t> stride;  // empty: equal to kernel (eligible)
  bool preprocessing = false;   // Qwen2-VL's image processor (CLIP mean/std, merge 2): takes frames
  // Empty / 1: the eligible values (0, 1, 1). Others write a geometry the reader must refuse.
  std::vector<int64_t> padding = {}, dilation = {};
  int64_t groups = 1;
};

// A verified-format .pfb with one module "visual.patch_embed" holding seeded random weights.
std::vector<uint8_t> make_model(const TestModule& spec, uint32_t seed);

// Seeded uniform values in [-1, 1).
std::vector<float> random_floats(size_t count, uint32_t seed);

// y[i][o] = sum_j x[i][j] * w[o][j] + b[o] in double from the stored weights (widened exactly),
// and the matching sum of absolute terms, which scales every rounding-error bound.
struct Oracle {
  std::vector<double> y, abs_sum;
};
Oracle oracle(const ModuleView& m, const float* x, size_t n);

}  // namespace patchfuse::testing
