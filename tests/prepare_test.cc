// pf_session_prepare: a prepared size, an unprepared size, a different size after prepare and the
// prepared size again all give exactly what a fresh session gives, on every backend and precision, for images, frames and
// pixel_values rows, in both output stages; prepare leaves the last profile alone; bad arguments
// are refused with the reason. (Its speed is shown by patchfuse-bench, not asserted here.)
#include <gtest/gtest.h>

#include <random>

#include "converter/convert.h"
#include "patchfuse/patchfuse.hpp"
#include "tests/support/test_util.h"

namespace patchfuse {
namespace {

Model convert_fixture(const std::string& out) {
  ConvertOptions o;
  o.input = std::string(PATCHFUSE_ENCODER_INPUT_DIR) + "/qwen3_vl";  // preprocessing and a position term
  o.output = out;
  auto r = convert_checkpoint(o);
  EXPECT_TRUE(r.ok()) << r.error().message;
  auto model = Model::open_file(out);
  EXPECT_TRUE(model) << model.error();
  return std::move(*model);
}

std::vector<uint8_t> random_bytes(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<uint8_t> v(n);
  for (uint8_t& b : v) b = static_cast<uint8_t>(rng() >> 24);
  return v;
}

pf_input_shape images(size_t t, int64_t h, int64_t w, pf_pixel_format format) {
  pf_input_shape s{};
  s.kind = PF_INPUT_IMAGES;
  s.t = t;
  s.height = h;
  s.width = w;
  s.format = format;
  return s;
}

// One NV12 image of h x w through `s`, its output rows.
std::vector<float> run_nv12(Session& s, const std::vector<uint8_t>& data, int64_t h, int64_t w) {
  pf_image image;
  EXPECT_EQ(pf_image_packed(&image, PF_PIXEL_NV12, data.data(), w, h), PF_OK);
  auto grid = s.images_grid(1, h, w);
  EXPECT_TRUE(grid) << grid.error();
  auto rows = s.output_rows(*grid);
  EXPECT_TRUE(rows) << rows.error();
  std::vector<float> y(static_cast<size_t>(*rows * 20));
  EXPECT_EQ(s.run_image(image, y.data()), "");
  return y;
}

TEST(Prepare, PreparedUnpreparedAndOtherSizesGiveWhatAFreshSessionGives) {
  testing::TempDir tmp;
  const Model model = convert_fixture(tmp / "m.pfb");
  const int64_t h1 = 90, w1 = 140, h2 = 61, w2 = 77;  // resized to the processor's sizes inside
  const auto nv12_1 = random_bytes(static_cast<size_t>(h1 * w1 + 2 * ((w1 + 1) / 2) * ((h1 + 1) / 2)), 1);
  const auto nv12_2 = random_bytes(static_cast<size_t>(h2 * w2 + 2 * ((w2 + 1) / 2) * ((h2 + 1) / 2)), 2);
  int ran = 0;
  for (pf_backend b : {PF_BACKEND_REFERENCE, PF_BACKEND_ONEDNN, PF_BACKEND_XNNPACK, PF_BACKEND_GEMMLOWP}) {
    for (pf_precision p : {PF_PRECISION_F32, PF_PRECISION_BF16, PF_PRECISION_F16, PF_PRECISION_INT8}) {
      for (pf_output_stage stage : {PF_OUTPUT_PATCHES, PF_OUTPUT_ENCODER_INPUT}) {
        pf_session_options o = default_options();
        o.backend = b;
        o.precision = p;
        o.output_stage = stage;
        auto prepared = Session::create(model, 0, o);
        if (!prepared) {
          EXPECT_EQ(prepared.status(), PF_UNSUPPORTED) << prepared.error();
          continue;
        }
        SCOPED_TRACE(std::string(prepared->info().detail) + (stage == PF_OUTPUT_PATCHES ? " patches" : " encoder-input"));
        auto fresh = Session::create(model, 0, o);
        ASSERT_TRUE(fresh);
        ASSERT_EQ(prepared->prepare(images(1, h1, w1, PF_PIXEL_NV12)), "");
        const pf_run_profile untouched = prepared->last_profile();
        EXPECT_EQ(untouched.kernel_ms, 0.0) << "prepare leaves the last profile as it was (no run yet)";
        EXPECT_EQ(run_nv12(*prepared, nv12_1, h1, w1), run_nv12(*fresh, nv12_1, h1, w1)) << "the prepared size";
        // setup_ms is timed only around one-time work, so "none" is exactly 0.
        EXPECT_EQ(prepared->last_profile().setup_ms, 0.0) << "the prepared size's first run did no one-time work";
        EXPECT_GT(fresh->last_profile().setup_ms, 0.0) << "an unprepared size's first run did (tables, plans, buffers)";
        EXPECT_EQ(run_nv12(*prepared, nv12_2, h2, w2), run_nv12(*fresh, nv12_2, h2, w2)) << "another size after prepare";
        EXPECT_GT(prepared->last_profile().setup_ms, 0.0) << "another size is not prepared by the first size's prepare";
        run_nv12(*prepared, nv12_2, h2, w2);
        EXPECT_EQ(prepared->last_profile().setup_ms, 0.0) << "a size already run";
        EXPECT_EQ(run_nv12(*prepared, nv12_1, h1, w1), run_nv12(*fresh, nv12_1, h1, w1)) << "back to the first size";
        EXPECT_EQ(prepared->last_profile().setup_ms, 0.0) << "back to the first size: its resize tables were kept";
        // Frames, and (not int8) pixel_values rows of a grid, prepared then run.
        pf_input_shape frames{};
        frames.kind = PF_INPUT_FRAMES;
        frames.t = 3;
        frames.height = 32;
        frames.width = 48;
        ASSERT_EQ(prepared->prepare(frames), "");
        const auto f = random_bytes(32 * 48 * 3, 3);
        const uint8_t* ptrs[3] = {f.data(), f.data(), f.data()};
        std::vector<float> y1(2 * 8 * 12 * 20), y2(y1.size());
        ASSERT_EQ(prepared->run_frames(ptrs, 3, 32, 48, 48 * 3, y1.data()), "");
        EXPECT_EQ(prepared->last_profile().setup_ms, 0.0) << "3 frames prepared: the video kernel was packed by prepare";
        ASSERT_EQ(fresh->run_frames(ptrs, 3, 32, 48, 48 * 3, y2.data()), "");
        EXPECT_EQ(y1, y2) << "3 frames";
        pf_input_shape rows{};
        rows.kind = PF_INPUT_PIXEL_VALUES;
        rows.grid = {1, 4, 6};
        if (prepared->info().precision == PF_PRECISION_INT8) {
          pf_session_prepare(prepared->get(), &rows);
          EXPECT_NE(std::string(pf_last_error()).find("int8 takes frames only"), std::string::npos);
        } else {
          ASSERT_EQ(prepared->prepare(rows), "");
          const std::vector<float> x(24 * static_cast<size_t>(model.module(0).patch_volume), 0.25f);
          auto out_rows = prepared->output_rows(rows.grid);
          ASSERT_TRUE(out_rows) << out_rows.error();
          std::vector<float> yp(static_cast<size_t>(*out_rows * 20)), yf(yp.size());
          ASSERT_EQ(prepared->run_grid(x.data(), rows.grid, yp.data()), "");
          EXPECT_EQ(prepared->last_profile().setup_ms, 0.0) << "pixel_values rows prepared: their kernel and plans too";
          ASSERT_EQ(fresh->run_grid(x.data(), rows.grid, yf.data()), "");
          EXPECT_GT(fresh->last_profile().setup_ms, 0.0) << "unprepared rows: the pixel_values kernel is packed on first use";
          EXPECT_EQ(yp, yf) << "pixel_values rows";
        }
        ++ran;
      }
    }
  }
  EXPECT_GE(ran, 2) << "the reference backend in f32 and int8 at least";
}

TEST(Prepare, BadArgumentsAreRefusedWithTheReason) {
  testing::TempDir tmp;
  const Model model = convert_fixture(tmp / "m.pfb");
  auto s = Session::create(model, 0, default_options());
  ASSERT_TRUE(s);
  const auto refused = [&](const pf_input_shape* shape, const std::string& needle) {
    EXPECT_EQ(pf_session_prepare(s->get(), shape), PF_INVALID_ARGUMENT);
    EXPECT_NE(std::string(pf_last_error()).find(needle), std::string::npos) << pf_last_error();
  };
  refused(nullptr, "must not be null");
  EXPECT_EQ(pf_session_prepare(nullptr, nullptr), PF_INVALID_ARGUMENT);
  pf_input_shape bad = images(1, 90, 140, PF_PIXEL_RGB);
  bad.kind = static_cast<pf_input_kind>(9);
  refused(&bad, "kind 9 is not a pf_input_kind");
  bad = images(1, 90, 140, static_cast<pf_pixel_format>(42));
  refused(&bad, "pixel format 42");
  bad = images(1, 0, 140, PF_PIXEL_RGB);
  refused(&bad, "must be positive");
  bad = images(0, 90, 140, PF_PIXEL_RGB);
  refused(&bad, "t = 0");
  bad = images(1, 90, 40000, PF_PIXEL_RGB);
  refused(&bad, "between 1 and 32768 per side");
  // Each side in range but 2^30 pixels: the image rule (check_image_size) is the runs' own, and
  // the size query answers the same.
  bad = images(1, 32768, 32768, PF_PIXEL_RGB);
  refused(&bad, "at most 268435456 pixels");
  pf_grid g{};
  EXPECT_EQ(pf_session_images_grid(s->get(), 1, 32768, 32768, &g), PF_INVALID_ARGUMENT);
  EXPECT_NE(std::string(pf_last_error()).find("at most 268435456 pixels"), std::string::npos) << pf_last_error();
  pf_input_shape frames{};
  frames.kind = PF_INPUT_FRAMES;
  frames.t = 1;
  frames.height = 30;  // not a multiple of patch_size * merge_size = 8
  frames.width = 48;
  EXPECT_NE(pf_session_prepare(s->get(), &frames), PF_OK);
  pf_input_shape rows{};
  rows.kind = PF_INPUT_PIXEL_VALUES;
  rows.grid = {0, 4, 4};
  refused(&rows, "must be 1 to 2^20");
  rows.grid = {1, int64_t{1} << 21, 2};
  refused(&rows, "must be 1 to 2^20");
}

// 2^32 rows of valid sides: oneDNN's plan for them divided by zero (SIGFPE) before the rule. Every
// backend refuses the size before planning it (a run passes the same check, session_sizes.cc).
TEST(Prepare, MoreRowsThanACallTakesAreRefusedOnEveryBackend) {
  testing::TempDir tmp;
  const Model model = convert_fixture(tmp / "m.pfb");
  int ran = 0;
  for (pf_backend b : {PF_BACKEND_REFERENCE, PF_BACKEND_ONEDNN, PF_BACKEND_XNNPACK}) {
    pf_session_options o = default_options();
    o.backend = b;
    o.precision = PF_PRECISION_F32;
    auto s = Session::create(model, 0, o);
    if (!s) continue;  // not in this build
    ++ran;
    pf_input_shape rows{};
    rows.kind = PF_INPUT_PIXEL_VALUES;
    rows.grid = {1, int64_t{1} << 20, 4096};
    EXPECT_EQ(pf_session_prepare(s->get(), &rows), PF_INVALID_ARGUMENT) << b;
    EXPECT_NE(std::string(pf_last_error()).find("N = 4294967296 patches in one call; at most 2^31 - 1"), std::string::npos)
        << pf_last_error();
  }
  EXPECT_GE(ran, 1);
}

}  // namespace
}  // namespace patchfuse
