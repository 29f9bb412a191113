#include "runtime/frames/planes.h"

#include "runtime/core/cpu_features.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace patchfuse {

namespace {

void split_rgb_planes_portable(const uint8_t* __restrict rgb, size_t width, uint8_t* __restrict planes,
                               size_t stride) {
  for (size_t x = 0; x < width; ++x) {
    planes[x] = rgb[3 * x];
    planes[stride + x] = rgb[3 * x + 1];
    planes[2 * stride + x] = rgb[3 * x + 2];
  }
}

#if defined(__x86_64__)
PF_TARGET_AVX2 __m128i pick3(__m128i a, __m128i b, __m128i c, __m128i m0, __m128i m1, __m128i m2) {
  return _mm_or_si128(_mm_or_si128(_mm_shuffle_epi8(a, m0), _mm_shuffle_epi8(b, m1)), _mm_shuffle_epi8(c, m2));
}

PF_TARGET_AVX2 void split_rgb_planes_avx2(const uint8_t* rgb, size_t width, uint8_t* planes, size_t stride) {
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
    const __m128i a = _mm_loadu_si128(reinterpret_cast<const __m128i*>(rgb + 3 * x));
    const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(rgb + 3 * x + 16));
    const __m128i c = _mm_loadu_si128(reinterpret_cast<const __m128i*>(rgb + 3 * x + 32));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(planes + x), pick3(a, b, c, r0, r1, r2));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(planes + stride + x), pick3(a, b, c, g0, g1, g2));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(planes + 2 * stride + x), pick3(a, b, c, b0, b1, b2));
  }
  split_rgb_planes_portable(rgb + 3 * x, width - x, planes + x, stride);
}
#endif

}  // namespace

void split_rgb_planes(const uint8_t* rgb, size_t width, uint8_t* planes, size_t plane_stride) {
#if defined(__x86_64__)
  if (cpu_has_avx2()) return split_rgb_planes_avx2(rgb, width, planes, plane_stride);
#endif
  split_rgb_planes_portable(rgb, width, planes, plane_stride);
}

}  // namespace patchfuse
