// The pil passes with AVX2 (compiled with -mavx2). Integer sums in another order are the same
// sums, so the bytes are Pillow's. Horizontal: each output channel is a dot product of 8
// consecutive bytes of that channel's plane with 8 coefficients (zero past the output's tap count).
#include <immintrin.h>

#include <cstring>

#include "runtime/frames/kernels/kernels.h"
#include "runtime/frames/kernels/resize_row_pairs.h"

namespace patchfuse {
namespace {

__m128i clip8x4(__m128i sum) {
  const __m128i v = _mm_srai_epi32(_mm_add_epi32(sum, _mm_set1_epi32(1 << (kPilPrecisionBits - 1))), kPilPrecisionBits);
  return _mm_min_epi32(_mm_max_epi32(v, _mm_setzero_si128()), _mm_set1_epi32(255));
}

__m256i dot8(const uint8_t* p, const int32_t* k) {
  const __m256i v = _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p)));
  return _mm256_mullo_epi32(v, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(k)));
}

// Rounds and shifts 8 sums given as 256 * hi + lo (see TapTablesView). The clamp to 0..255 is the
// saturating packs that follow (int32 -> uint16 -> uint8): exact, as an int32 shifted right by 22
// is within -512..511, so no value wraps on the way.
// The low halves' accumulators start at the rounding half (rounding8), which saves an add here.
__m256i rounding8() { return _mm256_set1_epi32(1 << (kPilPrecisionBits - 1)); }
__m256i shift8x8(__m256i hi, __m256i lo_rounded) {
  return _mm256_srai_epi32(_mm256_add_epi32(_mm256_slli_epi32(hi, 8), lo_rounded), kPilPrecisionBits);
}

}  // namespace

// Four dot products sharing one reduction.
// planes: R, G, B planes of the source row, `stride` bytes apart, each with kPilKernelTaps bytes of slack
// after its last pixel. k8: kPilKernelTaps coefficients per output. Writes outputs [c0, c1) as RGB.
void pil_horizontal_k8_avx2(const uint8_t* planes, size_t stride, const int32_t* first, const int32_t* k8,
                            size_t c0, size_t c1, uint8_t* dst) {
  size_t c = c0;
  // R0..R3 G0..G3 B0..B3 (bytes 0..11 after packing) -> R0 G0 B0 R1 G1 B1 ...
  const __m128i interleave = _mm_setr_epi8(0, 4, 8, 1, 5, 9, 2, 6, 10, 3, 7, 11, -1, -1, -1, -1);
  for (; c + 4 <= c1; c += 4) {
    const int32_t* k = k8 + c * kPilKernelTaps;
    __m128i rgb[3];
    for (size_t ch = 0; ch < 3; ++ch) {
      const uint8_t* p = planes + ch * stride;
      const __m256i h = _mm256_hadd_epi32(_mm256_hadd_epi32(dot8(p + first[c], k), dot8(p + first[c + 1], k + 8)),
                                          _mm256_hadd_epi32(dot8(p + first[c + 2], k + 16), dot8(p + first[c + 3], k + 24)));
      rgb[ch] = clip8x4(_mm_add_epi32(_mm256_castsi256_si128(h), _mm256_extracti128_si256(h, 1)));
    }
    const __m128i bytes = _mm_shuffle_epi8(
        _mm_packus_epi16(_mm_packus_epi32(rgb[0], rgb[1]), _mm_packus_epi32(rgb[2], _mm_setzero_si128())), interleave);
    uint8_t* d = dst + (c - c0) * 3;
    _mm_storel_epi64(reinterpret_cast<__m128i*>(d), bytes);  // 12 bytes, none past this block
    const int32_t last = _mm_extract_epi32(bytes, 2);
    std::memcpy(d + 8, &last, 4);
  }
  pil_horizontal_k8_portable(planes, stride, first, k8, c, c1, dst + (c - c0) * 3);
}

