// uint8 RGB frames (HWC interleaved, rows `row_stride` bytes apart) -> the rows the patch
// embedding takes, in exactly Hugging Face's order: patches.reshape(grid_t, tps, C, gh/M, M, P,
// gw/M, M, P).transpose(0, 3, 6, 4, 7, 2, 1, 5, 8): rows in (t, h-block, w-block, mh, mw) order,
// so each M x M merge group is M*M consecutive rows; columns in (c, t, y, x) order. A video's
// frames are grouped temporal_patch_size at a time, the last frame repeated to fill the last
// group. `still` writes columns (c, y, x) for weights summed over t (fold_normalization).
// Pixels are written as (u8 - 128) / 256 (preprocessing.h), or as they are for int8 kernels:
// normalization, centre and scale live in the folded weights and bias. With merge_size 1 (Conv2d
// models) the order is raster order over the patch grid.
#pragma once

#include <cstddef>
#include <cstdint>

#include "runtime/frames/kernels/kernels.h"
#include "runtime/frames/preprocessing.h"

namespace patchfuse {

// The form a gather of `channels` channels and patch size P writes rows with, for f32 or bf16 rows
// or (bytes) int8's: the form's name, or "copy" for int8 rows from planes (one portable copy).
const char* gather_kernel(const FrameKernels& kernels, int64_t channels, int64_t P, bool bytes);

// The rows come in blocks that are independent of each other, so threads can share a gather: one
// block is one row of merge groups of one time step (M * grid.w rows).
int64_t gather_block_count(const FrameGrid& grid, const Preprocessing& p);

// `frames`: grid's source frames, `count` of them (count <= grid.t * temporal_patch_size), each
// pointing at its row `first_row` (0 for whole frames; a band's first row when frames are resized a
// band at a time): the blocks gathered read rows from first_row on only.
// `out`: the rows of blocks [block_begin, block_end), from its start, each channels * (still ? 1 :
// temporal_patch_size) * P * P values, as f32 or as bf16 bits (every such value is exact in
// both), the two input types backends take, or as the raw uint8 pixels for int8 kernels.
// `kernels`: the gather's rows straight from the RGB rows where the form has them (GatherForm),
// else the plane split and the rows from planes (f32 and bf16; int8's rows are copies).
// `pitch`: values from one row's start to the next, 0 for the row's own length; the values past a
// row's own are written as zero (a kernel's row_padding).
void gather_rows(const uint8_t* const* frames, size_t count, size_t row_stride, size_t first_row, const FrameGrid& grid,
                 const Preprocessing& p, int64_t channels, bool still, int64_t block_begin, int64_t block_end,
                 float* out, const FrameKernels& kernels = best_frame_kernels(), size_t pitch = 0);
void gather_rows(const uint8_t* const* frames, size_t count, size_t row_stride, size_t first_row, const FrameGrid& grid,
                 const Preprocessing& p, int64_t channels, bool still, int64_t block_begin, int64_t block_end,
                 uint16_t* out, const FrameKernels& kernels = best_frame_kernels(), size_t pitch = 0);
void gather_rows(const uint8_t* const* frames, size_t count, size_t row_stride, size_t first_row, const FrameGrid& grid,
                 const Preprocessing& p, int64_t channels, bool still, int64_t block_begin, int64_t block_end,
                 uint8_t* out, const FrameKernels& kernels = best_frame_kernels(), size_t pitch = 0);

}  // namespace patchfuse
