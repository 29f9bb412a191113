#pragma once
#include "runtime/backends/backend.h"
namespace patchfuse {
// Portable C++, f32 accumulation: a GEMM for the fused path and a direct convolution for the
// unfused path. Always built; the oracle the optimized backends are compared with.
const Backend& reference_backend();
}  // namespace patchfuse