namespace {

// 8 outputs' channel sums (rounded and shifted, as int32) as 24 RGB bytes at d, clamped by the
// saturating packs. Per lane: R0..3 G0..3 B0..3 as bytes, then interleaved to 12 RGB bytes.
void store_rgb8(__m256i r, __m256i g, __m256i b, uint8_t* d) {
  const __m256i interleave = _mm256_broadcastsi128_si256(_mm_setr_epi8(0, 4, 8, 1, 5, 9, 2, 6, 10, 3, 7, 11, -1, -1, -1, -1));
  const __m256i bytes = _mm256_shuffle_epi8(
      _mm256_packus_epi16(_mm256_packus_epi32(r, g), _mm256_packus_epi32(b, _mm256_setzero_si256())), interleave);
  const __m128i bl = _mm256_castsi256_si128(bytes), bh = _mm256_extracti128_si256(bytes, 1);
  _mm_storel_epi64(reinterpret_cast<__m128i*>(d), bl);
  const int32_t lo_last = _mm_extract_epi32(bl, 2), hi_last = _mm_extract_epi32(bh, 2);
  std::memcpy(d + 8, &lo_last, 4);
  _mm_storel_epi64(reinterpret_cast<__m128i*>(d + 12), bh);
  std::memcpy(d + 20, &hi_last, 4);
}

// The same pass two taps at a time, 8 outputs of each channel per block: each 128-bit lane holds 16
// plane bytes from its 4 outputs' first tap on; per pair of taps one byte shuffle gives the 4
// outputs' two pixels as int16, and two int16 multiply-adds (madd) with the coefficients' high and
// low parts give exact int32 sums (|hi| < 2^15, 0 <= lo < 256). A shuffle, two madds and their
// adds do what four 32-bit multiplies did. Blocks whose windows do not fit 16 bytes (scales above
// ~2) fall back to pil_horizontal_k8_avx2. kPairs: t.pairs as a constant, or 0 (with_pairs).
template <int32_t kPairs>
void horizontal_pairs_n(const uint8_t* planes, size_t stride, const TapTablesView& t, const int32_t* first,
                        const int32_t* k8, size_t c0, size_t c1, uint8_t* dst) {
  const size_t pairs = kPairs > 0 ? kPairs : t.pairs;
  const size_t blocks = (c1 - c0) / 8;
  for (size_t b = 0; b < blocks; ++b) {
    const size_t x = c0 + 8 * b;
    uint8_t* d = dst + (x - c0) * 3;
    if (!t.ok[b]) {
      pil_horizontal_k8_avx2(planes, stride, first, k8, x, x + 8, d);
      continue;
    }
    const __m256i* idx = reinterpret_cast<const __m256i*>(&t.index[b * pairs * 32]);
    const __m256i* kh = reinterpret_cast<const __m256i*>(&t.hi[b * pairs * 16]);
    const __m256i* kl = reinterpret_cast<const __m256i*>(&t.lo[b * pairs * 16]);
    __m256i w[3], hi[3], lo[3];
    for (size_t ch = 0; ch < 3; ++ch) {
      const uint8_t* p = planes + ch * stride;
      w[ch] = _mm256_inserti128_si256(
          _mm256_castsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p + first[x]))),
          _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + first[x + 4])), 1);
      hi[ch] = _mm256_setzero_si256();
      lo[ch] = rounding8();
    }
    for (size_t i = 0; i < pairs; ++i) {
      const __m256i ix = _mm256_loadu_si256(idx + i), h = _mm256_loadu_si256(kh + i), l = _mm256_loadu_si256(kl + i);
      for (size_t ch = 0; ch < 3; ++ch) {
        const __m256i px = _mm256_shuffle_epi8(w[ch], ix);
        hi[ch] = _mm256_add_epi32(hi[ch], _mm256_madd_epi16(px, h));
        lo[ch] = _mm256_add_epi32(lo[ch], _mm256_madd_epi16(px, l));
      }
    }
    store_rgb8(shift8x8(hi[0], lo[0]), shift8x8(hi[1], lo[1]), shift8x8(hi[2], lo[2]), d);
  }
  pil_horizontal_k8_avx2(planes, stride, first, k8, c0 + 8 * blocks, c1, dst + 8 * blocks * 3);
}

// 32 output values at a time, two rows (taps) at a time: the rows' bytes interleaved (a, b)
// byte by byte, then with zeros, give per 128-bit lane the int16 pairs of values 0-3, 4-7, 8-11 and
// 12-15, so one madd per coefficient half (see TapTablesView) adds both rows' products exactly,
// and the in-lane packs at the end put the values back in order. kPairs: rp.pairs as a constant,
// or 0 (with_pairs). Returns the values done; the portable pass does the rest.
template <int32_t kPairs>
size_t vertical_n(const RowPairs& rp, size_t n, uint8_t* out) {
  const int32_t pairs = kPairs > 0 ? kPairs : rp.pairs;
  const uint8_t* const* r = rp.rows;
  __m256i kh[kPairs > 0 ? kPairs : RowPairs::kMax], kl[kPairs > 0 ? kPairs : RowPairs::kMax];
  for (int32_t i = 0; i < pairs; ++i) {
    kh[i] = _mm256_set1_epi32(rp.hi[i]);
    kl[i] = _mm256_set1_epi32(rp.lo[i]);
  }
  const __m256i zero = _mm256_setzero_si256();
  size_t x = 0;
  for (; x + 32 <= n; x += 32) {
    __m256i hi[4], lo[4];
    for (size_t q = 0; q < 4; ++q) {
      hi[q] = zero;
      lo[q] = rounding8();
    }
    for (int32_t i = 0; i < pairs; ++i) {
      const __m256i a = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(r[2 * i] + x));
      const __m256i b = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(r[2 * i + 1] + x));
      const __m256i ab_lo = _mm256_unpacklo_epi8(a, b), ab_hi = _mm256_unpackhi_epi8(a, b);
      const __m256i px[4] = {_mm256_unpacklo_epi8(ab_lo, zero), _mm256_unpackhi_epi8(ab_lo, zero),
                             _mm256_unpacklo_epi8(ab_hi, zero), _mm256_unpackhi_epi8(ab_hi, zero)};
      for (size_t q = 0; q < 4; ++q) {
        hi[q] = _mm256_add_epi32(hi[q], _mm256_madd_epi16(px[q], kh[i]));
        lo[q] = _mm256_add_epi32(lo[q], _mm256_madd_epi16(px[q], kl[i]));
      }
    }
    const __m256i bytes = _mm256_packus_epi16(_mm256_packus_epi32(shift8x8(hi[0], lo[0]), shift8x8(hi[1], lo[1])),
                                              _mm256_packus_epi32(shift8x8(hi[2], lo[2]), shift8x8(hi[3], lo[3])));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + x), bytes);
  }
  return x;
}

