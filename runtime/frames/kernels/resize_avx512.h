// What the pil passes on 512-bit vectors (AVX-512 F, BW and VL) share: twice the outputs per
// instruction of AVX2's, the same integer sums, so the same bytes. Two ways to the sums
// (kernels.h's TapTablesView):
//  - pairs over vpmaddwd + add: plain AVX-512 (resize_avx512.cc);
//  - with VNNI, quads over vpdpbusd (here): 4 taps' unsigned pixels times a coefficient's signed
//    byte in one instruction, three digits a coefficient. Where pairs take 2 placements (vpermb,
//    vpshufb) and 4 multiply-adds for 4 taps, quads take 1 and 3, and the pixels need no widening
//    to int16: on a Xeon (Sapphire Rapids core) the 720p resize took about 0.9x the time of pairs
//    over VNNI's vpdpwssd (docs/performance.md).
// The horizontal pass takes a Window that loads a block's source pixels and places each pair's or
// quad's (LaneWindows here; VBMI's BlockWindow in resize_avx512_vbmi.cc).
// resize_avx512{,_vnni,_vbmi}.cc instantiate them with their own flags.
#pragma once

#include <immintrin.h>

#include "runtime/frames/kernels/kernels.h"
#include "runtime/frames/kernels/resize_row_pairs.h"

