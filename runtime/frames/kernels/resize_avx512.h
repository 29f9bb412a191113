// The pil passes on 512-bit vectors (AVX-512 F, BW and VL): twice the outputs per instruction,
// the same integer sums, so the same bytes. Written once over a multiply-add Madd (MaddAdd, or
// MaddAddVnni where the including file is compiled with VNNI) and, for the horizontal pass, a
// Window that loads a block's source pixels and places each pair's (LaneWindows here; VBMI's
// BlockWindow in resize_avx512_vbmi.cc). resize_avx512{,_vnni,_vbmi}.cc instantiate them with
// their own flags.
#pragma once

#include <immintrin.h>

#include "runtime/frames/kernels/kernels.h"
#include "runtime/frames/kernels/resize_row_pairs.h"

namespace patchfuse {
namespace {

struct MaddAdd {
  static __m512i apply(__m512i acc, __m512i a, __m512i b) { return _mm512_add_epi32(acc, _mm512_madd_epi16(a, b)); }
};
#if defined(__AVX512VNNI__)
struct MaddAddVnni {  // vpdpwssd: madd + add in one instruction
  static __m512i apply(__m512i acc, __m512i a, __m512i b) { return _mm512_dpwssd_epi32(acc, a, b); }
};
#endif

// Four 16-byte loads a channel, one a lane of 4 outputs from its first pixel, placed by vpshufb
// (its 0x80 indices write the int16s' zero high bytes). TapTables' window 4.
struct LaneWindows {
  static __m512i load(const uint8_t* p, const int32_t* first, size_t x) {
    const auto at = [&](size_t i) { return _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + first[x + i])); };
    __m512i v = _mm512_castsi128_si512(at(0));
    v = _mm512_inserti32x4(v, at(4), 1);
    v = _mm512_inserti32x4(v, at(8), 2);
    return _mm512_inserti32x4(v, at(12), 3);
  }
  static __m512i place(__m512i w, __m512i index) { return _mm512_shuffle_epi8(w, index); }
};

// The low halves' accumulators start at Pillow's rounding half (rounding16), which saves an add a sum.
__m512i rounding16() { return _mm512_set1_epi32(1 << (kPilPrecisionBits - 1)); }
__m512i shift8x16(__m512i hi, __m512i lo_rounded) {  // 16 sums (hi * 256 + lo + half) >> 22
  return _mm512_srai_epi32(_mm512_add_epi32(_mm512_slli_epi32(hi, 8), lo_rounded), kPilPrecisionBits);
}

// pil_horizontal_pairs_avx2 with four lanes of 4 outputs: 16 outputs a block (TapTablesView.block 16),
// of kRows source rows at once (row r's planes from planes + 3 * r * stride on, written to dst[r]):
// two rows share each block's table loads and loop, and give the core two independent chains.
// Madd::apply(acc, a, b): acc + the int16 pairs' multiply-adds of a and b. Window::load(p, first,
// x): the pixels of block x's window(s) in channel plane p; Window::place(w, index): a pair's two
// pixels an output as int16s.
// kPairs: t.pairs as a constant, or 0 (with_pairs).
template <class Madd, class Window, int32_t kPairs, size_t kRows>
void horizontal_pairs_n(const uint8_t* planes, size_t stride, const TapTablesView& t, const int32_t* first,
                        const int32_t* k8, size_t c0, size_t c1, uint8_t* const* dst) {
  constexpr size_t kPlanes = 3 * kRows;
  const size_t pairs = kPairs > 0 ? kPairs : t.pairs;
  const __m512i interleave =
      _mm512_broadcast_i32x4(_mm_setr_epi8(0, 4, 8, 1, 5, 9, 2, 6, 10, 3, 7, 11, -1, -1, -1, -1));
  // Each lane's 12 RGB bytes are its first three dwords: these put the 48 bytes together.
  const __m512i compact = _mm512_setr_epi32(0, 1, 2, 4, 5, 6, 8, 9, 10, 12, 13, 14, 0, 0, 0, 0);
  const size_t blocks = (c1 - c0) / 16;
  for (size_t b = 0; b < blocks; ++b) {
    const size_t x = c0 + 16 * b;
    if (!t.ok[b]) {
      for (size_t r = 0; r < kRows; ++r) {
        pil_horizontal_k8_avx2(planes + 3 * r * stride, stride, first, k8, x, x + 16, dst[r] + (x - c0) * 3);
      }
      continue;
    }
    const uint8_t* idx = &t.index[b * pairs * 64];
    const int16_t* kh = &t.hi[b * pairs * 32];
    const int16_t* kl = &t.lo[b * pairs * 32];
    __m512i w[kPlanes], hi[kPlanes], lo[kPlanes];
    for (size_t ch = 0; ch < kPlanes; ++ch) {
      w[ch] = Window::load(planes + ch * stride, first, x);
      hi[ch] = _mm512_setzero_si512();
      lo[ch] = rounding16();
    }
    for (size_t i = 0; i < pairs; ++i) {
      const __m512i ix = _mm512_loadu_si512(idx + 64 * i), h = _mm512_loadu_si512(kh + 32 * i),
                    l = _mm512_loadu_si512(kl + 32 * i);
      for (size_t ch = 0; ch < kPlanes; ++ch) {
        const __m512i px = Window::place(w[ch], ix);
        hi[ch] = Madd::apply(hi[ch], px, h);
        lo[ch] = Madd::apply(lo[ch], px, l);
      }
    }
    for (size_t r = 0; r < kRows; ++r) {
      const size_t c = 3 * r;
      const __m512i bytes = _mm512_shuffle_epi8(
          _mm512_packus_epi16(_mm512_packus_epi32(shift8x16(hi[c], lo[c]), shift8x16(hi[c + 1], lo[c + 1])),
                              _mm512_packus_epi32(shift8x16(hi[c + 2], lo[c + 2]), _mm512_setzero_si512())),
          interleave);
      // 48 bytes: a whole 64-byte store where the next block overwrites the rest (masked stores
      // cost more, notably on AMD), a masked one for the last.
      const __m512i rgb = _mm512_permutexvar_epi32(compact, bytes);
      uint8_t* d = dst[r] + (x - c0) * 3;
      if (b + 1 < blocks) {
        _mm512_storeu_si512(d, rgb);
      } else {
        _mm512_mask_storeu_epi32(d, 0x0FFF, rgb);
      }
    }
  }
  for (size_t r = 0; r < kRows; ++r) {
    pil_horizontal_k8_avx2(planes + 3 * r * stride, stride, first, k8, c0 + 16 * blocks, c1, dst[r] + 16 * blocks * 3);
  }
}

