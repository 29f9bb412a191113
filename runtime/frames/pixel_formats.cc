#include "runtime/frames/pixel_formats.h"

#include <libyuv/convert_argb.h>
#include <libyuv/convert_from_argb.h>
#include <libyuv/planar_functions.h>

#include <algorithm>
#include <cstdint>
#include <cstring>


namespace patchfuse {

const char* pixel_format_name(PixelFormat f) {
  switch (f) {
    case PixelFormat::kRgb: return "rgb";
    case PixelFormat::kBgr: return "bgr";
    case PixelFormat::kRgba: return "rgba";
    case PixelFormat::kBgra: return "bgra";
    case PixelFormat::kGray8: return "gray8";
    case PixelFormat::kNv12: return "nv12";
    case PixelFormat::kNv21: return "nv21";
    case PixelFormat::kI420: return "i420";
    case PixelFormat::kYuyv: return "yuyv";
  }
  return "?";
}

const char* color_matrix_name(ColorMatrix m) {
  switch (m) {
    case ColorMatrix::kBt601Full: return "bt601_full";
    case ColorMatrix::kBt601Limited: return "bt601_limited";
    case ColorMatrix::kBt709Limited: return "bt709_limited";
  }
  return "?";
}

namespace {

size_t half_up(size_t v) { return (v + 1) / 2; }

// The planes a format has and the least row stride of each.
struct Layout {
  int planes;
  size_t min_stride[3];
};

Layout layout(const ImageView& v) {
  const size_t w = v.width, cw = half_up(v.width);
  switch (v.format) {
    case PixelFormat::kRgb:
    case PixelFormat::kBgr: return {1, {w * 3}};
    case PixelFormat::kRgba:
    case PixelFormat::kBgra: return {1, {w * 4}};
    case PixelFormat::kGray8: return {1, {w}};
    case PixelFormat::kNv12:
    case PixelFormat::kNv21: return {2, {w, cw * 2}};
    case PixelFormat::kI420: {
      const size_t c = (cw - 1) * v.chroma_pixel_stride + 1;
      return {3, {w, c, c}};
    }
    case PixelFormat::kYuyv: return {1, {cw * 4}};
  }
  return {0, {}};
}

size_t plane_rows(const ImageView& v, int plane) {
  const bool half = plane > 0 && (v.format == PixelFormat::kNv12 || v.format == PixelFormat::kNv21 ||
                                  v.format == PixelFormat::kI420);
  return half ? half_up(v.height) : v.height;
}

// The mirrored (YVU) form of the caller's matrix: see rgba_row.
const libyuv::YuvConstants* yvu_matrix(ColorMatrix m) {
  switch (m) {
    case ColorMatrix::kBt601Full: return &libyuv::kYvuJPEGConstants;
    case ColorMatrix::kBt601Limited: return &libyuv::kYvuI601Constants;
    case ColorMatrix::kBt709Limited: return &libyuv::kYvuH709Constants;
  }
  return &libyuv::kYvuJPEGConstants;
}

}  // namespace

ImageView packed_image(PixelFormat format, const uint8_t* data, size_t width, size_t height) {
  ImageView v;
  v.format = format;
  v.width = width;
  v.height = height;
  const size_t cw = (width + 1) / 2, ch = (height + 1) / 2;
  size_t offset = 0;  // counted apart from the pointer: null data plus an offset would be undefined
  const auto plane = [&](int i, size_t stride, size_t rows) {
    v.planes[i] = data == nullptr ? nullptr : data + offset;
    v.row_stride[i] = stride;
    offset += stride * rows;
  };
  switch (format) {
    case PixelFormat::kRgb:
    case PixelFormat::kBgr: plane(0, width * 3, height); break;
    case PixelFormat::kRgba:
    case PixelFormat::kBgra: plane(0, width * 4, height); break;
    case PixelFormat::kGray8: plane(0, width, height); break;
    case PixelFormat::kNv12:
    case PixelFormat::kNv21:
      plane(0, width, height);
      plane(1, cw * 2, ch);
      break;
    case PixelFormat::kI420:
      plane(0, width, height);
      plane(1, cw, ch);
      plane(2, cw, ch);
      break;
    case PixelFormat::kYuyv: plane(0, cw * 4, height); break;
  }
  return v;
}

size_t packed_image_bytes(PixelFormat format, size_t width, size_t height) {
  const size_t cw = (width + 1) / 2, ch = (height + 1) / 2;
  switch (format) {
    case PixelFormat::kRgb:
    case PixelFormat::kBgr: return width * 3 * height;
    case PixelFormat::kRgba:
    case PixelFormat::kBgra: return width * 4 * height;
    case PixelFormat::kGray8: return width * height;
    case PixelFormat::kNv12:
    case PixelFormat::kNv21: return width * height + cw * 2 * ch;
    case PixelFormat::kI420: return width * height + 2 * cw * ch;
    case PixelFormat::kYuyv: return cw * 4 * height;
  }
  return 0;
}

Status check_image_size(size_t width, size_t height, const char* where) {
  PF_CHECK(width >= 1 && height >= 1 && width <= kMaxImageSide && height <= kMaxImageSide &&
               uint64_t{width} * height <= kMaxImagePixels,
           Code::kInvalidArgument, where, ": image size ", width, "x", height,
           " (width x height) must be between 1 and ", kMaxImageSide, " per side and at most ", kMaxImagePixels,
           " pixels");
  return {};
}

Status check_image_signs(int64_t width, int64_t height, int64_t chroma_pixel_stride, const int64_t (&row_strides)[3],
                         const char* where) {
  PF_CHECK(width > 0 && height > 0 && chroma_pixel_stride >= 0, Code::kInvalidArgument, where, ": image size ", width, "x",
           height, " and chroma_pixel_stride ", chroma_pixel_stride, " must be positive (stride: 0 for 1)");
  for (int p = 0; p < 3; ++p) {
    PF_CHECK(row_strides[p] >= 0, Code::kInvalidArgument, where, ": row stride ", row_strides[p], " of plane ", p,
             " is negative");
  }
  return {};
}

Status check_image(const ImageView& v, const char* where) {
  PF_CHECK(v.format <= PixelFormat::kYuyv, Code::kInvalidArgument, where, ": pixel format ",
           static_cast<int>(v.format), " is not one of rgb, bgr, rgba, bgra, gray8, nv12, nv21, i420, yuyv");
  PF_CHECK(v.matrix <= ColorMatrix::kBt709Limited, Code::kInvalidArgument, where, ": colour matrix ",
           static_cast<int>(v.matrix), " is not one of bt601_full, bt601_limited, bt709_limited");
  PF_RETURN_IF_ERROR(check_image_size(v.width, v.height, where));
  PF_CHECK(v.format != PixelFormat::kI420 || v.chroma_pixel_stride == 1 || v.chroma_pixel_stride == 2,
           Code::kInvalidArgument, where, ": i420 chroma pixel stride ", v.chroma_pixel_stride, " must be 1 or 2");
  const Layout l = layout(v);
  for (int p = 0; p < l.planes; ++p) {
    PF_CHECK(v.planes[p] != nullptr, Code::kInvalidArgument, where, ": plane ", p, " of a ",
             pixel_format_name(v.format), " image is null");
    PF_CHECK(v.row_stride[p] >= l.min_stride[p], Code::kInvalidArgument, where, ": row stride ", v.row_stride[p],
             " of plane ", p, " is less than the ", l.min_stride[p], " bytes a row of a ", v.width, "-pixel-wide ",
             pixel_format_name(v.format), " image takes");
    // libyuv takes int strides, and every row's address must be computable (also in a 32-bit
    // address space): the plane's extent is counted in 64 bits.
    const uint64_t extent = plane_extent(v, p);
    PF_CHECK(v.row_stride[p] <= (1u << 30) && extent <= std::min<uint64_t>(uint64_t{1} << 40, SIZE_MAX),
             Code::kInvalidArgument, where, ": row stride ", v.row_stride[p], " of plane ", p, " is too large (the plane spans ",
             extent, " bytes)");
  }
  return {};
}

int plane_count(const ImageView& v) { return layout(v).planes; }

uint64_t plane_extent(const ImageView& v, int p) {
  return uint64_t{v.row_stride[p]} * (plane_rows(v, p) - 1) + layout(v).min_stride[p];
}

namespace {

// A YUV row as R, G, B, A bytes (A = 255) at scratch[0, 4w), converted by libyuv; YUYV first
// splits to 4:2:2 planes after those bytes (libyuv 2023 has no matrix variant for YUYV).
// libyuv writes R, G, B, A in memory ("ABGR") from its B, G, R, A ("ARGB") functions when U and V
// are swapped and the mirrored (YVU) matrix is passed: how libyuv itself defines I420ToABGR.
const uint8_t* rgba_row(const ImageView& v, size_t y, uint8_t* scratch) {
  const auto iw = static_cast<int>(v.width);
  const uint8_t* row = v.planes[0] + y * v.row_stride[0];
  const uint8_t* uv_row = v.planes[1] + (y / 2) * v.row_stride[1];  // 4:2:0 formats
  const libyuv::YuvConstants* m = yvu_matrix(v.matrix);
  switch (v.format) {
    case PixelFormat::kNv12:  // NV12 -> ABGR is NV21 -> ARGB with the mirrored matrix
      libyuv::NV21ToARGBMatrix(row, 0, uv_row, 0, scratch, 0, m, iw, 1);
      break;
    case PixelFormat::kNv21:
      libyuv::NV12ToARGBMatrix(row, 0, uv_row, 0, scratch, 0, m, iw, 1);
      break;
    case PixelFormat::kI420: {
      const uint8_t* vv = v.planes[2] + (y / 2) * v.row_stride[2];
      if (v.chroma_pixel_stride == 1) {
        libyuv::I420ToARGBMatrix(row, 0, vv, 0, uv_row, 0, scratch, 0, m, iw, 1);
      } else {  // Android's semi-planar chroma
        libyuv::Android420ToARGBMatrix(row, 0, vv, 0, uv_row, 0, static_cast<int>(v.chroma_pixel_stride), scratch, 0, m,
                                       iw, 1);
      }
      break;
    }
    case PixelFormat::kYuyv: {
      uint8_t* yp = scratch + v.width * 4;
      uint8_t* up = yp + v.width;
      uint8_t* vp = up + half_up(v.width);
      libyuv::YUY2ToI422(row, 0, yp, 0, up, 0, vp, 0, iw, 1);
      libyuv::I422ToARGBMatrix(yp, 0, vp, 0, up, 0, scratch, 0, m, iw, 1);
      break;
    }
    default: break;  // not YUV: the callers convert those themselves
  }
  return scratch;
}

bool is_yuv(PixelFormat f) {
  return f == PixelFormat::kNv12 || f == PixelFormat::kNv21 || f == PixelFormat::kI420 || f == PixelFormat::kYuyv;
}

}  // namespace

// RGB out (3 per pixel) and, after it, rgba_row's RGBA (4) and YUYV's Y, U, V planes (2 + 1 for
// odd widths).
size_t rgb_row_scratch_bytes(const ImageView& v) { return v.width * 9 + 16; }

const uint8_t* rgb_row(const ImageView& v, size_t y, uint8_t* scratch) {
  const size_t w = v.width;
  const uint8_t* row = v.planes[0] + y * v.row_stride[0];
  if (is_yuv(v.format)) {  // A dropped: ARGBToRGB24 keeps the first three bytes of every four
    libyuv::ARGBToRGB24(rgba_row(v, y, scratch + w * 3), 0, scratch, 0, static_cast<int>(w), 1);
    return scratch;
  }
  switch (v.format) {
    case PixelFormat::kRgb: return row;
    case PixelFormat::kGray8:
      for (size_t x = 0; x < w; ++x) scratch[x * 3] = scratch[x * 3 + 1] = scratch[x * 3 + 2] = row[x];
      return scratch;
    default: {  // BGR, RGBA, BGRA
      const bool swap = v.format != PixelFormat::kRgba;
      const size_t step = v.format == PixelFormat::kBgr ? 3 : 4;
      for (size_t x = 0; x < w; ++x) {
        const uint8_t* px = row + x * step;
        scratch[x * 3 + 0] = px[swap ? 2 : 0];
        scratch[x * 3 + 1] = px[1];
        scratch[x * 3 + 2] = px[swap ? 0 : 2];
      }
      return scratch;
    }
  }
}

void planes_row(const ImageView& v, size_t y, uint8_t* scratch, uint8_t* planes, size_t plane_stride,
                const PlanesForm& split) {
  const size_t w = v.width;
  const uint8_t* row = v.planes[0] + y * v.row_stride[0];
  uint8_t* r = planes;
  uint8_t* g = planes + plane_stride;
  uint8_t* b = planes + 2 * plane_stride;
  switch (v.format) {
    case PixelFormat::kRgb: return split.rgb(row, w, r, g, b);
    case PixelFormat::kBgr: return split.rgb(row, w, b, g, r);
    case PixelFormat::kRgba: return split.rgba(row, w, r, g, b);
    case PixelFormat::kBgra: return split.rgba(row, w, b, g, r);
    case PixelFormat::kGray8:
      for (uint8_t* p : {r, g, b}) std::memcpy(p, row, w);
      return;
    default: return split.rgba(rgba_row(v, y, scratch), w, r, g, b);
  }
}

}  // namespace patchfuse