namespace patchfuse {
namespace {

// Four 16-byte loads a channel, one a lane of 4 outputs from its first pixel, placed by vpshufb
// (its 0x80 indices write the pairs' int16 zero high bytes, and zeros where quads have no tap).
// TapTables' window 4.
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

// 16 outputs' channel sums (rounded and shifted, as int32) as 48 RGB bytes at d, clamped by the
// saturating packs: a whole 64-byte store where a later block overwrites the rest (last = 0;
// masked stores cost more, notably on AMD), else a masked store of the first `last` outputs.
void store_rgb16(__m512i r, __m512i g, __m512i b, uint8_t* d, size_t last) {
  const __m512i interleave =
      _mm512_broadcast_i32x4(_mm_setr_epi8(0, 4, 8, 1, 5, 9, 2, 6, 10, 3, 7, 11, -1, -1, -1, -1));
  // Each lane's 12 RGB bytes are its first three dwords: these put the 48 bytes together.
  const __m512i compact = _mm512_setr_epi32(0, 1, 2, 4, 5, 6, 8, 9, 10, 12, 13, 14, 0, 0, 0, 0);
  const __m512i bytes = _mm512_shuffle_epi8(
      _mm512_packus_epi16(_mm512_packus_epi32(r, g), _mm512_packus_epi32(b, _mm512_setzero_si512())), interleave);
  const __m512i rgb = _mm512_permutexvar_epi32(compact, bytes);
  if (last == 0) {
    _mm512_storeu_si512(d, rgb);
  } else {
    _mm512_mask_storeu_epi8(d, (__mmask64{1} << (3 * last)) - 1, rgb);
  }
}

// pil_horizontal_pairs_avx2 with four lanes of 4 outputs: 16 outputs a block (TapTablesView.block 16),
// of kRows source rows at once (row r's planes from planes + 3 * r * stride on, written to dst[r]):
// two rows share each block's table loads and loop, and give the core two independent chains.
// Window::load(p, first, x): the pixels of block x's window(s) in channel plane p; Sums::run(t,
// b, w, v): per plane, block b's 16 rounded, shifted sums (Pillow's (sum + 2^21) >> 22 before the
// clamp) from those windows w (QuadSums here, resize_avx512.cc's PairSums).
template <class Sums, class Window, size_t kRows>
void horizontal_blocks(const uint8_t* planes, size_t stride, const TapTablesView& t, const int32_t* first,
                       const int32_t* k8, size_t c0, size_t c1, uint8_t* const* dst) {
  constexpr size_t kPlanes = 3 * kRows;
  const size_t blocks = (c1 - c0) / 16;
  for (size_t b = 0; b < blocks; ++b) {
    const size_t x = c0 + 16 * b;
    if (!t.ok[b]) {
      for (size_t r = 0; r < kRows; ++r) {
        pil_horizontal_k8_avx2(planes + 3 * r * stride, stride, first, k8, x, x + 16, dst[r] + (x - c0) * 3);
      }
      continue;
    }
    __m512i w[kPlanes], v[kPlanes];
    for (size_t ch = 0; ch < kPlanes; ++ch) w[ch] = Window::load(planes + ch * stride, first, x);
    Sums::run(t, b, w, v);
    for (size_t r = 0; r < kRows; ++r) {
      const size_t c = 3 * r;
      store_rgb16(v[c], v[c + 1], v[c + 2], dst[r] + (x - c0) * 3, b + 1 < blocks ? 0 : 16);
    }
  }
  for (size_t r = 0; r < kRows; ++r) {
    pil_horizontal_k8_avx2(planes + 3 * r * stride, stride, first, k8, c0 + 16 * blocks, c1, dst[r] + 16 * blocks * 3);
  }
}

// The vertical passes' 64 values at a time: step(x, mask) gives values x.. of the row, its loads
// masked; the last, shorter step masks its loads and store.
template <class Step>
void vertical_steps(size_t n, uint8_t* out, Step step) {
  size_t x = 0;
  for (; x + 64 <= n; x += 64) _mm512_storeu_si512(out + x, step(x, ~__mmask64{0}));
  if (x < n) {
    const __mmask64 tail = (__mmask64{1} << (n - x)) - 1;
    _mm512_mask_storeu_epi8(out + x, tail, step(x, tail));
  }
}

#if defined(__AVX512VNNI__)
// Quads' sums digit by digit, most significant first: acc = ((S2 * 256 + S1) * 256 + S0) over the
// digits' sums S2, S1, S0 is the exact sum (int32 wraps on the way, but the sum fits), and Pillow's
// rounding half enters as 2^5, which the two shifts by 8 make 2^21. Three shifts a vector, as
// pairs take. acc starts at the half.
__m512i digits_half() { return _mm512_set1_epi32(1 << (kPilPrecisionBits - 1 - 16)); }
__m512i after_digit(__m512i acc, int digit) {
  return digit > 0 ? _mm512_slli_epi32(acc, 8) : _mm512_srai_epi32(acc, kPilPrecisionBits);
}

// A block's sums as quads (horizontal_blocks' Sums): one placement a group of 4 taps, three vpdpbusd.
// kGroups: t.groups (1 or 2: kPilKernelTaps is 8). kRgb: the windows are interleaved rows (VBMI's
// horizontal_rgb), each w[ch] its row's whole window and the tables indexing a pixel's first byte,
// so plane ch takes byte ch % 3 of each pixel: the index plus ch % 3.
template <class Window, size_t kGroups, bool kRgb = false>
struct QuadSums {
  template <size_t kPlanes>
  static void run(const TapTablesView& t, size_t b, const __m512i (&w)[kPlanes], __m512i (&out)[kPlanes]) {
    __m512i px[kGroups][kPlanes];
    for (size_t g = 0; g < kGroups; ++g) {
      const __m512i ix = _mm512_loadu_si512(&t.quad_index[(b * kGroups + g) * 64]);
      for (size_t ch = 0; ch < kPlanes; ++ch) {
        const auto byte = static_cast<char>(ch % 3);
        px[g][ch] = Window::place(w[ch], kRgb && byte > 0 ? _mm512_add_epi8(ix, _mm512_set1_epi8(byte)) : ix);
      }
    }
    for (size_t ch = 0; ch < kPlanes; ++ch) out[ch] = digits_half();
    for (int digit = 2; digit >= 0; --digit) {
      for (size_t g = 0; g < kGroups; ++g) {
        const __m512i d = _mm512_loadu_si512(&t.digits[(3 * (b * kGroups + g) + static_cast<size_t>(digit)) * 64]);
        for (size_t ch = 0; ch < kPlanes; ++ch) out[ch] = _mm512_dpbusd_epi32(out[ch], px[g][ch], d);
      }
      for (size_t ch = 0; ch < kPlanes; ++ch) out[ch] = after_digit(out[ch], digit);
    }
  }
};
#endif

#if defined(__AVX512VNNI__)
template <class Window, size_t kRows>
void horizontal_quads_avx512(const uint8_t* planes, size_t stride, const TapTablesView& t, const int32_t* first,
                             const int32_t* k8, size_t c0, size_t c1, uint8_t* const* dst) {
  static_assert(kPilKernelTaps == 8, "tables exist for at most 8 taps: 1 or 2 groups");
  if (t.groups == 1) return horizontal_blocks<QuadSums<Window, 1>, Window, kRows>(planes, stride, t, first, k8, c0, c1, dst);
  horizontal_blocks<QuadSums<Window, 2>, Window, kRows>(planes, stride, t, first, k8, c0, c1, dst);
}

// store_rgb16's `last` for block b of n outputs whose tables pad the last block (the wide passes',
// VBMI's RGB pass's): a whole store where at least 16 bytes (6 outputs) follow, else the block's
// real outputs.
size_t padded_block_last(size_t n, size_t b) {
  const size_t left = n - 16 * b;
  return left >= 16 + 6 ? 0 : left < 16 ? left : 16;
}

// The wide pass (WideTablesView), 16 outputs a block: per channel four vectors, group q's lane L
// holding output 4L + q's window, 16 taps a chunk (each lane its own 16-byte load), and its sums
// digit by digit as QuadSums does, Pillow's half in one dword a lane so that each output gets it
// once. The four dwords of a lane are then added across the four vectors with two rounds of
// unpacks, which leaves lane L with outputs 4L .. 4L + 3: the block in order. kChunks: t.chunks
// as a constant, or 0 (with_pairs).
template <int32_t kChunks>
void horizontal_wide_n(const uint8_t* planes, size_t stride, const WideTablesView& t, size_t n, uint8_t* dst) {
  const size_t chunks = kChunks > 0 ? kChunks : t.chunks;
  const __m512i half = _mm512_maskz_mov_epi32(0x1111, digits_half());
  const size_t blocks = (n + 15) / 16;
  for (size_t b = 0; b < blocks; ++b) {
    const int32_t* first = &t.first[16 * b];
    __m512i acc[3][4];  // per channel and group
    for (size_t q = 0; q < 4; ++q) {
      __m512i w[3][kChunks > 0 ? kChunks : kPilMaxTaps / 16];
      for (size_t ch = 0; ch < 3; ++ch) {
        const uint8_t* p = planes + ch * stride;
        for (size_t g = 0; g < chunks; ++g) {
          const auto at = [&](size_t lane) {
            return _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + first[4 * lane + q] + 16 * g));
          };
          w[ch][g] = _mm512_inserti32x4(
              _mm512_inserti32x4(_mm512_inserti32x4(_mm512_castsi128_si512(at(0)), at(1), 1), at(2), 2), at(3), 3);
        }
        acc[ch][q] = half;
      }
      const int8_t* d = &t.digits[(4 * b + q) * chunks * 3 * 64];
      for (int digit = 2; digit >= 0; --digit) {
        for (size_t g = 0; g < chunks; ++g) {  // one load of the digits serves the three channels
          const __m512i dg = _mm512_loadu_si512(d + (3 * g + static_cast<size_t>(digit)) * 64);
          for (size_t ch = 0; ch < 3; ++ch) acc[ch][q] = _mm512_dpbusd_epi32(acc[ch][q], w[ch][g], dg);
        }
        for (size_t ch = 0; ch < 3; ++ch) {
          if (digit > 0) acc[ch][q] = _mm512_slli_epi32(acc[ch][q], 8);
        }
      }
    }
    __m512i v[3];
    for (size_t ch = 0; ch < 3; ++ch) {
      const __m512i* a = acc[ch];
      const __m512i s01 = _mm512_add_epi32(_mm512_unpacklo_epi32(a[0], a[1]), _mm512_unpackhi_epi32(a[0], a[1]));
      const __m512i s23 = _mm512_add_epi32(_mm512_unpacklo_epi32(a[2], a[3]), _mm512_unpackhi_epi32(a[2], a[3]));
      v[ch] = _mm512_srai_epi32(_mm512_add_epi32(_mm512_unpacklo_epi64(s01, s23), _mm512_unpackhi_epi64(s01, s23)),
                                kPilPrecisionBits);
    }
    store_rgb16(v[0], v[1], v[2], dst + 48 * b, padded_block_last(n, b));
  }
}