// One source row (PilHorizontal) or two (PilHorizontal2).
template <class Madd, class Window, size_t kRows>
void horizontal_pairs_avx512(const uint8_t* planes, size_t stride, const TapTablesView& t, const int32_t* first,
                             const int32_t* k8, size_t c0, size_t c1, uint8_t* const* dst) {
  with_pairs(t.pairs, [&](auto p) {
    horizontal_pairs_n<Madd, Window, decltype(p)::value, kRows>(planes, stride, t, first, k8, c0, c1, dst);
  });
}

// The vertical pass on 64 values at a time: two rows' 64 bytes interleaved (a, b) byte by byte,
// then with zeros, give per 128-bit lane the int16 pairs of values 0-3, 4-7, 8-11 and 12-15, and
// the in-lane packs at the end put them back in order. (Widening each row to int16 first took a
// cross-lane vpmovzxbw a row and twice the loads.) The last, shorter step masks its loads and
// store. kPairs: rp.pairs as a constant, or 0 (with_pairs).
template <class Madd, int32_t kPairs>
void vertical_n(const RowPairs& rp, size_t n, uint8_t* out) {
  const int32_t pairs = kPairs > 0 ? kPairs : rp.pairs;
  const uint8_t* const* r = rp.rows;
  __m512i kh[RowPairs::kMax], kl[RowPairs::kMax];
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
        hi[q] = Madd::apply(hi[q], px[q], kh[i]);
        lo[q] = Madd::apply(lo[q], px[q], kl[i]);
      }
    }
    // Saturating packs: int32 -> uint16 -> uint8, the clamp to 0..255 (exact, as in the AVX2 pass).
    return _mm512_packus_epi16(_mm512_packus_epi32(shift8x16(hi[0], lo[0]), shift8x16(hi[1], lo[1])),
                               _mm512_packus_epi32(shift8x16(hi[2], lo[2]), shift8x16(hi[3], lo[3])));
  };
  size_t x = 0;
  for (; x + 64 <= n; x += 64) _mm512_storeu_si512(out + x, step(x, ~__mmask64{0}));
  if (x < n) {
    const __mmask64 tail = (__mmask64{1} << (n - x)) - 1;
    _mm512_mask_storeu_epi8(out + x, tail, step(x, tail));
  }
}

template <class Madd>
void vertical_avx512(const uint8_t* const* rows, const int32_t* k, int32_t count, size_t n,
                     uint8_t* out) {
  const RowPairs rp(rows, k, count);
  with_pairs(static_cast<size_t>(rp.pairs), [&](auto p) { vertical_n<Madd, decltype(p)::value>(rp, n, out); });
}

}  // namespace
}  // namespace patchfuse
