// The tools' image decoding against Debian's Pillow 9.4 (tests/fixtures/images/make_images.py):
// every JPEG and PNG variant decodes to exactly the pixels Pillow's Image.open +
// ImageOps.exif_transpose + convert("RGB") gives; broken and oversized files are refused with
// the file and the reason; raw camera dumps must hold exactly one frame.
#include "tools/image_files.h"

#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "cli/npy.h"
#include "tests/support/test_util.h"

namespace patchfuse {
namespace {

const std::string kDir = std::string(PATCHFUSE_IMAGES_DIR);

const nlohmann::json& cases() {
  static const nlohmann::json all = [] {
    std::ifstream in(kDir + "/cases.json");
    return nlohmann::json::parse(in);
  }();
  return all;
}

std::vector<uint8_t> pillow_pixels(const std::string& file) {
  return read_npy(kDir + "/decode/" + file + ".npy").value().bytes;
}

TEST(ImageFiles, EveryVariantDecodesToPillowsPixels) {
  ASSERT_EQ(cases()["decode"].size(), 33u);
  for (const auto& c : cases()["decode"]) {
    const std::string file = c["file"];
    auto img = decode_image(kDir + "/decode/" + file, DecodeOptions());
    ASSERT_TRUE(img) << img.error();
    EXPECT_EQ(img->height, c["height"].get<size_t>()) << file;
    EXPECT_EQ(img->width, c["width"].get<size_t>()) << file;
    const std::vector<uint8_t> want = pillow_pixels(file);
    size_t differ = 0;
    for (size_t i = 0; i < std::min(want.size(), img->bytes.size()); ++i) differ += want[i] != img->bytes[i];
    EXPECT_EQ(img->bytes.size(), want.size()) << file;
    EXPECT_EQ(differ, 0u) << file << " (Pillow mode " << c["pillow_mode"] << "): bytes that differ from Pillow's";
  }
}

TEST(ImageFiles, ExifOrientationIsAppliedUnlessTurnedOff) {
  for (int o = 1; o <= 8; ++o) {
    auto img = decode_image(kDir + "/decode/exif_" + std::to_string(o) + ".jpg", DecodeOptions());
    ASSERT_TRUE(img) << img.error();
    EXPECT_EQ(img->orientation, o);
    DecodeOptions raw;
    raw.exif = false;
    auto plain = decode_image(kDir + "/decode/exif_" + std::to_string(o) + ".jpg", raw);
    ASSERT_TRUE(plain) << plain.error();
    EXPECT_EQ(plain->orientation, 1);
    EXPECT_EQ(plain->bytes, pillow_pixels("exif_1.jpg")) << "orientation " << o << " without EXIF: the stored pixels";
  }
}

TEST(ImageFiles, BrokenFilesAreRefusedWithTheReason) {
  testing::TempDir dir;
  const auto refused = [&](const std::string& path, const DecodeOptions& o, const std::string& needle) {
    auto img = decode_image(path, o);
    ASSERT_FALSE(img) << path;
    EXPECT_NE(img.error().find(path), std::string::npos) << img.error();
    EXPECT_NE(img.error().find(needle), std::string::npos) << img.error();
  };
  for (const char* name : {"jpeg_420.jpg", "jpeg_progressive.jpg", "png_rgba.png", "png_interlaced.png"}) {
    std::vector<uint8_t> bytes = testing::read_bytes(kDir + "/decode/" + name);
    bytes.resize(bytes.size() * 2 / 3);
    testing::write_bytes(dir / name, bytes);
    refused(dir / name, DecodeOptions(), "truncated");
  }
  // PPM, PGM, BMP and GIF as Pillow saves them, cut short: stb_image would pad the missing pixels
  // (the image files issue); each is refused as Pillow refuses it, at any cut inside the pixels
  // (a GIF's last two bytes are its data's terminator and the trailer. Without the trailer Pillow
  // still reads the first frame, and so do we; without the terminator too, Pillow reads it when
  // the LZW codes already ended, while we refuse it: stricter, never a wrong picture).
  for (const char* name : {"ppm_rgb.ppm", "pgm_gray.pgm", "bmp_rgb.bmp", "gif_palette.gif"}) {
    const std::vector<uint8_t> whole = testing::read_bytes(kDir + "/decode/" + name);
    // One byte short too (a PNM or BMP's last pixel byte; a GIF's trailer, which Pillow does not need).
    const bool gif = std::string(name).find(".gif") != std::string::npos;
    for (size_t keep : {whole.size() / 2, whole.size() - 2, gif ? whole.size() - 2 : whole.size() - 1, size_t{30}}) {
      SCOPED_TRACE(std::string(name) + " cut to " + std::to_string(keep) + " bytes");
      testing::write_bytes(dir / name, std::vector<uint8_t>(whole.begin(), whole.begin() + static_cast<std::ptrdiff_t>(keep)));
      refused(dir / name, DecodeOptions(), "truncated");
    }
  }
  // A GIF whose blocks are all there but whose LZW data stops halfway (half its data sub-blocks,
  // then the terminator and the trailer): Pillow says "image file is truncated", and so do we.
  {
    const std::vector<uint8_t> g = testing::read_bytes(kDir + "/decode/gif_palette.gif");
    size_t at = 13 + (g[10] & 0x80 ? size_t{3} << ((g[10] & 7) + 1) : 0);
    while (g[at] == 0x21) {  // extensions
      for (at += 2; g[at] != 0; at += 1 + g[at]) {}
      ++at;
    }
    ASSERT_EQ(g[at], 0x2C);
    at += 10 + (g[at + 9] & 0x80 ? size_t{3} << ((g[at + 9] & 7) + 1) : 0) + 1;
    std::vector<size_t> blocks;
    for (; g[at] != 0; at += 1 + g[at]) blocks.push_back(at);
    std::vector<uint8_t> cut(g.begin(), g.begin() + static_cast<std::ptrdiff_t>(blocks[blocks.size() / 2]));
    cut.push_back(0);
    cut.push_back(0x3B);
    testing::write_bytes(dir / "short_lzw.gif", cut);
    refused(dir / "short_lzw.gif", DecodeOptions(), "truncated GIF: its image data covers");
  }
  testing::write_text(dir / "empty.ppm", "P6\n0 0\n255\n");
  refused(dir / "empty.ppm", DecodeOptions(), "empty.ppm");
  // WebP cut short, or with its RIFF header damaged, is refused by libwebp's demuxer.
  for (const char* name : {"webp_lossy.webp", "webp_lossless.webp", "webp_alpha.webp", "webp_animated.webp"}) {
    const std::vector<uint8_t> whole = testing::read_bytes(kDir + "/decode/" + name);
    for (size_t keep : {whole.size() / 2, whole.size() - 1, size_t{20}}) {
      SCOPED_TRACE(std::string(name) + " cut to " + std::to_string(keep) + " bytes");
      testing::write_bytes(dir / name, std::vector<uint8_t>(whole.begin(), whole.begin() + static_cast<std::ptrdiff_t>(keep)));
      refused(dir / name, DecodeOptions(), "truncated WebP");
    }
  }
  std::vector<uint8_t> webp = testing::read_bytes(kDir + "/decode/webp_lossy.webp");
  webp[12] = 'X';  // the first chunk's tag (VP8 ) becomes unknown
  testing::write_bytes(dir / "tag.webp", webp);
  refused(dir / "tag.webp", DecodeOptions(), "corrupt or truncated WebP");
  // A WebP header claiming more pixels than the limit is refused from its header.
  DecodeOptions tiny;
  tiny.max_pixels = 100;
  refused(kDir + "/decode/webp_lossy.webp", tiny, "2745 pixels exceeds the limit of 100");
  // Corrupt files of the other formats: a JPEG whose segments are noise, a BMP with 7 bits per
  // pixel, a PPM whose header is not numbers.
  std::vector<uint8_t> jpeg = testing::read_bytes(kDir + "/decode/jpeg_420.jpg");
  for (size_t i = 4; i < jpeg.size(); ++i) jpeg[i] = static_cast<uint8_t>(i * 131 % 251);
  testing::write_bytes(dir / "noise.jpg", jpeg);
  refused(dir / "noise.jpg", DecodeOptions(), "corrupt or truncated JPEG");
  std::vector<uint8_t> bmp = testing::read_bytes(kDir + "/decode/bmp_rgb.bmp");
  bmp[28] = 7;  // biBitCount
  testing::write_bytes(dir / "bpp.bmp", bmp);
  refused(dir / "bpp.bmp", DecodeOptions(), "bpp.bmp");
  testing::write_text(dir / "words.ppm", "P6\nab cd\n255\n");
  refused(dir / "words.ppm", DecodeOptions(), "truncated or corrupt PNM header");
  // A PNM with another maxval would be scaled otherwise than by Pillow: refused, with the value.
  testing::write_text(dir / "deep.pgm", "P5\n1 1\n65535\n\x01\x02");
  refused(dir / "deep.pgm", DecodeOptions(), "PNM maxval 65535 is not supported");
  std::vector<uint8_t> gif = testing::read_bytes(kDir + "/decode/gif_palette.gif");
  const size_t first_block = 13 + (gif[10] & 0x80 ? size_t{3} << ((gif[10] & 7) + 1) : 0);
  gif[first_block] = 0x77;  // neither an extension, an image nor the trailer
  testing::write_bytes(dir / "block.gif", gif);
  refused(dir / "block.gif", DecodeOptions(), "corrupt GIF: unknown block 0x77");
  std::vector<uint8_t> png = testing::read_bytes(kDir + "/decode/png_rgba.png");
  png[png.size() / 2] ^= 0x5A;  // inside IDAT: a CRC mismatch
  testing::write_bytes(dir / "flipped.png", png);
  refused(dir / "flipped.png", DecodeOptions(), "corrupt or truncated PNG");
  refused(kDir + "/decode/refused_cmyk.jpg", DecodeOptions(), "CMYK JPEGs are not supported");
  testing::write_text(dir / "text.png", "not an image");
  refused(dir / "text.png", DecodeOptions(), "not an image this tool decodes");
  refused(dir / "missing.jpg", DecodeOptions(), "cannot open");
  DecodeOptions small;
  small.max_pixels = 2744;  // 45 x 61 = 2745 pixels
  for (const char* name : {"jpeg_420.jpg", "png_rgba.png"}) {
    refused(kDir + "/decode/" + name, small, "2745 pixels exceeds the limit of 2744");
  }
  // A PPM header claiming 100000 x 100000 is refused before any pixel is allocated.
  testing::write_text(dir / "bomb.ppm", "P6\n100000 100000\n255\n");
  refused(dir / "bomb.ppm", DecodeOptions(), "10000000000 pixels exceeds the limit of 178956970");
  // So are a GIF screen of 65535 x 65535 and a BMP of 100000 x 100000, from their headers alone.
  testing::write_bytes(dir / "bomb.gif", {'G', 'I', 'F', '8', '9', 'a', 0xFF, 0xFF, 0xFF, 0xFF, 0, 0, 0, 0x3B});
  refused(dir / "bomb.gif", DecodeOptions(), "4294836225 pixels exceeds the limit");
  std::vector<uint8_t> bomb_bmp = testing::read_bytes(kDir + "/decode/bmp_rgb.bmp");
  bomb_bmp.resize(54);
  for (size_t at : {18, 22}) {  // biWidth, biHeight = 100000
    bomb_bmp[at] = 0xA0, bomb_bmp[at + 1] = 0x86, bomb_bmp[at + 2] = 0x01, bomb_bmp[at + 3] = 0;
  }
  testing::write_bytes(dir / "bomb.bmp", bomb_bmp);
  refused(dir / "bomb.bmp", DecodeOptions(), "10000000000 pixels exceeds the limit of 178956970");
}

TEST(ImageFiles, RawDumpsHoldExactlyOneFrame) {
  testing::TempDir dir;
  testing::write_bytes(dir / "f.nv12", std::vector<uint8_t>(5 * 3 + 3 * 2 * 2, 7));  // 5x3: Y 15 bytes, UV 2 rows of 3 pairs
  auto ok = read_raw_image(dir / "f.nv12", PF_PIXEL_NV12, 5, 3);
  ASSERT_TRUE(ok) << ok.error();
  EXPECT_EQ(ok->view().row_stride_bytes[1], 6);
  auto bad = read_raw_image(dir / "f.nv12", PF_PIXEL_NV12, 6, 3);
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().find("27 bytes, but one packed 6x3 frame of this format is 30 bytes"), std::string::npos) << bad.error();
}

TEST(ImageFiles, WrittenPngsDecodeToTheSamePixels) {
  testing::TempDir dir;
  const std::vector<uint8_t> rgb = pillow_pixels("jpeg_444.jpg");
  ASSERT_EQ(write_png(dir / "w.png", rgb.data(), 61, 45), "");
  auto back = decode_image(dir / "w.png", DecodeOptions());
  ASSERT_TRUE(back) << back.error();
  EXPECT_EQ(back->bytes, rgb);
  EXPECT_NE(write_png(dir / "no/such/dir/w.png", rgb.data(), 61, 45), "");
}

}  // namespace
}  // namespace patchfuse
