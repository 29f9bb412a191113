// Interleaved pixels -> planes with AVX2 byte shuffles (compiled with -mavx2).
#include <immintrin.h>

#include "runtime/frames/kernels/kernels.h"

namespace patchfuse {
namespace {

inline __m128i pick3(__m128i a, __m128i b, __m128i c, __m128i m0, __m128i m1, __m128i m2) {
  return _mm_or_si128(_mm_or_si128(_mm_shuffle_epi8(a, m0), _mm_shuffle_epi8(b, m1)), _mm_shuffle_epi8(c, m2));
}

}  // namespace

void split_rgb_avx2(const uint8_t* src, size_t width, uint8_t* p0, uint8_t* p1, uint8_t* p2) {
  // 16 pixels (48 bytes) at a time: each 16-byte third holds 5 or 6 bytes of each channel; one
  // shuffle per third gathers them, and ORing the three thirds' shuffles puts 16 in order.
  const __m128i r0 = _mm_setr_epi8(0, 3, 6, 9, 12, 15, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1);
  const __m128i r1 = _mm_setr_epi8(-1, -1, -1, -1, -1, -1, 2, 5, 8, 11, 14, -1, -1, -1, -1, -1);
  const __m128i r2 = _mm_setr_epi8(-1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, 1, 4, 7, 10, 13);
  const __m128i g0 = _mm_setr_epi8(1, 4, 7, 10, 13, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1);
  const __m128i g1 = _mm_setr_epi8(-1, -1, -1, -1, -1, 0, 3, 6, 9, 12, 15, -1, -1, -1, -1, -1);
  const __m128i g2 = _mm_setr_epi8(-1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, 2, 5, 8, 11, 14);
  const __m128i b0 = _mm_setr_epi8(2, 5, 8, 11, 14, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1);
  const __m128i b1 = _mm_setr_epi8(-1, -1, -1, -1, -1, 1, 4, 7, 10, 13, -1, -1, -1, -1, -1, -1);
  const __m128i b2 = _mm_setr_epi8(-1, -1, -1, -1, -1, -1, -1, -1, -1, -1, 0, 3, 6, 9, 12, 15);
  size_t x = 0;
  for (; x + 16 <= width; x += 16) {
    const __m128i a = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + 3 * x));
    const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + 3 * x + 16));
    const __m128i c = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + 3 * x + 32));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(p0 + x), pick3(a, b, c, r0, r1, r2));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(p1 + x), pick3(a, b, c, g0, g1, g2));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(p2 + x), pick3(a, b, c, b0, b1, b2));
  }
  split_rgb_portable(src + 3 * x, width - x, p0 + x, p1 + x, p2 + x);
}

void split_rgba_avx2(const uint8_t* src, size_t width, uint8_t* p0, uint8_t* p1, uint8_t* p2) {
  // 32 pixels (128 bytes) at a time. Per 8-pixel load: a shuffle groups each lane's 4 pixels by
  // channel (dwords R G B A), a dword permute puts each channel's 8 bytes in one qword (R G B A
  // qwords); then qword unpacks and lane permutes across the four loads put 32 of a channel in order.
  const __m256i group = _mm256_broadcastsi128_si256(_mm_setr_epi8(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15));
  const __m256i qwords = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
  size_t x = 0;
  for (; x + 32 <= width; x += 32) {
    __m256i v[4];
    for (int i = 0; i < 4; ++i) {
      const __m256i px = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + 4 * x + 32 * i));
      v[i] = _mm256_permutevar8x32_epi32(_mm256_shuffle_epi8(px, group), qwords);  // R G | B A, 8 pixels each
    }
    const __m256i rb01 = _mm256_unpacklo_epi64(v[0], v[1]), ga01 = _mm256_unpackhi_epi64(v[0], v[1]);
    const __m256i rb23 = _mm256_unpacklo_epi64(v[2], v[3]), ga23 = _mm256_unpackhi_epi64(v[2], v[3]);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(p0 + x), _mm256_permute2x128_si256(rb01, rb23, 0x20));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(p1 + x), _mm256_permute2x128_si256(ga01, ga23, 0x20));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(p2 + x), _mm256_permute2x128_si256(rb01, rb23, 0x31));
  }
  split_rgba_portable(src + 4 * x, width - x, p0 + x, p1 + x, p2 + x);
}

}  // namespace patchfuse
