// The pil horizontal passes with AVX-512, VNNI and AVX512-VBMI (compiled with those flags):
// resize_avx512.h's quads over vpdpbusd, with one 64-byte load a channel for a block's 16
// outputs, placed by vpermb, where the other forms load four 16-byte lanes, insert three and
// place them by vpshufb: 9 fewer loads and 9 fewer inserts a block, the same sums and bytes. The
// wide pass, likewise, places each group of 4 taps from two 64-byte windows (vpermt2b) where the
// blocks fit them. The vertical pass has no use for VBMI: its level runs the VNNI one (dispatch.cc).
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

// The horizontal pass straight from interleaved RGB or BGR rows (PilHorizontalRgb): one 64-byte load
// a row for a block's 16 outputs, where planes take three, and no plane split before it (a fifth
// of the 720p resize on a Sapphire Rapids core, docs/performance.md). Its tables count 3 bytes a
// pixel, so a block fits where its window spans at most 21 pixels (upscales, and downscales to
// 1.06x bicubic or 1.2x bilinear: 720p or 1080p to Qwen2-VL's sizes, not to SigLIP's); the
// Resizer takes this pass only where every block fits. The sums come in the row's byte order and
// are stored as RGB. The load is masked to the row's bytes: the caller's frame has no slack, and
// the masked-off bytes have no taps. The frame comes from memory, not from planes just split into
// L1, and the hardware's prefetch does not run far enough ahead of a loop this dense: each call
// prefetches the rows that follow its own (the Resizer goes down the frame two rows a call),
// which took the session's 720p conversion + resize from 1.2x the planes' time to 0.8x (Zen 5).
// kRed: the byte of a pixel that is red, a constant so that the sums stay in registers.
template <int32_t kGroups, int32_t kRows, int32_t kRed>
void horizontal_rgb(const uint8_t* src, size_t stride, size_t width, const TapTablesView& t, const int32_t* first,
                    const int32_t* k8, size_t c0, size_t c1, uint8_t* const* dst) {
  constexpr auto red = static_cast<size_t>(kRed);
  const size_t n = c1 - c0, blocks = (n + 15) / 16, bytes = 3 * width;
  // Row r, and the row kRows on (as an integer: it may lie past the frame, where a prefetch does
  // nothing).
  const auto row = [&](size_t r) { return src + r * stride; };
  const auto next = [&](size_t r) { return reinterpret_cast<uintptr_t>(src) + (r + kRows) * stride; };
  for (size_t b = 0; b < blocks; ++b) {
    const size_t x = c0 + 16 * b;
    if (!t.ok[b]) {
      const size_t end = x + 16 < c1 ? x + 16 : c1;
      for (size_t r = 0; r < kRows; ++r) {
        pil_horizontal_rgb_portable(row(r), width, red, first, k8, kPilKernelTaps, x, end, dst[r] + (x - c0) * 3);
      }
      continue;
    }
    const size_t at = 3 * static_cast<size_t>(first[x]);
    const __mmask64 mask = at + 64 <= bytes ? ~__mmask64{0} : (__mmask64{1} << (bytes - at)) - 1;
    __m512i w[3 * kRows], v[3 * kRows];
    for (size_t r = 0; r < kRows; ++r) {
      _mm_prefetch(reinterpret_cast<const char*>(next(r) + at), _MM_HINT_T0);
      w[3 * r] = w[3 * r + 1] = w[3 * r + 2] = _mm512_maskz_loadu_epi8(mask, row(r) + at);
    }
    QuadSums<BlockWindow, kGroups, true>::run(t, b, w, v);
    for (size_t r = 0; r < kRows; ++r) {
      const __m512i* s = &v[3 * r];
      store_rgb16(s[red], s[1], s[2 - red], dst[r] + (x - c0) * 3, padded_block_last(n, b));
    }
  }
}

