// The gather's row loop (gather.h), written once for every form: emit_rows walks one merge row of
// a block and hands each patch row of P pixels to a Row, the form's conversion of P bytes to f32
// or bf16. Included by the gather_<form>.cc files, each compiling it for its own ISA: everything
// here has internal linkage (kernels.h says why).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "runtime/frames/kernels/kernels.h"

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

// P pixels of a plane row as T, portable: a compile-time count (Pt > 0) for the common patch sizes.
// int8 kernels take the pixels as they are (weight_transforms.h), so theirs is a copy.
template <class T, int64_t Pt>
struct PortableRow {
  [[gnu::always_inline]] static inline void apply(T* __restrict dst, const uint8_t* __restrict src, int64_t P) {
    const int64_t n = Pt > 0 ? Pt : P;
    if constexpr (sizeof(T) == 1) {
      std::memcpy(dst, src, static_cast<size_t>(n));
    } else {
      for (int64_t x = 0; x < n; ++x) dst[x] = Pixel<T>::of(src[x]);
    }
  }
};

// The rows of one merge row `mh` of a block (MergeRow), in memory order. `planes` holds the block's P image
// rows of that merge row per time step and channel: plane (t, c) row y at ((t * C + c) * P + y) *
// width. Rows (bw, mh, mw) of a block are M apart in groups of M, and each row's columns (c, t, y,
// x) are written one after another, so the output is written in long runs (writing it image row
// by image row touched every row of the block for each image row).
template <class Row, class T>
inline void emit_rows(const MergeRow& r, T* block_out) {
  const uint8_t* planes = r.planes;
  const size_t width = r.width;
  const int64_t P = r.P, M = r.M, grid_w = r.grid_w, channels = r.channels, tps = r.tps, mh = r.mh, k = r.k;
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

// emit_rows with Row<T, P> for the patch sizes it has (14 and 16), PortableRow otherwise.
template <template <class, int64_t> class Row, class T>
inline void emit_rows_with(const MergeRow& r, T* block_out) {
  switch (r.P) {
    case 14: return emit_rows<Row<T, 14>>(r, block_out);
    case 16: return emit_rows<Row<T, 16>>(r, block_out);
    default: return emit_rows<PortableRow<T, 0>>(r, block_out);
  }
}

}  // namespace
}  // namespace patchfuse
