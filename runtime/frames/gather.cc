#include "runtime/frames/gather.h"

#include "runtime/core/cpu_features.h"
#include "runtime/frames/planes.h"

#include <algorithm>
#include <cstring>
#include <type_traits>
#include <vector>

#if defined(__x86_64__)
#include <immintrin.h>
#elif defined(__aarch64__) || defined(__arm__)
#include <arm_neon.h>
#endif

namespace patchfuse {

namespace {

// A centred pixel value as the element type: f32, or bf16 bits (the top half of the exact f32).
template <class T>
struct Pixel;
template <>
struct Pixel<float> {
  // In float arithmetic (exact here), so the loop vectorizes as int -> float convert and multiply.
  static float of(uint8_t v) {
    return static_cast<float>(static_cast<int>(v) - kPixelCentre) * static_cast<float>(kPixelScale);
  }
};
template <>
struct Pixel<uint16_t> {
  // The top half of the f32: exact, the value has at most 8 significant bits. Computed rather than
  // looked up, so the loop has no table (and no static-initialisation guard) in it.
  static uint16_t of(uint8_t v) {
    const float f = Pixel<float>::of(v);
    uint32_t bits;
    std::memcpy(&bits, &f, 4);
    return static_cast<uint16_t>(bits >> 16);
  }
};

// One image row of `width` pixels of `channels` interleaved bytes into one uint8 plane per
// channel, `plane_stride` bytes apart: RGB through the resize's split (planes.h), other channel
// counts (models of 1 or 4 input channels) by a plain loop.
void deinterleave(const uint8_t* src, size_t width, int64_t channels, uint8_t* planes, size_t plane_stride) {
  if (channels == 3) return split_rgb_planes(src, width, planes, planes + plane_stride, planes + 2 * plane_stride);
  for (int64_t c = 0; c < channels; ++c) {
    for (size_t x = 0; x < width; ++x) {
      planes[static_cast<size_t>(c) * plane_stride + x] = src[x * static_cast<size_t>(channels) + static_cast<size_t>(c)];
    }
  }
}

// P pixels of a plane row as T, portable: a compile-time count (Pt > 0) for the common patch sizes.
// int8 kernels take the pixels as they are (weight_transforms.h), so theirs is a copy.
template <class T, int64_t Pt>
struct PortableRow {
  [[gnu::always_inline]] static inline void apply(T* __restrict dst, const uint8_t* __restrict src, int64_t P) {
    const int64_t n = Pt > 0 ? Pt : P;
    if constexpr (std::is_same_v<T, uint8_t>) {
      std::memcpy(dst, src, static_cast<size_t>(n));
    } else {
      for (int64_t x = 0; x < n; ++x) dst[x] = Pixel<T>::of(src[x]);
    }
  }
};

// The rows of one merge row `mh` of a block, in memory order. `planes` holds the block's P image
// rows of that merge row per time step and channel: plane (t, c) row y at ((t * C + c) * P + y) *
// width. Rows (bw, mh, mw) of a block are M apart in groups of M, and each row's columns (c, t, y,
// x) are written one after another, so the output is written in long runs (writing it image row
// by image row touched every row of the block for each image row).
template <class Row, class T>
inline void emit_rows(const uint8_t* planes, size_t width, int64_t P, int64_t M, int64_t grid_w, int64_t channels,
                      int64_t tps, int64_t mh, int64_t k, T* block_out) {
  for (int64_t bw = 0; bw < grid_w / M; ++bw) {
    for (int64_t mw = 0; mw < M; ++mw) {
      const auto x0 = static_cast<size_t>((bw * M + mw) * P);
      T* dst = block_out + ((bw * M + mh) * M + mw) * k;
      for (int64_t c = 0; c < channels; ++c) {
        for (int64_t t = 0; t < tps; ++t) {
          const uint8_t* plane = planes + static_cast<size_t>((t * channels + c) * P) * width + x0;
          for (int64_t y = 0; y < P; ++y, dst += P) Row::apply(dst, plane + static_cast<size_t>(y) * width, P);
        }
      }
    }
  }
}

// emit_rows with Row<T, P> for the patch sizes it has (14 and 16), PortableRow otherwise and for
// int8 kernels, whose rows are copies.
template <template <class, int64_t> class Row, class T>
inline void emit_rows_with(const uint8_t* planes, size_t width, int64_t P, int64_t M, int64_t grid_w, int64_t channels,
                           int64_t tps, int64_t mh, int64_t k, T* block_out) {
  if constexpr (!std::is_same_v<T, uint8_t>) {
    if (P == 14) return emit_rows<Row<T, 14>>(planes, width, P, M, grid_w, channels, tps, mh, k, block_out);
    if (P == 16) return emit_rows<Row<T, 16>>(planes, width, P, M, grid_w, channels, tps, mh, k, block_out);
  }
  switch (P) {
    case 14: return emit_rows<PortableRow<T, 14>>(planes, width, P, M, grid_w, channels, tps, mh, k, block_out);
    case 16: return emit_rows<PortableRow<T, 16>>(planes, width, P, M, grid_w, channels, tps, mh, k, block_out);
    default: return emit_rows<PortableRow<T, 0>>(planes, width, P, M, grid_w, channels, tps, mh, k, block_out);
  }
}

// The x86-64 baseline has 16-byte vectors and no 8-bit to 32-bit widening, so on x86-64 the
// conversion is also compiled for AVX2 and chosen at run time where the CPU has it
// (core/cpu_features.h says why not target_clones). Each row reads 16 bytes: the planes have that
// slack. (GCC vectorized PortableRow across the rows instead, one byte insert per pixel.) An
// AVX-512 form (one widening, one masked store) measured no faster: the loads from the planes
// bound it.
#if defined(__x86_64__)
PF_TARGET_AVX2 inline __m256 pixels8_avx2(__m128i bytes) {  // Pixel<float>::of, 8 at a time
  return _mm256_mul_ps(_mm256_sub_ps(_mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(bytes)), _mm256_set1_ps(kPixelCentre)),
                       _mm256_set1_ps(static_cast<float>(kPixelScale)));
}

// 14 or 16 pixels as f32 or bf16 in a few instructions.
template <class T, int64_t Pt>
struct Avx2Row {
  PF_TARGET_AVX2 static void apply(T* dst, const uint8_t* src, int64_t) {
    const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src));
    const __m256 lo = pixels8_avx2(b), hi = pixels8_avx2(_mm_unpackhi_epi64(b, b));
    if constexpr (std::is_same_v<T, float>) {
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

// flatten: emit_rows and its Row are inlined here, so all of it is compiled for AVX2.
template <class T>
PF_TARGET_AVX2 __attribute__((flatten)) void emit_rows_avx2(const uint8_t* planes, size_t width, int64_t P,
                                                            int64_t M, int64_t grid_w, int64_t channels, int64_t tps,
                                                            int64_t mh, int64_t k, T* block_out) {
  emit_rows_with<Avx2Row>(planes, width, P, M, grid_w, channels, tps, mh, k, block_out);
}
#elif defined(__aarch64__) || defined(__arm__)
// Pixel<float>::of on 8 bytes: a widened pixel v zipped with 0x4700 is the float with bits
// 0x470000vv, 2^15 + v / 256 exactly, and subtracting 2^15 + 1/2 leaves (v - 128) / 256, exact
// (no int -> float conversion or multiply).
static_assert(kPixelCentre == 128 && kPixelScale == 1.0 / 256, "pixels8_neon's constants are these");
PF_TARGET_NEON inline float32x4x2_t pixels8_neon(uint8x8_t b) {
  const uint16x8x2_t words = vzipq_u16(vmovl_u8(b), vdupq_n_u16(0x4700));
  const float32x4_t offset = vdupq_n_f32(32768.5f);
  return {{vsubq_f32(vreinterpretq_f32_u16(words.val[0]), offset), vsubq_f32(vreinterpretq_f32_u16(words.val[1]), offset)}};
}
PF_TARGET_NEON inline uint16x4_t bf16x4_neon(float32x4_t v) { return vshrn_n_u32(vreinterpretq_u32_f32(v), 16); }

// 14 or 16 pixels as f32 or bf16: one 16-byte load (the planes have the slack).
template <class T, int64_t Pt>
struct NeonRow {
  PF_TARGET_NEON static void apply(T* dst, const uint8_t* src, int64_t) {
    const uint8x16_t b = vld1q_u8(src);
    const float32x4x2_t lo = pixels8_neon(vget_low_u8(b)), hi = pixels8_neon(vget_high_u8(b));
    const float32x4_t f0 = lo.val[0], f1 = lo.val[1], f2 = hi.val[0], f3 = hi.val[1];
    if constexpr (std::is_same_v<T, float>) {
      vst1q_f32(dst, f0);
      vst1q_f32(dst + 4, f1);
      vst1q_f32(dst + 8, f2);
      if constexpr (Pt == 16) {
        vst1q_f32(dst + 12, f3);
      } else {
        vst1_f32(dst + 12, vget_low_f32(f3));
      }
    } else {  // bf16: the top halves
      vst1q_u16(dst, vcombine_u16(bf16x4_neon(f0), bf16x4_neon(f1)));
      vst1_u16(dst + 8, bf16x4_neon(f2));
      const uint16x4_t last = bf16x4_neon(f3);
      if constexpr (Pt == 16) {
        vst1_u16(dst + 12, last);
      } else {
        vst1_lane_u16(dst + 12, last, 0);
        vst1_lane_u16(dst + 13, last, 1);
      }
    }
  }
};

// flatten: as emit_rows_avx2, all of it compiled for NEON (armhf: only this function).
template <class T>
PF_TARGET_NEON __attribute__((flatten)) void emit_rows_neon(const uint8_t* planes, size_t width, int64_t P, int64_t M,
                                                            int64_t grid_w, int64_t channels, int64_t tps, int64_t mh,
                                                            int64_t k, T* block_out) {
  emit_rows_with<NeonRow>(planes, width, P, M, grid_w, channels, tps, mh, k, block_out);
}
#endif

// The emit_rows this CPU runs best.
template <class T>
void emit_rows_here(const uint8_t* planes, size_t width, int64_t P, int64_t M, int64_t grid_w, int64_t channels,
                    int64_t tps, int64_t mh, int64_t k, T* block_out) {
#if defined(__x86_64__)
  if (cpu_has_avx2()) return emit_rows_avx2(planes, width, P, M, grid_w, channels, tps, mh, k, block_out);
#elif defined(__aarch64__) || defined(__arm__)
  if (cpu_has_neon()) return emit_rows_neon(planes, width, P, M, grid_w, channels, tps, mh, k, block_out);
#endif
  emit_rows_with<PortableRow>(planes, width, P, M, grid_w, channels, tps, mh, k, block_out);
}

// Per merge row of a block: its P image rows of each time step are split into channel planes,
// then the rows it contributes to are written.
template <class T>
void gather(const uint8_t* const* frames, size_t count, size_t row_stride, size_t first_row, const FrameGrid& grid,
            const Preprocessing& p, int64_t channels, bool still, int64_t block_begin, int64_t block_end, T* out) {
  const int64_t P = p.patch_size, M = p.merge_size, tps = still ? 1 : p.temporal_patch_size;
  const int64_t k = channels * tps * P * P, blocks_per_t = grid.h / M;
  const auto width = static_cast<size_t>(grid.w * P);  // the pixels patches cover; a Conv2d drops the rest
  const size_t plane_stride = static_cast<size_t>(P) * width;
  std::vector<uint8_t> planes(static_cast<size_t>(tps * channels) * plane_stride + 16);  // + the rows' over-read
  for (int64_t block = block_begin; block < block_end; ++block) {
    const int64_t gt = block / blocks_per_t, bh = block % blocks_per_t;
    T* block_out = out + (block - block_begin) * M * grid.w * k;
    for (int64_t mh = 0; mh < M; ++mh) {
      for (int64_t t = 0; t < tps; ++t) {
        const size_t f = std::min(static_cast<size_t>(gt * tps + t), count - 1);  // odd count: repeat the last
        for (int64_t y = 0; y < P; ++y) {
          const auto image_row = static_cast<size_t>((bh * M + mh) * P + y);
          deinterleave(frames[f] + (image_row - first_row) * row_stride, width, channels,
                       planes.data() + static_cast<size_t>(t * channels * P + y) * width, plane_stride);
        }
      }
      emit_rows_here(planes.data(), width, P, M, grid.w, channels, tps, mh, k, block_out);
    }
  }
}

}  // namespace

const char* gather_kernel() { return avx2_or_neon_form(); }

int64_t gather_block_count(const FrameGrid& grid, const Preprocessing& p) { return grid.t * (grid.h / p.merge_size); }

void gather_rows(const uint8_t* const* frames, size_t count, size_t row_stride, size_t first_row, const FrameGrid& grid,
                 const Preprocessing& p, int64_t channels, bool still, int64_t block_begin, int64_t block_end,
                 float* out) {
  gather(frames, count, row_stride, first_row, grid, p, channels, still, block_begin, block_end, out);
}

void gather_rows(const uint8_t* const* frames, size_t count, size_t row_stride, size_t first_row, const FrameGrid& grid,
                 const Preprocessing& p, int64_t channels, bool still, int64_t block_begin, int64_t block_end,
                 uint16_t* out) {
  gather(frames, count, row_stride, first_row, grid, p, channels, still, block_begin, block_end, out);
}

void gather_rows(const uint8_t* const* frames, size_t count, size_t row_stride, size_t first_row, const FrameGrid& grid,
                 const Preprocessing& p, int64_t channels, bool still, int64_t block_begin, int64_t block_end,
                 uint8_t* out) {
  gather(frames, count, row_stride, first_row, grid, p, channels, still, block_begin, block_end, out);
}

}  // namespace patchfuse
