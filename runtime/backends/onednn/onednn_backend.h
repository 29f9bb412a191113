#pragma once
#include "runtime/backends/backend.h"
namespace patchfuse {
// oneDNN (x86-64): dnnl::matmul for the fused path, dnnl::convolution_forward (3-D) for the
// unfused path; f32, and bf16 where the CPU has AVX512-BF16.
const Backend& onednn_backend();
}  // namespace patchfuse
