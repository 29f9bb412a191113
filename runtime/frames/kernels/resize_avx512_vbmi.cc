// The pil horizontal pass with AVX-512, VNNI and AVX512-VBMI (compiled with those flags):
// resize_avx512.h's quads over vpdpbusd, with one 64-byte load a channel for a block's 16
// outputs, placed by vpermb, where the other forms load four 16-byte lanes, insert three and
// place them by vpshufb: 9 fewer loads and 9 fewer inserts a block, the same sums and bytes. The
// vertical pass has no use for VBMI: its level runs the VNNI one (dispatch.cc).
#include "runtime/frames/kernels/resize_avx512.h"

namespace patchfuse {
namespace {

// TapTables' window 16: every index counts from the block's first pixel. The load may run up to
// 63 bytes past it, into the planes' kPlaneSlack. vpermb reads any of the 64 bytes but cannot
// write a zero: a quad's index past an output's taps (0x80) places pixel 0, whose digits are 0.
struct BlockWindow {
  static __m512i load(const uint8_t* p, const int32_t* first, size_t x) { return _mm512_loadu_si512(p + first[x]); }
  static __m512i place(__m512i w, __m512i index) { return _mm512_permutexvar_epi8(index, w); }
};

}  // namespace

void pil_horizontal_quads_avx512_vbmi(const uint8_t* planes, size_t stride, const TapTablesView& t,
                                      const int32_t* first, const int32_t* k8, size_t c0, size_t c1, uint8_t* dst) {
  uint8_t* const rows[1] = {dst};
  horizontal_quads_avx512<BlockWindow, 1>(planes, stride, t, first, k8, c0, c1, rows);
}

void pil_horizontal2_quads_avx512_vbmi(const uint8_t* planes, size_t stride, const TapTablesView& t, const int32_t* first,
                                       const int32_t* k8, size_t c0, size_t c1, uint8_t* dst0, uint8_t* dst1) {
  uint8_t* const rows[2] = {dst0, dst1};
  horizontal_quads_avx512<BlockWindow, 2>(planes, stride, t, first, k8, c0, c1, rows);
}

}  // namespace patchfuse