// The wide pass over its blocks form (WideTablesView): 16 outputs a vector, one a dword lane. Each
// channel's windows (64 bytes from their first outputs' first pixels) are loaded once a block;
// per group of 4 taps one vpermt2b places each output's 4 pixels from two windows (with four, a
// second one and a blend place outputs 8-15's), the indices moving on by 4 a group, and three
// vpdpbusd add them times the digits into one sum a digit, S2, S1 and S0, which ((S2 * 256 + S1)
// * 256 + S0) makes the exact sum (QuadSums' order, wrapping alike). Against the quads form's four
// 16-byte loads and three inserts a vector and its adds across lanes, that is one or two vpermt2b
// a vector, and taps in groups of 4 rather than chunks of 16 (20 taps: 5 groups, not 2 chunks of
// 16). kWindows: t.windows. kGroups: t.groups as a constant (3 to 6: windows of 9 to 24 taps,
// camera frames to 384 or 224 at up to 6x), or 0; GCC 12 copies every sum twice a group where
// the count is not a constant.
template <int32_t kWindows, int32_t kGroups>
void horizontal_wide_blocks(const uint8_t* planes, size_t stride, const WideTablesView& t, size_t n, uint8_t* dst) {
  const size_t groups = kGroups > 0 ? kGroups : t.groups;
  const __m512i half = _mm512_set1_epi32(1 << (kPilPrecisionBits - 1)), four = _mm512_set1_epi8(4);
  const __mmask64 upper = ~__mmask64{0} << 32;  // outputs 8-15's bytes
  const size_t blocks = (n + 15) / 16;
  for (size_t b = 0; b < blocks; ++b) {
    __m512i w[3][kWindows];
    for (size_t ch = 0; ch < 3; ++ch) {
      for (size_t k = 0; k < kWindows; ++k) {
        w[ch][k] = _mm512_loadu_si512(planes + ch * stride + t.first[16 * b + k * 16 / kWindows]);
      }
    }
    __m512i index = _mm512_loadu_si512(&t.index[64 * b]);
    const int8_t* d = &t.digits[b * groups * 3 * 64];
    __m512i sum[3][3];  // per channel and digit
    for (auto& ch : sum) {
      for (auto& s : ch) s = _mm512_setzero_si512();
    }
    for (size_t g = 0; g < groups; ++g, d += 3 * 64) {
      const __m512i digit[3] = {_mm512_loadu_si512(d), _mm512_loadu_si512(d + 64), _mm512_loadu_si512(d + 128)};
      for (size_t ch = 0; ch < 3; ++ch) {
        __m512i px = _mm512_permutex2var_epi8(w[ch][0], index, w[ch][1]);
        if constexpr (kWindows == 4) {
          px = _mm512_mask_blend_epi8(upper, px, _mm512_permutex2var_epi8(w[ch][2], index, w[ch][3]));
        }
        for (size_t j = 0; j < 3; ++j) sum[ch][j] = _mm512_dpbusd_epi32(sum[ch][j], px, digit[j]);
      }
      index = _mm512_add_epi8(index, four);
    }
    __m512i v[3];
    for (size_t ch = 0; ch < 3; ++ch) {
      const __m512i s21 = _mm512_add_epi32(_mm512_slli_epi32(sum[ch][2], 8), sum[ch][1]);
      const __m512i s = _mm512_add_epi32(_mm512_add_epi32(_mm512_slli_epi32(s21, 8), sum[ch][0]), half);
      v[ch] = _mm512_srai_epi32(s, kPilPrecisionBits);
    }
    store_rgb16(v[0], v[1], v[2], dst + 48 * b, padded_block_last(n, b));
  }
}

template <int32_t kGroups>
void horizontal_wide_blocks_g(const uint8_t* planes, size_t stride, const WideTablesView& t, size_t n, uint8_t* dst) {
  if (t.windows == 4) return horizontal_wide_blocks<4, kGroups>(planes, stride, t, n, dst);
  horizontal_wide_blocks<2, kGroups>(planes, stride, t, n, dst);
}

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

void pil_horizontal_rgb_quads_avx512_vbmi(const uint8_t* src, size_t stride, size_t rows, size_t width, size_t red,
                                          const TapTablesView& t, const int32_t* first, const int32_t* k8, size_t c0,
                                          size_t c1, uint8_t* const* dst) {
  static_assert(kPilKernelTaps == 8, "tables exist for at most 8 taps: 1 or 2 groups");
  // Each count a constant (resize_row_pairs.h's Pairs as a tag): 2 x 2 x 2 loops.
  const auto run = [&](auto groups, auto rows_, auto red_) {
    horizontal_rgb<decltype(groups)::value, decltype(rows_)::value, decltype(red_)::value>(src, stride, width, t, first,
                                                                                          k8, c0, c1, dst);
  };
  const auto with_red = [&](auto groups, auto rows_) {
    red == 2 ? run(groups, rows_, Pairs<2>{}) : run(groups, rows_, Pairs<0>{});
  };
  const auto with_rows = [&](auto groups) { rows == 2 ? with_red(groups, Pairs<2>{}) : with_red(groups, Pairs<1>{}); };
  t.groups == 2 ? with_rows(Pairs<2>{}) : with_rows(Pairs<1>{});
}

void pil_horizontal_wide_avx512_vbmi(const uint8_t* planes, size_t stride, const WideTablesView& t, size_t n,
                                     uint8_t* dst) {
  switch (t.groups) {
    case 0: return horizontal_wide_avx512(planes, stride, t, n, dst);  // the quads form
    case 3: return horizontal_wide_blocks_g<3>(planes, stride, t, n, dst);
    case 4: return horizontal_wide_blocks_g<4>(planes, stride, t, n, dst);
    case 5: return horizontal_wide_blocks_g<5>(planes, stride, t, n, dst);
    case 6: return horizontal_wide_blocks_g<6>(planes, stride, t, n, dst);
    default: return horizontal_wide_blocks_g<0>(planes, stride, t, n, dst);
  }
}

}  // namespace patchfuse
