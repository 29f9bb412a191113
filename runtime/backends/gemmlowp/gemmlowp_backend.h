#pragma once
#include "runtime/backends/backend.h"
namespace patchfuse {
// gemmlowp (ARM's int8 backend; also built on x86-64, where oneDNN stays auto's choice): the
// frames path's int8 GEMM with exact int32 sums (uint8 pixels x int8 weights, as uint8 q + 128
// with offset -128), the per-channel scale and bias applied after it. int8 only.
const Backend& gemmlowp_backend();
}  // namespace patchfuse
