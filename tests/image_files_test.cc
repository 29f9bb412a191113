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
  ASSERT_EQ(cases()["decode"].size(), 21u);
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