void horizontal_wide_avx512(const uint8_t* planes, size_t stride, const WideTablesView& t, size_t n, uint8_t* dst) {
  with_pairs(t.chunks, [&](auto c) { horizontal_wide_n<decltype(c)::value>(planes, stride, t, n, dst); });
}
#endif
#if defined(__AVX512VNNI__)
// The vertical kernel's quads of taps: each quad's four rows (the last quad repeats the last row
// with k = 0) and its coefficients' digits (pil_digits), the four rows' bytes in one dword a digit.
// fits: every coefficient's digits fit (else the row runs the portable pass).
struct RowQuads {
  static constexpr int32_t kMax = kPilMaxTaps / 4;
  int32_t quads;
  bool fits = true;
  const uint8_t* rows[4 * kMax];
  int32_t digits[kMax][3];
  RowQuads(const uint8_t* const* r, const int32_t* k, int32_t count) : quads((count + 3) / 4) {
    for (int32_t i = 0; i < 4 * quads; ++i) rows[i] = r[(i < count ? i : count - 1)];
    for (int32_t q = 0; q < quads; ++q) {
      uint32_t packed[3] = {0, 0, 0};
      for (int32_t i = 0; i < 4; ++i) {
        int8_t d[3];
        fits &= pil_digits(4 * q + i < count ? k[4 * q + i] : 0, d);
        for (int j = 0; j < 3; ++j) packed[j] |= uint32_t{static_cast<uint8_t>(d[j])} << (8 * i);
      }
      for (int j = 0; j < 3; ++j) digits[q][j] = static_cast<int32_t>(packed[j]);
    }
  }
};

