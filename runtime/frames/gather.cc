#include "runtime/frames/gather.h"

#include <algorithm>
#include <cstring>

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

template <class T>
void gather(const uint8_t* const* frames, size_t count, size_t row_stride, const FrameGrid& grid,
            const Preprocessing& p, int64_t channels, bool still, int64_t block_begin, int64_t block_end, T* out) {
  const int64_t P = p.patch_size, M = p.merge_size, tps = still ? 1 : p.temporal_patch_size;
  const int64_t pp = P * P, k = channels * tps * pp, blocks_per_t = grid.h / M;
  out += block_begin * M * grid.w * k;
  for (int64_t block = block_begin; block < block_end; ++block) {
    const int64_t gt = block / blocks_per_t, bh = block % blocks_per_t;
    for (int64_t bw = 0; bw < grid.w / M; ++bw) {
      for (int64_t mh = 0; mh < M; ++mh) {
        for (int64_t mw = 0; mw < M; ++mw) {
          const size_t y0 = static_cast<size_t>((bh * M + mh) * P), x0 = static_cast<size_t>((bw * M + mw) * P);
          for (int64_t t = 0; t < tps; ++t) {
            const size_t f = std::min(static_cast<size_t>(gt * tps + t), count - 1);  // odd count: repeat the last
            for (int64_t y = 0; y < P; ++y) {
              const uint8_t* src = frames[f] + (y0 + static_cast<size_t>(y)) * row_stride + x0 * static_cast<size_t>(channels);
              // One channel at a time: each pass writes P contiguous values (vectorizable) from
              // the same few dozen bytes of the image row, which stay in L1.
              for (int64_t c = 0; c < channels; ++c) {
                T* dst = out + (c * tps + t) * pp + y * P;
                if (channels == 3) {  // RGB: a constant stride the compiler turns into shuffles
                  for (int64_t x = 0; x < P; ++x) dst[x] = Pixel<T>::of(src[x * 3 + c]);
                } else {
                  for (int64_t x = 0; x < P; ++x) dst[x] = Pixel<T>::of(src[x * channels + c]);
                }
              }
            }
          }
          out += k;
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

}  // namespace patchfuse
