// What stb_image's decoders do not check (Debian 12's libstb): a binary PPM/PGM, a BMP or a GIF
// whose data ends before its first image does is decoded with the missing pixels padded, where
// Pillow refuses it ("image file is truncated"). Each header is read just far enough to know the
// bytes the first image needs, before the file is handed to stb_image.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace patchfuse {

struct StbFileCheck {
  // "" when the file holds all of its first image's data in a form decoded as Pillow decodes it;
  // else why not, prefixed with the path.
  std::string error;
  // GIF: Pillow's convert("RGB") gives the first image's transparent index its palette colour,
  // where stb_image leaves those pixels at alpha 0.
  bool transparent = false;
  uint8_t transparent_rgb[3] = {0, 0, 0};
};

// Checks `file` (a PPM/PGM, BMP or GIF by its signature; other files pass). Also refused, as
// stb_image would decode them otherwise than Pillow: a PNM whose maxval is not 255 and a GIF whose
// first image does not cover its logical screen.
StbFileCheck check_stb_file(const std::vector<uint8_t>& file, const std::string& path);

}  // namespace patchfuse
