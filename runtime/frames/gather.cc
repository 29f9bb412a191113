#include "runtime/frames/gather.h"

#include "runtime/core/cpu_features.h"

#include <algorithm>
#include <cstring>
#include <vector>

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

template <>
struct Pixel<uint8_t> {  // int8 kernels take the pixels as they are (weight_transforms.h)
  static uint8_t of(uint8_t v) { return v; }
};

// One image row of `width` pixels of `channels` interleaved bytes into one plane per channel, as
// T. A long loop with a constant stride, which the compiler turns into shuffles.
template <class T>
inline void split_row(const uint8_t* __restrict src, size_t width, int64_t channels, T* __restrict planes) {
  if (channels == 3) {
    T* __restrict r = planes;
    T* __restrict g = planes + width;
    T* __restrict b = planes + 2 * width;
    for (size_t x = 0; x < width; ++x) {
      r[x] = Pixel<T>::of(src[3 * x]);
      g[x] = Pixel<T>::of(src[3 * x + 1]);
      b[x] = Pixel<T>::of(src[3 * x + 2]);
    }
    return;
  }
  for (int64_t c = 0; c < channels; ++c) {
    for (size_t x = 0; x < width; ++x) {
      planes[static_cast<size_t>(c) * width + x] = Pixel<T>::of(src[x * static_cast<size_t>(channels) + static_cast<size_t>(c)]);
    }
  }
}

// The x86-64 baseline has no byte shuffle, so on x86-64 the split is also compiled for AVX2 and
// chosen at run time where the CPU has it (core/cpu_features.h says why not target_clones).
#if defined(__x86_64__)
template <class T>
__attribute__((target("avx2"))) void split_row_avx2(const uint8_t* src, size_t width, int64_t channels, T* planes) {
  split_row(src, width, channels, planes);
}

#endif

template <class T>
void deinterleave(const uint8_t* src, size_t width, int64_t channels, T* planes) {
#if defined(__x86_64__)
  if (cpu_has_avx2()) return split_row_avx2(src, width, channels, planes);
#endif
  split_row(src, width, channels, planes);
}

// P values: a constant-size copy (a couple of moves, not a call) for the common patch sizes.
template <class T>
inline void copy_patch_row(T* dst, const T* src, int64_t P) {
  switch (P) {
    case 14: std::memcpy(dst, src, 14 * sizeof(T)); return;
    case 16: std::memcpy(dst, src, 16 * sizeof(T)); return;
    default: std::memcpy(dst, src, static_cast<size_t>(P) * sizeof(T));
  }
}

// Per image row: the row is split into channel planes once, then each patch's P values per
// channel are one copy. A block's rows are ordered (bw, mh, mw); row (bw, mh, mw) holds the patch
// at patch row bh * M + mh, patch column bw * M + mw, its columns in (c, t, y, x) order.
template <class T>
void gather(const uint8_t* const* frames, size_t count, size_t row_stride, const FrameGrid& grid,
            const Preprocessing& p, int64_t channels, bool still, int64_t block_begin, int64_t block_end, T* out) {
  const int64_t P = p.patch_size, M = p.merge_size, tps = still ? 1 : p.temporal_patch_size;
  const int64_t pp = P * P, k = channels * tps * pp, blocks_per_t = grid.h / M;
  const auto width = static_cast<size_t>(grid.w * P);  // the pixels patches cover; a Conv2d drops the rest
  std::vector<T> planes(static_cast<size_t>(channels) * width);
  for (int64_t block = block_begin; block < block_end; ++block) {
    const int64_t gt = block / blocks_per_t, bh = block % blocks_per_t;
    T* block_out = out + (block - block_begin) * M * grid.w * k;
    for (int64_t mh = 0; mh < M; ++mh) {
      for (int64_t y = 0; y < P; ++y) {
        const auto image_row = static_cast<size_t>((bh * M + mh) * P + y);
        for (int64_t t = 0; t < tps; ++t) {
          const size_t f = std::min(static_cast<size_t>(gt * tps + t), count - 1);  // odd count: repeat the last
          deinterleave(frames[f] + image_row * row_stride, width, channels, planes.data());
          for (int64_t bw = 0; bw < grid.w / M; ++bw) {
            for (int64_t mw = 0; mw < M; ++mw) {
              const int64_t column = bw * M + mw;
              T* row = block_out + ((bw * M + mh) * M + mw) * k + t * pp + y * P;
              for (int64_t c = 0; c < channels; ++c) {
                copy_patch_row(row + c * tps * pp, planes.data() + static_cast<size_t>(c) * width + column * P, P);
              }
            }
          }
        }
      }
    }
  }
}

}  // namespace

int64_t gather_block_count(const FrameGrid& grid, const Preprocessing& p) { return grid.t * (grid.h / p.merge_size); }

void gather_rows(const uint8_t* const* frames, size_t count, size_t row_stride, const FrameGrid& grid,
                 const Preprocessing& p, int64_t channels, bool still, int64_t block_begin, int64_t block_end,
                 float* out) {
  gather(frames, count, row_stride, grid, p, channels, still, block_begin, block_end, out);
}

void gather_rows(const uint8_t* const* frames, size_t count, size_t row_stride, const FrameGrid& grid,
                 const Preprocessing& p, int64_t channels, bool still, int64_t block_begin, int64_t block_end,
                 uint16_t* out) {
  gather(frames, count, row_stride, grid, p, channels, still, block_begin, block_end, out);
}

void gather_rows(const uint8_t* const* frames, size_t count, size_t row_stride, const FrameGrid& grid,
                 const Preprocessing& p, int64_t channels, bool still, int64_t block_begin, int64_t block_end,
                 uint8_t* out) {
  gather(frames, count, row_stride, grid, p, channels, still, block_begin, block_end, out);
}

}  // namespace patchfuse
