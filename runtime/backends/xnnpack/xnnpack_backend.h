#pragma once
#include "runtime/backends/backend.h"
namespace patchfuse {
// XNNPACK (ARM and x86-64): fully-connected f32 / f16 operators for the fused path, the 2-D
// NHWC convolution with kt folded into channels for the unfused path (f32).
const Backend& xnnpack_backend();
}  // namespace patchfuse
