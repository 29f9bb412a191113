// Interleaved pixels -> planes with AVX512-VBMI's byte permutes (compiled with AVX-512 and VBMI
// flags): 64 pixels at a time, each plane two permutes of the loaded bytes (the AVX2 split takes
// three shuffles and two ORs a plane for 16). The tails run the AVX2 split.
#include <immintrin.h>

#include "runtime/frames/kernels/kernels.h"

namespace patchfuse {
namespace {

// Byte i: stride * i + offset, the source byte of a channel's pixel i. vpermb reads its low 6
// bits, vpermt2b its low 7, so one table serves both for any 64-byte-aligned part of the source.
struct Index64 {
  uint8_t v[64];
};
constexpr Index64 strided(int stride, int offset) {
  Index64 t{};
  for (int i = 0; i < 64; ++i) t.v[i] = static_cast<uint8_t>(stride * i + offset);
  return t;
}
constexpr Index64 kRgb[3] = {strided(3, 0), strided(3, 1), strided(3, 2)};
constexpr Index64 kRgba[3] = {strided(4, 0), strided(4, 1), strided(4, 2)};

__m512i load(const Index64& t) { return _mm512_loadu_si512(t.v); }

// The pixels i whose channel c byte (3i + c) lies in the third 64 bytes: i >= 43 for R and G, 42 for B.
constexpr __mmask64 third_part(int c) { return ~__mmask64{0} << ((128 - c + 2) / 3); }

}  // namespace

void split_rgb_avx512_vbmi(const uint8_t* src, size_t width, uint8_t* p0, uint8_t* p1, uint8_t* p2) {
  const __m512i idx[3] = {load(kRgb[0]), load(kRgb[1]), load(kRgb[2])};
  uint8_t* const planes[3] = {p0, p1, p2};
  size_t x = 0;
  for (; x + 64 <= width; x += 64) {
    const __m512i a = _mm512_loadu_si512(src + 3 * x), b = _mm512_loadu_si512(src + 3 * x + 64),
                  c = _mm512_loadu_si512(src + 3 * x + 128);
    for (int ch = 0; ch < 3; ++ch) {
      const __m512i ab = _mm512_permutex2var_epi8(a, idx[ch], b);  // pixels whose byte is in a or b
      _mm512_storeu_si512(planes[ch] + x, _mm512_mask_permutexvar_epi8(ab, third_part(ch), idx[ch], c));
    }
  }
  split_rgb_avx2(src + 3 * x, width - x, p0 + x, p1 + x, p2 + x);
}

void split_rgba_avx512_vbmi(const uint8_t* src, size_t width, uint8_t* p0, uint8_t* p1, uint8_t* p2) {
  const __m512i idx[3] = {load(kRgba[0]), load(kRgba[1]), load(kRgba[2])};
  uint8_t* const planes[3] = {p0, p1, p2};
  size_t x = 0;
  for (; x + 64 <= width; x += 64) {
    __m512i v[4];
    for (int i = 0; i < 4; ++i) v[i] = _mm512_loadu_si512(src + 4 * x + 64 * i);
    for (int ch = 0; ch < 3; ++ch) {  // pixels 0-31 from the first 128 bytes, 32-63 from the second
      const __m512i lo = _mm512_permutex2var_epi8(v[0], idx[ch], v[1]), hi = _mm512_permutex2var_epi8(v[2], idx[ch], v[3]);
      _mm512_storeu_si512(planes[ch] + x, _mm512_mask_blend_epi8(~__mmask64{0} << 32, lo, hi));
    }
  }
  split_rgba_avx2(src + 4 * x, width - x, p0 + x, p1 + x, p2 + x);
}

}  // namespace patchfuse