// The wide pass (WideTablesView's halves), 8 outputs a block: each output's window 16 taps a
// chunk, widened to int16 in one vector and multiplied by its coefficients' halves (two madds, as
// the pairs above), Pillow's half in one dword; the 8 outputs' vectors are then added across by
// three rounds of hadd and one of lane swaps, which leaves them in order. kChunks: t.chunks as a
// constant, or 0 (with_pairs).
template <int32_t kChunks>
void horizontal_wide_n(const uint8_t* planes, size_t stride, const WideTablesView& t, size_t n, uint8_t* dst) {
  const size_t chunks = kChunks > 0 ? kChunks : t.chunks;
  const __m256i half = _mm256_setr_epi32(1 << (kPilPrecisionBits - 1), 0, 0, 0, 0, 0, 0, 0);
  for (size_t x = 0; x < n; x += 8) {
    __m256i v[3];
    for (size_t ch = 0; ch < 3; ++ch) {
      const uint8_t* p = planes + ch * stride;
      __m256i s[8];
      for (size_t o = 0; o < 8; ++o) {
        s[o] = half;
        for (size_t g = 0; g < chunks; ++g) {
          const __m256i px =
              _mm256_cvtepu8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p + t.first[x + o] + 16 * g)));
          const int16_t* k = &t.halves[((x + o) * chunks + g) * 32];
          const __m256i hi = _mm256_madd_epi16(px, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(k)));
          const __m256i lo = _mm256_madd_epi16(px, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(k + 16)));
          s[o] = _mm256_add_epi32(s[o], _mm256_add_epi32(_mm256_slli_epi32(hi, 8), lo));
        }
      }
      const __m256i s03 = _mm256_hadd_epi32(_mm256_hadd_epi32(s[0], s[1]), _mm256_hadd_epi32(s[2], s[3]));
      const __m256i s47 = _mm256_hadd_epi32(_mm256_hadd_epi32(s[4], s[5]), _mm256_hadd_epi32(s[6], s[7]));
      const __m256i sum = _mm256_add_epi32(_mm256_permute2x128_si256(s03, s47, 0x20), _mm256_permute2x128_si256(s03, s47, 0x31));
      v[ch] = _mm256_srai_epi32(sum, kPilPrecisionBits);
    }
    if (x + 8 <= n) {
      store_rgb8(v[0], v[1], v[2], dst + 3 * x);
    } else {  // the padded last block: its real outputs only
      uint8_t rgb[24];
      store_rgb8(v[0], v[1], v[2], rgb);
      std::memcpy(dst + 3 * x, rgb, 3 * (n - x));
    }
  }
}

}  // namespace

void pil_horizontal_wide_avx2(const uint8_t* planes, size_t stride, const WideTablesView& t, size_t n, uint8_t* dst) {
  with_pairs(t.chunks, [&](auto c) { horizontal_wide_n<decltype(c)::value>(planes, stride, t, n, dst); });
}

void pil_horizontal_pairs_avx2(const uint8_t* planes, size_t stride, const TapTablesView& t, const int32_t* first,
                               const int32_t* k8, size_t c0, size_t c1, uint8_t* dst) {
  with_pairs(t.pairs, [&](auto p) { horizontal_pairs_n<decltype(p)::value>(planes, stride, t, first, k8, c0, c1, dst); });
}

void pil_vertical_avx2(const uint8_t* const* rows, const int32_t* k, int32_t count, size_t n, uint8_t* out) {
  const RowPairs rp(rows, k, count);
  const size_t done =
      with_pairs(static_cast<size_t>(rp.pairs), [&](auto p) { return vertical_n<decltype(p)::value>(rp, n, out); });
  pil_vertical_from_portable(rows, k, count, done, n, out);
}

}  // namespace patchfuse
