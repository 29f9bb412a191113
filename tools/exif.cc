#include "tools/exif.h"

namespace patchfuse {

namespace {

struct Reader {
  const uint8_t* p;
  size_t size;
  bool little;
  bool has(size_t at, size_t n) const { return at <= size && n <= size - at; }
  uint32_t u16(size_t at) const { return little ? p[at] | p[at + 1] << 8 : p[at] << 8 | p[at + 1]; }
  uint32_t u32(size_t at) const {
    return little ? u16(at) | u16(at + 2) << 16 : u16(at) << 16 | u16(at + 2);
  }
};

}  // namespace

int exif_orientation(const uint8_t* tiff, size_t size) {
  if (tiff == nullptr || size < 8) return 1;
  Reader r{tiff, size, tiff[0] == 'I'};
  if (!((tiff[0] == 'I' && tiff[1] == 'I') || (tiff[0] == 'M' && tiff[1] == 'M')) || r.u16(2) != 42) return 1;
  const size_t ifd = r.u32(4);
  if (!r.has(ifd, 2)) return 1;
  const size_t entries = r.u16(ifd);
  for (size_t i = 0; i < entries; ++i) {
    const size_t e = ifd + 2 + i * 12;
    if (!r.has(e, 12)) return 1;
    if (r.u16(e) != 0x0112) continue;
    // SHORT (3), count 1: the value sits in the first two bytes of the value field.
    const uint32_t type = r.u16(e + 2), count = r.u32(e + 4);
    if (type != 3 || count < 1) return 1;
    const uint32_t v = r.u16(e + 8);
    return v >= 1 && v <= 8 ? static_cast<int>(v) : 1;
  }
  return 1;
}

void apply_orientation(int orientation, size_t& width, size_t& height, std::vector<uint8_t>& rgb) {
  if (orientation < 2 || orientation > 8) return;
  const size_t w = width, h = height;
  const bool swap = orientation >= 5;
  const size_t ow = swap ? h : w, oh = swap ? w : h;
  std::vector<uint8_t> out(rgb.size());
  for (size_t y = 0; y < oh; ++y) {
    for (size_t x = 0; x < ow; ++x) {
      size_t sx = 0, sy = 0;  // the source pixel of output (x, y)
      switch (orientation) {
        case 2: sx = w - 1 - x, sy = y; break;          // FLIP_LEFT_RIGHT
        case 3: sx = w - 1 - x, sy = h - 1 - y; break;  // ROTATE_180
        case 4: sx = x, sy = h - 1 - y; break;          // FLIP_TOP_BOTTOM
        case 5: sx = y, sy = x; break;                  // TRANSPOSE
        case 6: sx = y, sy = h - 1 - x; break;          // ROTATE_270 (90 clockwise)
        case 7: sx = w - 1 - y, sy = h - 1 - x; break;  // TRANSVERSE
        case 8: sx = w - 1 - y, sy = x; break;          // ROTATE_90 (counter-clockwise)
      }
      const uint8_t* s = &rgb[(sy * w + sx) * 3];
      uint8_t* d = &out[(y * ow + x) * 3];
      d[0] = s[0], d[1] = s[1], d[2] = s[2];
    }
  }
  rgb.swap(out);
  width = ow;
  height = oh;
}

}  // namespace patchfuse
