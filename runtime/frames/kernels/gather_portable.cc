// The gather rows in portable C++: the baseline form, the oracle the others are tested against,
// and the int8 kernels' copies.
#include "runtime/frames/kernels/gather_rows.h"

namespace patchfuse {

void emit_rows_f32_portable(const uint8_t* planes, size_t width, int64_t P, int64_t M, int64_t grid_w,
                            int64_t channels, int64_t tps, int64_t mh, int64_t k, float* out) {
  emit_rows_with<PortableRow>(planes, width, P, M, grid_w, channels, tps, mh, k, out);
}

void emit_rows_bf16_portable(const uint8_t* planes, size_t width, int64_t P, int64_t M, int64_t grid_w,
                             int64_t channels, int64_t tps, int64_t mh, int64_t k, uint16_t* out) {
  emit_rows_with<PortableRow>(planes, width, P, M, grid_w, channels, tps, mh, k, out);
}

void emit_rows_u8_portable(const uint8_t* planes, size_t width, int64_t P, int64_t M, int64_t grid_w,
                           int64_t channels, int64_t tps, int64_t mh, int64_t k, uint8_t* out) {
  emit_rows_with<PortableRow>(planes, width, P, M, grid_w, channels, tps, mh, k, out);
}

}  // namespace patchfuse
