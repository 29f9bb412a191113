// The runtime's resize against Debian's Pillow 9.4 and torch 1.13 (tests/fixtures/resize/
// make_resize.py): Pillow's bytes exactly, torch's within one level; the CLIP-style shortest edge
// + centre crop through frame_resize_spec; bands of rows give the same bytes as one pass.
#include "runtime/frames/resize.h"

#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "cli/npy.h"
#include "runtime/frames/preprocessing.h"

namespace patchfuse {
namespace {

const std::string kFixtures = PATCHFUSE_RESIZE_DIR;

struct Rgb {
  size_t h = 0, w = 0;
  std::vector<uint8_t> bytes;
};

Rgb load(const std::string& rel) {
  NpyArray a = read_npy(kFixtures + "/" + rel).value();
  EXPECT_EQ(a.descr, "|u1");
  EXPECT_EQ(a.shape.size(), 3u);
  return {static_cast<size_t>(a.shape[0]), static_cast<size_t>(a.shape[1]), std::move(a.bytes)};
}

// Read once: a range-for over a member of a temporary would dangle.
const nlohmann::json& cases() {
  static const nlohmann::json all = [] {
    std::ifstream in(kFixtures + "/cases.json");
    return nlohmann::json::parse(in);
  }();
  return all;
}

ImageView view(const Rgb& img) {
  ImageView v;
  v.width = img.w;
  v.height = img.h;
  v.planes[0] = img.bytes.data();
  v.row_stride[0] = img.w * 3;
  return v;
}

// Runs the resizer with the kernels of `level` over the whole frame in `bands` bands of rows, as
// threads would.
std::vector<uint8_t> resize(const Rgb& src, const ResizeSpec& spec, size_t bands = 1,
                            SimdLevel level = SimdLevel::kBaseline) {
  const Resizer r = Resizer::create(spec, frame_kernels(level)).value();
  std::vector<uint8_t> out(spec.out_h * spec.out_w * 3, 0xAB);
  const ImageView v = view(src);
  std::vector<uint8_t> scratch(r.scratch_bytes(v));
  for (size_t b = 0; b < bands; ++b) {
    const size_t begin = spec.out_h * b / bands;
    r.run(v, begin, spec.out_h * (b + 1) / bands, scratch.data(), out.data() + begin * spec.out_w * 3);
  }
  return out;
}

ResizeSpec plain(const Rgb& src, size_t h, size_t w, int resample, ResizeSemantics s) {
  ResizeSpec spec;
  spec.src_h = src.h;
  spec.src_w = src.w;
  spec.resized_h = spec.out_h = h;
  spec.resized_w = spec.out_w = w;
  spec.filter = static_cast<Resample>(resample);
  spec.semantics = s;
  return spec;
}

std::string name(const nlohmann::json& c) {
  return cat(c["source"].get<std::string>(), " -> ", c["height"].get<int>(), "x", c["width"].get<int>(), " ",
             resample_name(static_cast<Resample>(c["resample"].get<int>())));
}

// The pil tests run at every SIMD level this process has (frame_kernels_test.cc holds each form
// to the portable one; these hold every form to Pillow itself).
class ResizeAt : public ::testing::TestWithParam<SimdLevel> {
 protected:
  void SetUp() override {
    if (GetParam() > simd_level()) GTEST_SKIP() << simd_level_name(GetParam()) << ": above this process's level";
  }
};

TEST_P(ResizeAt, PilIsPillowByteForByte) {
  int checked = 0;
  for (const auto& c : cases()["cases"]) {
    const Rgb src = load("sources/" + c["source"].get<std::string>() + ".npy");
    const Rgb want = load(c["pil"].get<std::string>());
    const auto got = resize(src, plain(src, want.h, want.w, c["resample"], ResizeSemantics::kPil), 1, GetParam());
    size_t differ = 0;
    for (size_t i = 0; i < got.size(); ++i) differ += got[i] != want.bytes[i];
    EXPECT_EQ(differ, 0u) << name(c) << ": bytes that differ from Pillow's (exact match required)";
    ++checked;
  }
  EXPECT_EQ(checked, 120);  // 20 geometries x 6 filters
}

TEST(Resize, TorchIsWithinOneLevelOfTorch) {
  int checked = 0;
  for (const auto& c : cases()["cases"]) {
    if (!c.contains("torch")) continue;
    const Rgb src = load("sources/" + c["source"].get<std::string>() + ".npy");
    const Rgb want = load(c["torch"].get<std::string>());
    const auto got = resize(src, plain(src, want.h, want.w, c["resample"], ResizeSemantics::kTorch));
    int worst = 0;
    size_t differ = 0;
    for (size_t i = 0; i < got.size(); ++i) {
      worst = std::max(worst, std::abs(int{got[i]} - int{want.bytes[i]}));
      differ += got[i] != want.bytes[i];
    }
    EXPECT_LE(worst, 1) << name(c) << ": torch semantics must be within 1 level of torch";
    // Float sums in another order round differently only near .5: a handful of bytes.
    EXPECT_LE(differ, got.size() / 100 + 2) << name(c);
    ++checked;
  }
  EXPECT_EQ(checked, 60);  // 20 geometries x 3 filters
}

TEST_P(ResizeAt, ShortestEdgeAndCentreCropAreTransformers) {
  ASSERT_EQ(cases()["crops"].size(), 5u);
  for (const auto& c : cases()["crops"]) {
    const Rgb src = load("sources/" + c["source"].get<std::string>() + ".npy");
    const Rgb want = load(c["pil"].get<std::string>());
    Preprocessing p;
    p.resize = ResizeVariant::kFixed;
    p.temporal_patch_size = p.merge_size = 1;
    p.shortest_edge = c["shortest_edge"];
    p.fixed_height = c["crop_height"];
    p.fixed_width = c["crop_width"];
    p.resample = static_cast<Resample>(c["resample"].get<int>());
    const ResizeSpec spec = frame_resize_spec(p, 0, src.h, src.w).value();
    EXPECT_EQ(spec.resized_h, c["resized_height"].get<size_t>());
    EXPECT_EQ(spec.resized_w, c["resized_width"].get<size_t>());
    ASSERT_EQ(spec.out_h, want.h);
    ASSERT_EQ(spec.out_w, want.w);
    EXPECT_EQ(resize(src, spec, 1, GetParam()), want.bytes) << c["pil"].get<std::string>() << ": must equal Pillow + center_crop";
  }
}

TEST_P(ResizeAt, BandsOfRowsGiveTheSameBytes) {
  const Rgb src = load("sources/s96x128.npy");
  for (const auto s : {ResizeSemantics::kPil, ResizeSemantics::kTorch}) {
    for (const int resample : {0, 2, 3}) {
      const ResizeSpec spec = plain(src, 53, 71, resample, s);
      EXPECT_EQ(resize(src, spec, 1, GetParam()), resize(src, spec, 7, GetParam())) << resample;
    }
  }
}

std::string level_name(const ::testing::TestParamInfo<SimdLevel>& info) { return simd_level_name(info.param); }
INSTANTIATE_TEST_SUITE_P(Levels, ResizeAt, ::testing::ValuesIn(kSimdLevels), level_name);

TEST(Resize, RefusesWhatItCannotDo) {
  const Rgb src = load("sources/s30x40.npy");
  EXPECT_EQ(Resizer::create(plain(src, 0, 10, 3, ResizeSemantics::kPil)).error().code, Code::kInvalidArgument);
  EXPECT_EQ(Resizer::create(plain(src, 10, 10, 6, ResizeSemantics::kPil)).error().code, Code::kInvalidArgument);
  const auto lanczos = Resizer::create(plain(src, 10, 10, 1, ResizeSemantics::kTorch));
  ASSERT_FALSE(lanczos.ok());
  EXPECT_NE(lanczos.error().message.find("torch's interpolation has no lanczos"), std::string::npos);
  EXPECT_EQ(Resizer::create(plain(src, 1 << 16, 10, 3, ResizeSemantics::kPil)).error().code, Code::kInvalidArgument);
}

}  // namespace
}  // namespace patchfuse
