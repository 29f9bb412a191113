#include "tools/stb_formats.h"

#include <cctype>
#include <cstring>

namespace patchfuse {

namespace {

uint32_t le16(const uint8_t* p) { return uint32_t{p[0]} | uint32_t{p[1]} << 8; }
uint32_t le32(const uint8_t* p) { return le16(p) | le16(p + 2) << 16; }

// Netpbm P5/P6: magic, width, height, maxval as decimal tokens (comments from '#' to the end of a
// line between them), one whitespace byte, then width * height * channels bytes (maxval 255).
std::string pnm(const std::vector<uint8_t>& f, const std::string& path) {
  size_t at = 2;
  uint64_t value[3] = {0, 0, 0};
  for (uint64_t& v : value) {
    while (at < f.size() && (std::isspace(f[at]) || f[at] == '#')) {
      if (f[at] == '#') {
        while (at < f.size() && f[at] != '\n' && f[at] != '\r') ++at;
      } else {
        ++at;
      }
    }
    if (at >= f.size() || !std::isdigit(f[at])) return path + ": truncated or corrupt PNM header (a width, height and maxval are needed)";
    for (; at < f.size() && std::isdigit(f[at]) && v < (uint64_t{1} << 40); ++at) v = v * 10 + (f[at] - '0');
  }
  if (at >= f.size() || !std::isspace(f[at])) return path + ": truncated PNM: no pixel data after the header";
  ++at;
  if (value[2] != 255) {
    return path + ": PNM maxval " + std::to_string(value[2]) + " is not supported (only 255, what Pillow writes for 8-bit images)";
  }
  const uint64_t channels = f[1] == '6' ? 3 : 1, sample = value[2] < 256 ? 1 : 2;
  if (value[0] >= (uint64_t{1} << 30) || value[1] >= (uint64_t{1} << 30)) return "";  // the pixel limit refuses it
  const uint64_t need = value[0] * value[1] * channels * sample;  // < 2^62
  if (f.size() - at < need) {
    return path + ": truncated PNM: " + std::to_string(value[0]) + "x" + std::to_string(value[1]) + " needs " +
           std::to_string(need) + " bytes of pixels, the file has " + std::to_string(f.size() - at);
  }
  return "";
}

// BMP: the file header's pixel offset, then the info header's width, height and bits per pixel;
// uncompressed rows are padded to 4 bytes. RLE-compressed files are left to stb_image (which
// refuses them).
std::string bmp(const std::vector<uint8_t>& f, const std::string& path) {
  if (f.size() < 26) return path + ": truncated BMP: " + std::to_string(f.size()) + " bytes is shorter than its headers";
  const uint64_t offset = le32(f.data() + 10), info = le32(f.data() + 14);
  uint64_t width = 0, height = 0, bits = 0, compression = 0;
  if (info == 12) {  // OS/2 BITMAPCOREHEADER
    width = le16(f.data() + 18);
    height = le16(f.data() + 20);
    bits = le16(f.data() + 24);
  } else {
    if (f.size() < 34) return path + ": truncated BMP: " + std::to_string(f.size()) + " bytes is shorter than its headers";
    width = le32(f.data() + 18);
    const auto h = static_cast<int32_t>(le32(f.data() + 22));  // negative: rows top-down
    height = h < 0 ? uint64_t{0} - static_cast<uint64_t>(static_cast<int64_t>(h)) : static_cast<uint64_t>(h);
    bits = le16(f.data() + 28);
    compression = le32(f.data() + 30);
  }
  const bool uncompressed = compression == 0 || compression == 3 || compression == 6;
  if (!uncompressed || width >= (uint64_t{1} << 31) || height >= (uint64_t{1} << 31)) return "";
  const uint64_t row = (width * bits + 31) / 32 * 4;
  const uint64_t need = offset + row * height;
  if (f.size() < need) {
    return path + ": truncated BMP: " + std::to_string(width) + "x" + std::to_string(height) + " at " + std::to_string(bits) +
           " bits needs " + std::to_string(need) + " bytes, the file has " + std::to_string(f.size());
  }
  return "";
}

// GIF: the blocks up to the end of the first image's LZW data (its zero-length sub-block); on the
// way, the first image's transparent index (its graphic control extension) and its palette.
std::string gif(const std::vector<uint8_t>& f, const std::string& path, StbFileCheck& check) {
  const std::string truncated = path + ": truncated GIF: the file ends before its first image's data does";
  size_t at = 13;
  if (f.size() < at) return truncated;
  const uint32_t screen_w = le16(f.data() + 6), screen_h = le16(f.data() + 8);
  size_t palette = 0, palette_size = 0;
  if (f[10] & 0x80) {  // global colour table
    palette = at;
    palette_size = size_t{1} << ((f[10] & 7) + 1);
    at += 3 * palette_size;
  }
  int transparent = -1;
  const auto skip_sub_blocks = [&]() -> bool {
    while (at < f.size()) {
      const size_t n = f[at++];
      if (n == 0) return true;
      at += n;
    }
    return false;
  };
  while (at < f.size()) {
    const uint8_t block = f[at++];
    if (block == 0x21) {  // extension: label, then sub-blocks; 0xF9 is the graphic control one
      if (at + 5 < f.size() && f[at] == 0xF9 && f[at + 1] == 4) transparent = f[at + 2] & 1 ? f[at + 5] : -1;
      ++at;
      if (!skip_sub_blocks()) return truncated;
    } else if (block == 0x2C) {  // image descriptor, local colour table, LZW code size, data
      if (at + 9 > f.size()) return truncated;
      const uint32_t x = le16(f.data() + at), y = le16(f.data() + at + 2), w = le16(f.data() + at + 4),
                     h = le16(f.data() + at + 6);
      const uint8_t packed = f[at + 8];
      at += 9;
      if (packed & 0x80) {
        palette = at;
        palette_size = size_t{1} << ((packed & 7) + 1);
        at += 3 * palette_size;
      }
      ++at;  // LZW minimum code size
      if (at > f.size() || !skip_sub_blocks()) return truncated;
      if (x != 0 || y != 0 || w != screen_w || h != screen_h) {
        return path + ": GIF whose first image (" + std::to_string(w) + "x" + std::to_string(h) + " at " + std::to_string(x) +
               "," + std::to_string(y) + ") does not cover its " + std::to_string(screen_w) + "x" + std::to_string(screen_h) +
               " screen: not supported";
      }
      if (transparent >= 0 && static_cast<size_t>(transparent) < palette_size) {
        check.transparent = true;
        std::memcpy(check.transparent_rgb, f.data() + palette + 3 * static_cast<size_t>(transparent), 3);
      }
      return "";
    } else if (block == 0x3B) {
      return path + ": corrupt GIF: the trailer comes before any image";
    } else {
      return path + ": corrupt GIF: unknown block 0x" + "0123456789abcdef"[block >> 4] + "0123456789abcdef"[block & 15] +
             " at offset " + std::to_string(at - 1);
    }
  }
  return truncated;
}

}  // namespace

StbFileCheck check_stb_file(const std::vector<uint8_t>& f, const std::string& path) {
  const auto starts = [&](const char* magic) { return f.size() >= std::strlen(magic) && std::memcmp(f.data(), magic, std::strlen(magic)) == 0; };
  StbFileCheck check;
  if (starts("P5") || starts("P6")) check.error = pnm(f, path);
  if (starts("BM")) check.error = bmp(f, path);
  if (starts("GIF87a") || starts("GIF89a")) check.error = gif(f, path, check);
  return check;
}

}  // namespace patchfuse
