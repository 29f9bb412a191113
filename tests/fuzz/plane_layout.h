// The bytes each plane of an image takes, written from patchfuse.h's pf_pixel_format comment (not
// from the runtime's own table, which is what the fuzzers check): per plane, its rows and the
// bytes one row holds (the least row stride). The fuzzers size each plane's buffer with it,
// exactly, so that AddressSanitizer sees a read past the last row.
#pragma once

#include <cstdint>

namespace patchfuse::fuzz {

struct PlaneLayout {
  int planes = 0;  // 0: not a pixel format
  uint64_t rows[3] = {0, 0, 0};
  uint64_t row_bytes[3] = {0, 0, 0};
};

// `format` is a pf_pixel_format's value; `chroma_pixel_stride` I420's (1 or 2).
inline PlaneLayout plane_layout(int format, uint64_t width, uint64_t height, uint64_t chroma_pixel_stride) {
  const uint64_t cw = (width + 1) / 2, ch = (height + 1) / 2;  // odd sizes round the chroma up
  switch (format) {
    case 0: case 1: return {1, {height}, {width * 3}};  // RGB, BGR
    case 2: case 3: return {1, {height}, {width * 4}};  // RGBA, BGRA
    case 4: return {1, {height}, {width}};              // GRAY8
    case 5: case 6: return {2, {height, ch}, {width, cw * 2}};  // NV12, NV21: Y, then interleaved chroma
    case 7: {                                                  // I420: samples chroma_pixel_stride apart
      const uint64_t c = (cw - 1) * chroma_pixel_stride + 1;
      return {3, {height, ch, ch}, {width, c, c}};
    }
    case 8: return {1, {height}, {cw * 4}};  // YUYV: Y0 U Y1 V per pixel pair
    default: return {};
  }
}

}  // namespace patchfuse::fuzz
