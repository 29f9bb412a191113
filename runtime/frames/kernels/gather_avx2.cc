// The gather rows with AVX2 (compiled with -mavx2). The x86-64 baseline has 16-byte vectors and
// no 8-bit to 32-bit widening; here 14 or 16 pixels take a few instructions. Each row reads 16
// bytes: the planes have that slack. (GCC vectorized PortableRow across the rows instead, one
// byte insert per pixel.) An AVX-512 form (one widening, one masked store) measured no faster:
// the loads from the planes bound it.
#include <immintrin.h>

#include "runtime/frames/kernels/gather_rows.h"

namespace patchfuse {
namespace {

inline __m256 pixels8_avx2(__m128i bytes) {  // Pixel<float>::of, 8 at a time
  return _mm256_mul_ps(_mm256_sub_ps(_mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(bytes)), _mm256_set1_ps(kPixelCentre)),
                       _mm256_set1_ps(static_cast<float>(kPixelScale)));
}

template <class T, int64_t Pt>
struct Avx2Row {
  static void apply(T* dst, const uint8_t* src, int64_t) {
    const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src));
    const __m256 lo = pixels8_avx2(b), hi = pixels8_avx2(_mm_unpackhi_epi64(b, b));
    if constexpr (sizeof(T) == 4) {
      _mm256_storeu_ps(dst, lo);
      if constexpr (Pt == 16) {
        _mm256_storeu_ps(dst + 8, hi);
      } else {
        _mm256_maskstore_ps(dst + 8, _mm256_setr_epi32(-1, -1, -1, -1, -1, -1, 0, 0), hi);
      }
    } else {  // bf16: the top halves, packed in order
      const __m256i v = _mm256_permute4x64_epi64(_mm256_packus_epi32(_mm256_srli_epi32(_mm256_castps_si256(lo), 16),
                                                                     _mm256_srli_epi32(_mm256_castps_si256(hi), 16)),
                                                 0xD8);
      if constexpr (Pt == 16) {
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst), v);
      } else {
        _mm_storeu_si128(reinterpret_cast<__m128i*>(dst), _mm256_castsi256_si128(v));
        _mm_maskstore_epi32(reinterpret_cast<int*>(dst + 8), _mm_setr_epi32(-1, -1, -1, 0), _mm256_extracti128_si256(v, 1));
      }
    }
  }
};

}  // namespace

void emit_rows_f32_avx2(const MergeRow& r, float* out) { emit_rows_with<Avx2Row>(r, out); }
void emit_rows_bf16_avx2(const MergeRow& r, uint16_t* out) { emit_rows_with<Avx2Row>(r, out); }

}  // namespace patchfuse
