// The pil passes with AVX-512 F, BW and VL (compiled with those flags), for CPUs without VNNI
// (Skylake-SP): resize_avx512.h's blocks over pairs of taps, vpmaddwd + add. Each coefficient k is
// split as 256 * hi + lo (TapTablesView), so two int16 multiply-adds give the exact sums.
#include "runtime/frames/kernels/resize_avx512.h"

namespace patchfuse {
namespace {

// The low halves' accumulators start at Pillow's rounding half (rounding16), which saves an add a sum.
__m512i rounding16() { return _mm512_set1_epi32(1 << (kPilPrecisionBits - 1)); }
__m512i shift8x16(__m512i hi, __m512i lo_rounded) {  // 16 sums (hi * 256 + lo + half) >> 22
  return _mm512_srai_epi32(_mm512_add_epi32(_mm512_slli_epi32(hi, 8), lo_rounded), kPilPrecisionBits);
}

// acc + the int16 pairs' multiply-adds of a and b.
__m512i madd_add(__m512i acc, __m512i a, __m512i b) { return _mm512_add_epi32(acc, _mm512_madd_epi16(a, b)); }

// A block's sums as pairs (horizontal_blocks' Sums). kPairs: t.pairs as a constant, or 0 (with_pairs).
template <int32_t kPairs>
struct PairSums {
  template <size_t kPlanes>
  static void run(const TapTablesView& t, size_t b, const __m512i (&w)[kPlanes], __m512i (&out)[kPlanes]) {
    const size_t pairs = kPairs > 0 ? kPairs : t.pairs;
    const uint8_t* idx = &t.index[b * pairs * 64];
    const int16_t* kh = &t.hi[b * pairs * 32];
    const int16_t* kl = &t.lo[b * pairs * 32];
    __m512i hi[kPlanes], lo[kPlanes];
    for (size_t ch = 0; ch < kPlanes; ++ch) {
      hi[ch] = _mm512_setzero_si512();
      lo[ch] = rounding16();
    }
    for (size_t i = 0; i < pairs; ++i) {
      const __m512i ix = _mm512_loadu_si512(idx + 64 * i), h = _mm512_loadu_si512(kh + 32 * i),
                    l = _mm512_loadu_si512(kl + 32 * i);
      for (size_t ch = 0; ch < kPlanes; ++ch) {
        const __m512i px = LaneWindows::place(w[ch], ix);
        hi[ch] = madd_add(hi[ch], px, h);
        lo[ch] = madd_add(lo[ch], px, l);
      }
    }
    for (size_t ch = 0; ch < kPlanes; ++ch) out[ch] = shift8x16(hi[ch], lo[ch]);
  }
};

// One source row (PilHorizontal) or two (PilHorizontal2).
template <size_t kRows>
void horizontal_pairs_avx512(const uint8_t* planes, size_t stride, const TapTablesView& t, const int32_t* first,
                             const int32_t* k8, size_t c0, size_t c1, uint8_t* const* dst) {
  with_pairs(t.pairs, [&](auto p) {
    horizontal_blocks<PairSums<decltype(p)::value>, LaneWindows, kRows>(planes, stride, t, first, k8, c0, c1, dst);
  });
}

// The vertical pass on 64 values at a time: two rows' 64 bytes interleaved (a, b) byte by byte,
// then with zeros, give per 128-bit lane the int16 pairs of values 0-3, 4-7, 8-11 and 12-15, and
// the in-lane packs at the end put them back in order. (Widening each row to int16 first took a
// cross-lane vpmovzxbw a row and twice the loads.) kPairs: rp.pairs as a constant, or 0 (with_pairs).
template <int32_t kPairs>
void vertical_n(const RowPairs& rp, size_t n, uint8_t* out) {
  const int32_t pairs = kPairs > 0 ? kPairs : rp.pairs;
  const uint8_t* const* r = rp.rows;
  __m512i kh[kPairs > 0 ? kPairs : RowPairs::kMax], kl[kPairs > 0 ? kPairs : RowPairs::kMax];
  for (int32_t i = 0; i < pairs; ++i) {
    kh[i] = _mm512_set1_epi32(rp.hi[i]);
    kl[i] = _mm512_set1_epi32(rp.lo[i]);
  }
  const __m512i zero = _mm512_setzero_si512();
  const auto step = [&](size_t x, __mmask64 mask) {
    __m512i hi[4], lo[4];
    for (size_t q = 0; q < 4; ++q) {
      hi[q] = zero;
      lo[q] = rounding16();
    }
    for (int32_t i = 0; i < pairs; ++i) {
      const __m512i a = _mm512_maskz_loadu_epi8(mask, r[2 * i] + x), b = _mm512_maskz_loadu_epi8(mask, r[2 * i + 1] + x);
      const __m512i ab_lo = _mm512_unpacklo_epi8(a, b), ab_hi = _mm512_unpackhi_epi8(a, b);
      const __m512i px[4] = {_mm512_unpacklo_epi8(ab_lo, zero), _mm512_unpackhi_epi8(ab_lo, zero),
                             _mm512_unpacklo_epi8(ab_hi, zero), _mm512_unpackhi_epi8(ab_hi, zero)};
      for (size_t q = 0; q < 4; ++q) {
        hi[q] = madd_add(hi[q], px[q], kh[i]);
        lo[q] = madd_add(lo[q], px[q], kl[i]);
      }
    }
    // Saturating packs: int32 -> uint16 -> uint8, the clamp to 0..255 (exact, as in the AVX2 pass).
    return _mm512_packus_epi16(_mm512_packus_epi32(shift8x16(hi[0], lo[0]), shift8x16(hi[1], lo[1])),
                               _mm512_packus_epi32(shift8x16(hi[2], lo[2]), shift8x16(hi[3], lo[3])));
  };
  vertical_steps(n, out, step);
}

void vertical_avx512(const uint8_t* const* rows, const int32_t* k, int32_t count, size_t n,
                     uint8_t* out) {
  const RowPairs rp(rows, k, count);
  with_pairs(static_cast<size_t>(rp.pairs), [&](auto p) { vertical_n<decltype(p)::value>(rp, n, out); });
}

}  // namespace

void pil_horizontal_pairs_avx512(const uint8_t* planes, size_t stride, const TapTablesView& t, const int32_t* first,
                                 const int32_t* k8, size_t c0, size_t c1, uint8_t* dst) {
  uint8_t* const rows[1] = {dst};
  horizontal_pairs_avx512<1>(planes, stride, t, first, k8, c0, c1, rows);
}

void pil_horizontal2_pairs_avx512(const uint8_t* planes, size_t stride, const TapTablesView& t, const int32_t* first,
                                  const int32_t* k8, size_t c0, size_t c1, uint8_t* dst0, uint8_t* dst1) {
  uint8_t* const rows[2] = {dst0, dst1};
  horizontal_pairs_avx512<2>(planes, stride, t, first, k8, c0, c1, rows);
}

void pil_vertical_avx512(const uint8_t* const* rows, const int32_t* k, int32_t count, size_t n, uint8_t* out) {
  vertical_avx512(rows, k, count, n, out);
}

}  // namespace patchfuse
