// Image files for the tools (patchfuse-run --image/--frames, patchfuse-bench): decoded to the RGB
// bytes Hugging Face's load_image() + convert("RGB") gives with Debian's Pillow, then handed to
// the runtime, which resizes (pf_session_run_image). The runtime takes pixels, never files.
// - JPEG: libjpeg-turbo (Pillow's own decoder library) with its defaults, as Pillow decodes:
//   accurate integer IDCT, fancy upsampling; gray replicated; CMYK refused.
// - PNG: libpng, converted as Pillow converts each mode to RGB: 16-bit RGB(A) and gray+alpha by
//   their high byte, 16-bit gray clamped to 255 (Pillow's I -> RGB), 1/2/4-bit gray scaled,
//   palettes looked up, alpha dropped (not composited), interlaced images de-interlaced.
// - Binary PPM/PGM, BMP and GIF: stb_image, whose decoders for these lossless formats give the
//   same pixels. Only files with those signatures reach it: Debian builds stb with its asserts
//   on, and its JPEG decoder (which also takes 0xFF fill bytes before the SOI marker) aborted on
//   a fuzzed file (tests/fuzz/regressions/fuzz_image_decode/).
// - EXIF orientation (JPEG APP1, PNG eXIf) applied as ImageOps.exif_transpose, unless turned off.
// - A decompression-bomb guard before any pixel is allocated: Pillow refuses images over
//   2 * Image.MAX_IMAGE_PIXELS (178,956,970 pixels); so does this, unless raised.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "patchfuse/patchfuse.hpp"

namespace patchfuse {

constexpr uint64_t kDefaultMaxPixels = 2ull * 89478485;  // Pillow's DecompressionBombError threshold

struct DecodeOptions {
  bool exif = true;
  uint64_t max_pixels = kDefaultMaxPixels;
};

struct Image {
  size_t width = 0, height = 0;
  std::vector<uint8_t> bytes;  // RGB for decoded files; the raw planes for --yuv dumps
  pf_pixel_format format = PF_PIXEL_RGB;
  int orientation = 1;         // the EXIF orientation that was applied (1: none)
  pf_image view() const;       // points into `bytes`
};

// Errors name the file and the reason (truncated, corrupt, too large, unsupported).
Expected<Image> decode_image(const std::string& path, const DecodeOptions& options);

// A raw camera dump (tightly packed planes, pf_image_packed's layout): the file must hold
// exactly one frame of `format` at width x height.
Expected<Image> read_raw_image(const std::string& path, pf_pixel_format format, size_t width, size_t height);

// Writes 8-bit RGB as a PNG (atomically: nothing is left on failure). "" or the error.
std::string write_png(const std::string& path, const uint8_t* rgb, size_t width, size_t height);

// Seeded random bytes for one packed frame of `format` (benchmarks); empty for a size out of range.
Image synthetic_image(pf_pixel_format format, size_t height, size_t width, uint32_t seed);

}  // namespace patchfuse
