// The pil passes with AVX-512 and AVX512-VNNI (compiled with those flags): resize_avx512.h's
// quads over vpdpbusd, the horizontal pass placing its pixels by vpshufb.
#include "runtime/frames/kernels/resize_avx512.h"

namespace patchfuse {

void pil_horizontal_quads_avx512_vnni(const uint8_t* planes, size_t stride, const TapTablesView& t,
                                      const int32_t* first, const int32_t* k8, size_t c0, size_t c1, uint8_t* dst) {
  uint8_t* const rows[1] = {dst};
  horizontal_quads_avx512<LaneWindows, 1>(planes, stride, t, first, k8, c0, c1, rows);
}

void pil_horizontal2_quads_avx512_vnni(const uint8_t* planes, size_t stride, const TapTablesView& t, const int32_t* first,
                                       const int32_t* k8, size_t c0, size_t c1, uint8_t* dst0, uint8_t* dst1) {
  uint8_t* const rows[2] = {dst0, dst1};
  horizontal_quads_avx512<LaneWindows, 2>(planes, stride, t, first, k8, c0, c1, rows);
}

void pil_horizontal_wide_avx512_vnni(const uint8_t* planes, size_t stride, const WideTablesView& t, size_t n,
                                     uint8_t* dst) {
  horizontal_wide_avx512(planes, stride, t, n, dst);
}

void pil_vertical_avx512_vnni(const uint8_t* const* rows, const int32_t* k, int32_t count, size_t n, uint8_t* out) {
  vertical_quads_avx512(rows, k, count, n, out);
}

}  // namespace patchfuse
