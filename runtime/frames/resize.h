// The resize (and centre crop) that Hugging Face's image processors apply to a uint8 RGB image,
// in two semantics:
//  - kPil: Pillow's Image.resize(size, resample, reducing_gap=None), bit for bit (Pillow 9.4's
//    src/libImaging/Resample.c: separable, horizontal pass first over only the rows the vertical
//    pass reads, into uint8; a pass only where that axis changes size; the filter's support
//    scaled by the downscale factor; coefficients in double, normalized, then fixed point with 22
//    fractional bits; NEAREST through Geometry.c's affine scale). transformers' PIL backend.
//  - kTorch: torch's float32 antialiased interpolation (F.interpolate(antialias=True); "nearest"
//    for NEAREST), then clamp and round half to even: transformers' torchvision backend on CUDA,
//    and with torchvision <= 0.15 on CPU. Within 1 level of torch (float sums in another order).
// Rows are produced in bands: a band keeps only the horizontally resampled rows its vertical
// filter still needs (a ring of filter-size rows), so the scratch is a few rows, not an image.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "runtime/frames/kernels/kernels.h"
#include "runtime/frames/pixel_formats.h"
#include "runtime/frames/resize_tables.h"

namespace patchfuse {

// Pillow's numbering, as preprocessor_config.json's `resample` gives it.
enum class Resample : uint8_t { kNearest = 0, kLanczos = 1, kBilinear = 2, kBicubic = 3, kBox = 4, kHamming = 5 };
enum class ResizeSemantics : uint8_t { kPil = 0, kTorch = 1 };
const char* resample_name(Resample r);          // "nearest", "lanczos", ...
const char* resize_semantics_name(ResizeSemantics s);  // "pil", "torch"
// torch's interpolation has nearest, bilinear and bicubic only.
bool torch_has_filter(Resample r);

// The form a resize of these semantics and filter runs with `kernels`: the pil passes' vector
// forms ("avx2", "avx512", "avx512_vnni", "neon", "neon_dotprod"), or "portable" (torch
// semantics, NEAREST, the baseline level).
const char* resize_kernel(ResizeSemantics semantics, Resample filter, const FrameKernels& kernels);

// A frame's way to the processor's pixels: resize the source (src_h x src_w) to resized_h x
// resized_w, then take out_h x out_w pixels starting at (top, left) of it: a centre crop, where
// rows or columns outside the resized image are zeros (what transformers' center_crop pads with).
struct ResizeSpec {
  size_t src_h = 0, src_w = 0;
  size_t resized_h = 0, resized_w = 0;
  int64_t top = 0, left = 0;
  size_t out_h = 0, out_w = 0;
  Resample filter = Resample::kBicubic;
  ResizeSemantics semantics = ResizeSemantics::kPil;
};

class Resizer {
 public:
  // Checks the spec (sizes, a filter the semantics has) and computes both axes' coefficients and,
  // where `kernels` has vector passes for them, their tables. `kernels` has static storage
  // (frame_kernels); the CPU must have its level.
  static Result<Resizer> create(const ResizeSpec& spec, const FrameKernels& kernels = best_frame_kernels());
  const ResizeSpec& spec() const { return spec_; }
  // resize_kernel's form, or "portable" where these coefficients do not fit the vector kernels.
  const char* kernel() const { return kernel_; }

  // Scratch one run() call needs for `image` (of the spec's source size).
  size_t scratch_bytes(const ImageView& image) const;
  // Writes rows [row_begin, row_end) of the out_h x out_w RGB frame, rows out_w * 3 bytes apart,
  // row row_begin at `out`. Bands of rows are independent, so threads can split a frame and a
  // caller can resize a band at a time into a band-sized buffer.
  void run(const ImageView& image, size_t row_begin, size_t row_end, uint8_t* scratch, uint8_t* out) const;
  // Whether run() resamples `image`'s rows as they are, with no plane split (ResizeForm.horizontal_rgb).
  bool reads_rgb_rows(const ImageView& image) const {
    return horizontal_rgb_ != nullptr && (image.format == PixelFormat::kRgb || image.format == PixelFormat::kBgr);
  }

 private:
  ResizeSpec spec_;
  bool need_h_ = false, need_v_ = false;
  AxisFilter h_, v_;
  size_t col_begin_ = 0, col_end_ = 0;  // the resized columns the crop keeps
  // The pil passes' vector forms (kernels.h), chosen at create; null: the scalar passes.
  const char* kernel_ = "portable";
  PilHorizontalFn horizontal_ = nullptr;
  PilHorizontal2Fn horizontal2_ = nullptr;  // where the form has it, ring rows are filled two at a time
  // RGB and BGR sources straight from their rows, two at a time, where the form has the pass and
  // every block of the kept columns fits it (rgb_tables_); other formats take the planes.
  PilHorizontalRgbFn horizontal_rgb_ = nullptr;
  TapTables rgb_tables_;
  PilVerticalFn vertical_ = nullptr;
  PilHorizontalWideFn wide_ = nullptr;      // windows of 9 to kPilMaxTaps taps, where the form has them
  WideTables wide_tables_;
  PlanesForm planes_ = frame_kernels(SimdLevel::kBaseline).planes;  // planes_row's splits
  std::vector<int32_t> h8_;   // the horizontal kernels' coefficients, 8 per output; empty: wide_ or the scalar pass
  TapTables tap_tables_;
  size_t plane_stride() const { return spec_.src_w + kPlaneSlack; }  // a source plane and its over-read slack
  // The ring of horizontally resampled rows: a vertical window's taps and one more, so that a row
  // filled with the one a window needs next never evicts a row of that window.
  size_t ring_slots() const { return v_.taps + 1; }
};

}  // namespace patchfuse
