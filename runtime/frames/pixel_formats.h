// Camera and image pixel layouts -> the RGB bytes Hugging Face's processors start from
// (`image.convert("RGB")`): alpha dropped, not composited; grayscale replicated; YUV converted by
// libyuv with the colour matrix the caller names. Conversion is one source row at a time, so the
// resize (resize.h) reads each row it needs once and no converted copy of the whole frame exists.
#pragma once

#include <cstddef>
#include <cstdint>

#include "runtime/core/result.h"
#include "runtime/frames/kernels/kernels.h"

namespace patchfuse {

// Interleaved byte orders name the bytes in memory (kRgb = R, G, B). kNv12: a Y plane and one
// interleaved U, V plane at half resolution (kNv21: V, U); kI420: Y, U and V planes at half
// resolution, whose chroma samples may be pixel_stride bytes apart (Android's YUV_420_888 gives 2
// for its semi-planar layouts); kYuyv: Y0 U Y1 V for each pair of pixels. Odd sizes round the
// chroma up, as libyuv does.
enum class PixelFormat : uint8_t { kRgb, kBgr, kRgba, kBgra, kGray8, kNv12, kNv21, kI420, kYuyv };
// YUV -> RGB: BT.601 full range (JPEG's), BT.601 limited (studio swing, most SD cameras), BT.709
// limited (HD video).
enum class ColorMatrix : uint8_t { kBt601Full, kBt601Limited, kBt709Limited };
const char* pixel_format_name(PixelFormat f);
const char* color_matrix_name(ColorMatrix m);

struct ImageView {
  PixelFormat format = PixelFormat::kRgb;
  ColorMatrix matrix = ColorMatrix::kBt601Full;  // YUV formats only
  size_t width = 0, height = 0;
  const uint8_t* planes[3] = {};  // packed formats: planes[0]; NV12/NV21: Y, UV; I420: Y, U, V
  size_t row_stride[3] = {};      // bytes between rows of each plane
  size_t chroma_pixel_stride = 1; // I420 only: bytes between chroma samples of a row (1 or 2)
};

// An image's size: between 1 and 2^15 per side and at most kMaxImagePixels. Every image path
// (the size queries, prepare and the runs) checks it here. `where` prefixes the message.
constexpr size_t kMaxImageSide = 1u << 15;
constexpr uint64_t kMaxImagePixels = uint64_t{1} << 28;
Status check_image_size(size_t width, size_t height, const char* where);
// A caller's signed numbers before they make a view (the C API's pf_image, the Python module's
// arguments): width, height at least 1, chroma pixel stride and row strides not negative.
Status check_image_signs(int64_t width, int64_t height, int64_t chroma_pixel_stride, const int64_t (&row_strides)[3],
                         const char* where);
// check_image_size, a plane for each the format has, strides that hold a row of each.
Status check_image(const ImageView& image, const char* where);
// The planes `image`'s format has, and the bytes plane p spans from its first byte (row stride ×
// (rows - 1) + one row's bytes): what a caller's buffer for that plane must hold (the Python
// module checks arrays with it). Valid for an image that passed check_image.
int plane_count(const ImageView& image);
uint64_t plane_extent(const ImageView& image, int plane);

// A tightly packed frame of `format` at `data`: rows of width * bytes per pixel, planes one after
// the other (4:2:0 chroma at ceil(width/2) x ceil(height/2)), as camera dumps and decoders write
// them; packed_image_bytes is its size. Sides of 1 to kMaxImageSide. Null data gives the layout
// alone, with null planes (prepare sizes its buffers from it).
ImageView packed_image(PixelFormat format, const uint8_t* data, size_t width, size_t height);
size_t packed_image_bytes(PixelFormat format, size_t width, size_t height);

// The scratch rgb_row and planes_row need for one row of `image`.
size_t rgb_row_scratch_bytes(const ImageView& image);

// Row y as width * 3 bytes R, G, B: the image's own row where it is RGB already, otherwise
// converted into `scratch` (rgb_row_scratch_bytes). The image has passed check_image.
const uint8_t* rgb_row(const ImageView& image, size_t y, uint8_t* scratch);

// The same bytes as R, G and B planes (`plane_stride` bytes apart from `planes`), the layout the
// resize's vector kernels read: split straight from the source's pixels where they are packed
// (YUV through libyuv's RGBA rows), with no interleaved RGB row between, by `split`'s form.
void planes_row(const ImageView& image, size_t y, uint8_t* scratch, uint8_t* planes, size_t plane_stride,
                const PlanesForm& split);

}  // namespace patchfuse