// vertical_n over quads: four rows' 64 bytes interleaved byte by byte (a, b and c, e), then the
// two pairs int16 by int16, give per 128-bit lane the byte quads of values 0-3, 4-7, 8-11 and
// 12-15 (no widening), which the in-lane packs put back in order. kQuads: rq.quads as a constant,
// or 0.
template <int32_t kQuads>
void vertical_quads_n(const RowQuads& rq, size_t n, uint8_t* out) {
  const int32_t quads = kQuads > 0 ? kQuads : rq.quads;
  const uint8_t* const* r = rq.rows;
  __m512i digit[kQuads > 0 ? kQuads : RowQuads::kMax][3];
  for (int32_t i = 0; i < quads; ++i) {
    for (int j = 0; j < 3; ++j) digit[i][j] = _mm512_set1_epi32(rq.digits[i][j]);
  }
  const auto step = [&](size_t x, __mmask64 mask) {
    __m512i px[kQuads > 0 ? kQuads : RowQuads::kMax][4];
    for (int32_t i = 0; i < quads; ++i) {
      const auto row = [&](int32_t j) { return _mm512_maskz_loadu_epi8(mask, r[4 * i + j] + x); };
      const __m512i a = row(0), b = row(1), c = row(2), e = row(3);
      const __m512i ab_lo = _mm512_unpacklo_epi8(a, b), ab_hi = _mm512_unpackhi_epi8(a, b);
      const __m512i ce_lo = _mm512_unpacklo_epi8(c, e), ce_hi = _mm512_unpackhi_epi8(c, e);
      px[i][0] = _mm512_unpacklo_epi16(ab_lo, ce_lo);
      px[i][1] = _mm512_unpackhi_epi16(ab_lo, ce_lo);
      px[i][2] = _mm512_unpacklo_epi16(ab_hi, ce_hi);
      px[i][3] = _mm512_unpackhi_epi16(ab_hi, ce_hi);
    }
    __m512i acc[4];
    for (size_t q = 0; q < 4; ++q) acc[q] = digits_half();
    for (int j = 2; j >= 0; --j) {
      for (size_t q = 0; q < 4; ++q) {
        for (int32_t i = 0; i < quads; ++i) acc[q] = _mm512_dpbusd_epi32(acc[q], px[i][q], digit[i][j]);
        acc[q] = after_digit(acc[q], j);
      }
    }
    return _mm512_packus_epi16(_mm512_packus_epi32(acc[0], acc[1]), _mm512_packus_epi32(acc[2], acc[3]));
  };
  vertical_steps(n, out, step);
}

// (Unused in resize_avx512_vbmi.cc, whose level runs the VNNI level's.)
[[maybe_unused]] void vertical_quads_avx512(const uint8_t* const* rows, const int32_t* k, int32_t count, size_t n, uint8_t* out) {
  const RowQuads rq(rows, k, count);
  if (!rq.fits) return pil_vertical_from_portable(rows, k, count, 0, n, out);
  with_pairs(static_cast<size_t>(rq.quads), [&](auto q) { vertical_quads_n<decltype(q)::value>(rq, n, out); });
}
#endif

}  // namespace
}  // namespace patchfuse
