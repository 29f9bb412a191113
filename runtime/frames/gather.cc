#include "runtime/frames/gather.h"

#include <algorithm>
#include <vector>

namespace patchfuse {

namespace {

// One image row of `width` pixels of `channels` interleaved bytes into one uint8 plane per
// channel, `plane_stride` bytes apart: RGB through the form's split (kernels.h), other channel
// counts (models of 1 or 4 input channels) by a plain loop.
void deinterleave(const uint8_t* src, size_t width, int64_t channels, uint8_t* planes, size_t plane_stride,
                  SplitFn split_rgb) {
  if (channels == 3) return split_rgb(src, width, planes, planes + plane_stride, planes + 2 * plane_stride);
  for (int64_t c = 0; c < channels; ++c) {
    for (size_t x = 0; x < width; ++x) {
      planes[static_cast<size_t>(c) * plane_stride + x] = src[x * static_cast<size_t>(channels) + static_cast<size_t>(c)];
    }
  }
}

// The rgb rows' reach (kernels.h).
bool from_rgb_rows(int64_t channels, int64_t P) { return channels == 3 && P <= 16; }

// The form's rows for the element type, from planes and (null where it has none) from RGB rows.
EmitRowsF32Fn rows_form(const FrameKernels& k, const float*) { return k.gather.f32; }
EmitRowsBf16Fn rows_form(const FrameKernels& k, const uint16_t*) { return k.gather.bf16; }
auto rows_form(const FrameKernels&, const uint8_t*) { return emit_rows_u8_portable; }
EmitRgbRowsF32Fn rgb_rows_form(const FrameKernels& k, const float*) { return k.gather.rgb_f32; }
EmitRgbRowsBf16Fn rgb_rows_form(const FrameKernels& k, const uint16_t*) { return k.gather.rgb_bf16; }
EmitRgbRowsU8Fn rgb_rows_form(const FrameKernels& k, const uint8_t*) { return k.gather.rgb_u8; }

// Per merge row of a block: the rows it contributes to, from its P image rows of each time step,
// either straight from those RGB rows (the form's rgb rows) or from channel planes split from them.
template <class T>
void gather(const uint8_t* const* frames, size_t count, size_t row_stride, size_t first_row, const FrameGrid& grid,
            const Preprocessing& p, int64_t channels, bool still, int64_t block_begin, int64_t block_end, T* out,
            const FrameKernels& kernels, size_t pitch) {
  const int64_t P = p.patch_size, M = p.merge_size, tps = still ? 1 : p.temporal_patch_size;
  const int64_t values = channels * tps * P * P, blocks_per_t = grid.h / M;
  const int64_t k = pitch == 0 ? values : static_cast<int64_t>(pitch);  // the emitters' row pitch
  const auto emit_rgb_rows = from_rgb_rows(channels, P) ? rgb_rows_form(kernels, out) : nullptr;
  const auto emit_rows = rows_form(kernels, out);
  const auto width = static_cast<size_t>(grid.w * P);  // the pixels patches cover; a Conv2d drops the rest
  const size_t plane_stride = static_cast<size_t>(P) * width;
  std::vector<const uint8_t*> rows(static_cast<size_t>(tps * P));  // the merge row's image rows, (t, y)
  // The planes, where they are used, and the rows' over-read.
  std::vector<uint8_t> planes(emit_rgb_rows ? 0 : static_cast<size_t>(tps * channels) * plane_stride + 16);
  for (int64_t block = block_begin; block < block_end; ++block) {
    const int64_t gt = block / blocks_per_t, bh = block % blocks_per_t;
    T* block_out = out + (block - block_begin) * M * grid.w * k;
    for (int64_t mh = 0; mh < M; ++mh) {
      for (int64_t t = 0; t < tps; ++t) {
        const size_t f = std::min(static_cast<size_t>(gt * tps + t), count - 1);  // odd count: repeat the last
        for (int64_t y = 0; y < P; ++y) {
          const auto image_row = static_cast<size_t>((bh * M + mh) * P + y);
          rows[static_cast<size_t>(t * P + y)] = frames[f] + (image_row - first_row) * row_stride;
        }
      }
      if (emit_rgb_rows) {
        emit_rgb_rows({rows.data(), P, M, grid.w, tps, mh, k}, block_out);
        continue;
      }
      for (int64_t t = 0; t < tps; ++t) {
        for (int64_t y = 0; y < P; ++y) {
          deinterleave(rows[static_cast<size_t>(t * P + y)], width, channels,
                       planes.data() + static_cast<size_t>(t * channels * P + y) * width, plane_stride, kernels.planes.rgb);
        }
      }
      emit_rows({planes.data(), width, P, M, grid.w, channels, tps, mh, k}, block_out);
    }
    if (k == values) continue;
    for (int64_t row = 0; row < M * grid.w; ++row) std::fill(block_out + row * k + values, block_out + (row + 1) * k, T{0});
  }
}

}  // namespace

const char* gather_kernel(const FrameKernels& kernels, int64_t channels, int64_t P, bool bytes) {
  return !bytes || (from_rgb_rows(channels, P) && kernels.gather.rgb_u8 != nullptr) ? kernels.gather.name : "copy";
}

int64_t gather_block_count(const FrameGrid& grid, const Preprocessing& p) { return grid.t * (grid.h / p.merge_size); }

void gather_rows(const uint8_t* const* frames, size_t count, size_t row_stride, size_t first_row, const FrameGrid& grid,
                 const Preprocessing& p, int64_t channels, bool still, int64_t block_begin, int64_t block_end,
                 float* out, const FrameKernels& kernels, size_t pitch) {
  gather(frames, count, row_stride, first_row, grid, p, channels, still, block_begin, block_end, out, kernels, pitch);
}

void gather_rows(const uint8_t* const* frames, size_t count, size_t row_stride, size_t first_row, const FrameGrid& grid,
                 const Preprocessing& p, int64_t channels, bool still, int64_t block_begin, int64_t block_end,
                 uint16_t* out, const FrameKernels& kernels, size_t pitch) {
  gather(frames, count, row_stride, first_row, grid, p, channels, still, block_begin, block_end, out, kernels, pitch);
}

void gather_rows(const uint8_t* const* frames, size_t count, size_t row_stride, size_t first_row, const FrameGrid& grid,
                 const Preprocessing& p, int64_t channels, bool still, int64_t block_begin, int64_t block_end,
                 uint8_t* out, const FrameKernels& kernels, size_t pitch) {
  gather(frames, count, row_stride, first_row, grid, p, channels, still, block_begin, block_end, out, kernels, pitch);
}

}  // namespace patchfuse
