// The gather rows straight from interleaved RGB rows with AVX512-VBMI (compiled with AVX-512 and
// VBMI flags), for patch sizes up to 16: a patch row's P pixels are one masked load of 3P bytes,
// one vpermb puts channel c's P bytes in 128-bit lane c, and each lane is stored (as bytes, f32
// or bf16) at its channel's place in the row. The other forms split every image row into planes
// first and read the planes back: two passes over the frame where this makes one.
#include <immintrin.h>

#include "runtime/frames/kernels/kernels.h"

namespace patchfuse {
namespace {

// A lane of P pixel bytes (the low P of 16) as the row's P values of T, stored with `mask` (the
// low P elements): masked, so a store never writes past its P values into a row written before.
template <class T>
struct Store;
template <>
struct Store<uint8_t> {  // int8 kernels take the pixels as they are
  static void apply(uint8_t* dst, __m128i bytes, __mmask16 mask) { _mm_mask_storeu_epi8(dst, mask, bytes); }
};
__m512 pixels16(__m128i bytes) {  // Pixel<float>::of (gather_rows.h), 16 at a time: (u8 - 128) / 256
  return _mm512_mul_ps(_mm512_sub_ps(_mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(bytes)), _mm512_set1_ps(kPixelCentre)),
                       _mm512_set1_ps(static_cast<float>(kPixelScale)));
}
template <>
struct Store<float> {
  static void apply(float* dst, __m128i bytes, __mmask16 mask) { _mm512_mask_storeu_ps(dst, mask, pixels16(bytes)); }
};
template <>
struct Store<uint16_t> {  // bf16: the exact f32's top halves
  static void apply(uint16_t* dst, __m128i bytes, __mmask16 mask) {
    const __m512i bits = _mm512_srli_epi32(_mm512_castps_si512(pixels16(bytes)), 16);
    _mm256_mask_storeu_epi16(dst, mask, _mm512_cvtepi32_epi16(bits));
  }
};

// The rows of one merge row in emit_rows' order (gather_rows.h): rows (bw, mh, mw) of the block,
// each with columns (c, t, y, x).
template <class T>
void emit_rgb_rows(const RgbMergeRow& r, T* block_out) {
  const int64_t P = r.P, M = r.M, tps = r.tps, k = r.k;
  alignas(64) uint8_t index[64] = {};  // byte 16c + i: pixel i's channel c, 3i + c
  for (int64_t c = 0; c < 3; ++c) {
    for (int64_t i = 0; i < P; ++i) index[16 * c + i] = static_cast<uint8_t>(3 * i + c);
  }
  const __m512i idx = _mm512_load_si512(index);
  const __mmask64 load = (__mmask64{1} << (3 * P)) - 1;  // 3P <= 48 bytes: nothing past the patch is read
  const auto store = static_cast<__mmask16>((1u << P) - 1);
  for (int64_t bw = 0; bw < r.grid_w / M; ++bw) {
    for (int64_t mw = 0; mw < M; ++mw) {
      const int64_t x0 = 3 * (bw * M + mw) * P;
      T* dst = block_out + ((bw * M + r.mh) * M + mw) * k;
      for (int64_t t = 0; t < tps; ++t) {
        for (int64_t y = 0; y < P; ++y) {
          const __m512i v = _mm512_permutexvar_epi8(idx, _mm512_maskz_loadu_epi8(load, r.rows[t * P + y] + x0));
          T* d = dst + (t * P + y) * P;
          Store<T>::apply(d, _mm512_castsi512_si128(v), store);
          Store<T>::apply(d + tps * P * P, _mm512_extracti32x4_epi32(v, 1), store);
          Store<T>::apply(d + 2 * tps * P * P, _mm512_extracti32x4_epi32(v, 2), store);
        }
      }
    }
  }
}

}  // namespace

void emit_rgb_rows_f32_avx512_vbmi(const RgbMergeRow& r, float* out) { emit_rgb_rows(r, out); }
void emit_rgb_rows_bf16_avx512_vbmi(const RgbMergeRow& r, uint16_t* out) { emit_rgb_rows(r, out); }
void emit_rgb_rows_u8_avx512_vbmi(const RgbMergeRow& r, uint8_t* out) { emit_rgb_rows(r, out); }

}  // namespace patchfuse
