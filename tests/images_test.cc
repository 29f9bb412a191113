// Any image in (pf_session_run_image / _run_video / _preprocess): the processor's pixels are
// Pillow's (tests/fixtures/resize, made by Debian's Pillow 9.4), and the embeddings are the frames
// path on exactly those pixels (which frames_test checks against PyTorch). Camera pixel formats
// give what libyuv's own whole-frame conversions give, then the RGB path. And the refusals.
#include <gtest/gtest.h>

#include <libyuv/convert_argb.h>
#include <libyuv/planar_functions.h>

#include <chrono>
#include <cstdlib>
#include <random>
#include <string>

#if defined(__arm__) || defined(__aarch64__)
#include <asm/hwcap.h>
#include <sys/auxv.h>
#endif

#include "cli/npy.h"
#include "converter/convert.h"
#include "patchfuse/patchfuse.hpp"
#include "tests/support/sessions.h"
#include "tests/support/test_util.h"

namespace patchfuse {
namespace {

struct Rgb {
  int64_t h = 0, w = 0;
  std::vector<uint8_t> bytes;
};

Rgb load_rgb(const std::string& rel) {
  NpyArray a = read_npy(std::string(PATCHFUSE_RESIZE_DIR) + "/" + rel).value();
  return {a.shape[0], a.shape[1], std::move(a.bytes)};
}

pf_image packed(pf_pixel_format f, const std::vector<uint8_t>& bytes, int64_t w, int64_t h) {
  pf_image img;
  EXPECT_EQ(pf_image_packed(&img, f, bytes.data(), w, h), PF_OK) << pf_last_error();
  return img;
}

class ImagesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ConvertOptions o;
    o.input = std::string(PATCHFUSE_FRAMES_DIR) + "/qwen2_vl";
    o.output = dir_ / "m.pfb";
    model_ = testing::converted_model(o);
    ASSERT_TRUE(model_);
    auto s = testing::make_session(*model_, PF_BACKEND_REFERENCE, PF_PATH_FUSED, PF_PRECISION_F32);
    ASSERT_TRUE(s) << s.error();
    session_.emplace(std::move(*s));
  }
  std::vector<float> run_image(const pf_image& img, pf_grid* grid) {
    pf_grid g{};
    EXPECT_EQ(pf_session_images_grid(session_->get(), 1, img.height, img.width, &g), PF_OK) << pf_last_error();
    std::vector<float> out(static_cast<size_t>(g.t * g.h * g.w * model_->module(0).embed_dim));
    EXPECT_EQ(session_->run_image(img, out.data(), grid), "");
    return out;
  }
  std::vector<uint8_t> preprocess(const pf_image& img, size_t t = 1) {
    int64_t h = 0, w = 0;
    auto rgb = session_->preprocess(img, t, &h, &w);
    EXPECT_TRUE(rgb) << rgb.error();
    return rgb ? *rgb : std::vector<uint8_t>();
  }
  testing::TempDir dir_;
  std::optional<Model> model_;
  std::optional<Session> session_;
};

// The vector form of the frames loops this process should run, worked out here from the CPU and
// PATCHFUSE_MAX_CPU_ISA (the ctest variants set it) rather than asked of the runtime: x86-64 has
// AVX2 planes and gather (VBMI's with VBMI) and AVX2/AVX-512/VNNI/VBMI resizes; ARM has NEON
// for all three, and aarch64 an sdot resize ("" : none).
struct ExpectedForms {
  std::string resize, planes, gather;
};
ExpectedForms expected_forms() {
#if defined(__x86_64__)
  const char* names[] = {"", "avx2", "avx512", "avx512_vnni", "avx512_vbmi"};
  __builtin_cpu_init();
  int level = __builtin_cpu_supports("avx2") ? 1 : 0;
  if (level == 1 && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
      __builtin_cpu_supports("avx512vl")) {
    level = __builtin_cpu_supports("avx512vnni") ? 3 : 2;
  }
  if (level == 3 && __builtin_cpu_supports("avx512vbmi")) level = 4;
#else
  // aarch64 always has NEON, and ARMv8.2's dot product where AT_HWCAP says so (qemu's default CPU
  // does, a Cortex-A53 does not); armhf has NEON where AT_HWCAP says so, and never uses sdot.
  const char* names[] = {"", "neon", "neon_dotprod"};
#if defined(__aarch64__)
  int level = (getauxval(AT_HWCAP) & HWCAP_ASIMDDP) != 0 ? 2 : 1;
#else
  int level = (getauxval(AT_HWCAP) & HWCAP_NEON) != 0 ? 1 : 0;
#endif
#endif
  const char* env = std::getenv("PATCHFUSE_MAX_CPU_ISA");  // a level's name; "" is baseline's form
  const std::string cap = env ? env : "";
  for (int capped = 0; capped < level; ++capped) {
    if (cap == (capped == 0 ? "baseline" : names[capped])) level = capped;
  }
  // The planes and the gather are level 1's forms, but for VBMI's own.
  const bool vbmi = std::string(names[level]) == "avx512_vbmi";
  const char* rows = vbmi ? names[level] : level > 0 ? names[1] : "";
  return {names[level], rows, rows};
}

// The session names the loops it runs, so a run under qemu or a cap shows which forms ran (and
// the Pillow fixtures below pass with each). Qwen2-VL's processor: images pil, videos torch.
TEST_F(ImagesTest, SessionNamesTheFrameKernelsItRuns) {
  const ExpectedForms want = expected_forms();
  const auto or_portable = [](const std::string& form) { return form.empty() ? std::string("portable") : form; };
#if defined(__aarch64__)
  if (std::getenv("PATCHFUSE_MAX_CPU_ISA") == nullptr) {
    EXPECT_NE(want.resize, "") << "aarch64 always has NEON";
  }
#endif
  for (const pf_precision precision : {PF_PRECISION_F32, PF_PRECISION_INT8}) {
    auto s = testing::make_session(*model_, PF_BACKEND_REFERENCE, PF_PATH_FUSED, precision);
    ASSERT_TRUE(s) << s.error();
    const std::string resize = or_portable(want.resize);
    // int8 rows are copies from planes, or VBMI's rows straight from RGB rows.
    const std::string gather =
        precision == PF_PRECISION_INT8 && want.gather != "avx512_vbmi" ? "copy" : or_portable(want.gather);
    EXPECT_EQ(std::string(s->info().frame_kernels),
              "resize " + resize + (resize == "portable" ? "" : " (videos portable)") + ", planes " +
                  or_portable(want.planes) + ", gather " + gather);
  }
  auto rows_only = testing::converted_model([&] {
    ConvertOptions o;
    o.input = std::string(PATCHFUSE_GOLDEN_DIR) + "/qwen2_vl_f32";
    o.output = dir_ / "rows.pfb";
    return o;
  }());
  ASSERT_TRUE(rows_only);
  auto s = testing::make_session(*rows_only, PF_BACKEND_REFERENCE, PF_PATH_FUSED, PF_PRECISION_F32);
  ASSERT_TRUE(s) << s.error();
  EXPECT_STREQ(s->info().frame_kernels, "") << "no preprocessing, no frames path";
}

// 96x128 -> smart_resize 84x140 with BICUBIC: the pixels are Pillow's byte for byte, and the
// embeddings are the frames path's on Pillow's pixels, to the bit.
TEST_F(ImagesTest, AnySizeImageIsPillowsResizeThenTheFramesPath) {
  const Rgb src = load_rgb("sources/s96x128.npy");
  const Rgb pillow = load_rgb("out/s96x128_84x140_bicubic_pil.npy");
  const pf_image img = packed(PF_PIXEL_RGB, src.bytes, src.w, src.h);
  int64_t h = 0, w = 0;
  ASSERT_EQ(pf_model_frame_size(model_->get(), 0, src.h, src.w, &h, &w), PF_OK);
  ASSERT_EQ(std::make_pair(h, w), std::make_pair(pillow.h, pillow.w));
  EXPECT_EQ(preprocess(img), pillow.bytes) << "pil semantics must give Pillow's bytes";

  pf_grid grid{};
  const std::vector<float> got = run_image(img, &grid);
  EXPECT_EQ(grid.t, 1);
  EXPECT_EQ(grid.h * 14, 84);
  EXPECT_EQ(grid.w * 14, 140);
  std::vector<float> want(got.size());
  const uint8_t* frame = pillow.bytes.data();
  ASSERT_EQ(session_->run_frames(&frame, 1, 84, 140, 140 * 3, want.data()), "");
  EXPECT_EQ(got, want) << "the same pixels through the same kernel";
}

// A video's frames go through the video semantics (torch by default) a temporal pair at a time.
TEST_F(ImagesTest, VideoFramesAreResizedThenGathered) {
  const Rgb src = load_rgb("sources/s96x128.npy");
  std::vector<std::vector<uint8_t>> sources(3, src.bytes);
  for (size_t f = 1; f < 3; ++f) {
    for (auto& b : sources[f]) b = static_cast<uint8_t>(b + 37 * f);  // three different frames
  }
  std::vector<pf_image> frames;
  std::vector<std::vector<uint8_t>> resized;
  std::vector<const uint8_t*> pointers;
  for (const auto& s : sources) {
    frames.push_back(packed(PF_PIXEL_RGB, s, src.w, src.h));
    resized.push_back(preprocess(frames.back(), 3));
  }
  const Rgb torch = load_rgb("out/s96x128_84x140_bicubic_torch.npy");
  int worst = 0;
  for (size_t i = 0; i < torch.bytes.size(); ++i) worst = std::max(worst, std::abs(resized[0][i] - torch.bytes[i]));
  EXPECT_LE(worst, 1) << "video frames resize with torch's arithmetic (within one level)";
  for (const auto& r : resized) pointers.push_back(r.data());
  pf_grid grid{};
  ASSERT_EQ(pf_session_images_grid(session_->get(), 3, src.h, src.w, &grid), PF_OK);
  EXPECT_EQ(grid.t, 2);
  std::vector<float> got(static_cast<size_t>(grid.t * grid.h * grid.w * model_->module(0).embed_dim));
  std::vector<float> want(got.size());
  ASSERT_EQ(session_->run_video(frames.data(), 3, got.data()), "");
  ASSERT_EQ(session_->run_frames(pointers.data(), 3, 84, 140, 140 * 3, want.data()), "");
  EXPECT_EQ(got, want);
}

// The last run's profile has the stages that run had, each within the call's own wall time, and
// each run starts from zero: pixel_values runs only the kernel, frames gather too, images all three.
TEST_F(ImagesTest, ProfileHasTheStagesOfTheLastRun) {
  pf_run_profile p{};
  ASSERT_EQ(pf_session_last_profile(session_->get(), &p), PF_OK);
  EXPECT_EQ(p.preprocess_ms + p.gather_ms + p.kernel_ms, 0.0) << "no run yet";
  EXPECT_EQ(pf_session_last_profile(nullptr, &p), PF_INVALID_ARGUMENT);
  EXPECT_EQ(pf_session_last_profile(session_->get(), nullptr), PF_INVALID_ARGUMENT);

  const Rgb src = load_rgb("sources/s96x128.npy");
  const pf_image img = packed(PF_PIXEL_RGB, src.bytes, src.w, src.h);
  const auto wall_ms = [](const auto& f) {
    const auto start = std::chrono::steady_clock::now();
    f();
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  };
  pf_grid grid{};
  std::vector<float> out;
  const double image_ms = wall_ms([&] { out = run_image(img, &grid); });
  p = session_->last_profile();
  EXPECT_GT(p.preprocess_ms, 0.0);
  EXPECT_GT(p.gather_ms, 0.0);
  EXPECT_GT(p.kernel_ms, 0.0);
  EXPECT_LE(p.preprocess_ms + p.gather_ms + p.kernel_ms, image_ms) << "stages are parts of the call";

  const std::vector<uint8_t> rgb = preprocess(img);
  p = session_->last_profile();
  EXPECT_GT(p.preprocess_ms, 0.0);
  EXPECT_EQ(p.gather_ms + p.kernel_ms, 0.0) << "pf_session_preprocess only resizes";

  const uint8_t* frame = rgb.data();
  ASSERT_EQ(session_->run_frames(&frame, 1, 84, 140, 140 * 3, out.data()), "");
  p = session_->last_profile();
  EXPECT_EQ(p.preprocess_ms, 0.0) << "frames at the target size are not resized";
  EXPECT_GT(p.gather_ms, 0.0);
  EXPECT_GT(p.kernel_ms, 0.0);

  const size_t k = model_->module(0).patch_volume;
  std::vector<float> pixel_values(static_cast<size_t>(grid.t * grid.h * grid.w) * k, 0.5f);
  ASSERT_EQ(session_->run(pixel_values.data(), static_cast<size_t>(grid.t * grid.h * grid.w), out.data()), "");
  p = session_->last_profile();
  EXPECT_EQ(p.preprocess_ms + p.gather_ms, 0.0) << "pixel_values go straight to the kernel";
  EXPECT_GT(p.kernel_ms, 0.0);
}

// YUV through libyuv's whole-frame conversions with the plain matrices (an independent route from
// the runtime's row-by-row calls with swapped chroma), then the RGB path: the same bytes.
TEST_F(ImagesTest, YuvIsLibyuvsConversionThenTheRgbPath) {
  const int w = 37, h = 23, cw = 19, ch = 12;  // odd sizes: chroma rounds up
  std::mt19937 rng(7);
  std::vector<uint8_t> y(w * h), u(cw * ch), v(cw * ch);
  for (auto* p : {&y, &u, &v}) {
    for (auto& b : *p) b = static_cast<uint8_t>(rng());
  }
  std::vector<uint8_t> uv(cw * ch * 2), vu(cw * ch * 2), yuyv(static_cast<size_t>(cw) * 4 * h);
  for (int i = 0; i < cw * ch; ++i) {
    uv[2 * i] = vu[2 * i + 1] = u[i];
    uv[2 * i + 1] = vu[2 * i] = v[i];
  }
  for (int r = 0; r < h; ++r) {  // 4:2:2 from the 4:2:0 chroma of row r / 2
    for (int c = 0; c < cw; ++c) {
      uint8_t* px = &yuyv[(static_cast<size_t>(r) * cw + c) * 4];
      px[0] = y[r * w + 2 * c];
      px[1] = u[(r / 2) * cw + c];
      px[2] = 2 * c + 1 < w ? y[r * w + 2 * c + 1] : y[r * w + 2 * c];
      px[3] = v[(r / 2) * cw + c];
    }
  }
  const struct {
    pf_color_matrix matrix;
    const libyuv::YuvConstants* yuv;
  } matrices[] = {{PF_COLOR_BT601_FULL, &libyuv::kYuvJPEGConstants},
                  {PF_COLOR_BT601_LIMITED, &libyuv::kYuvI601Constants},
                  {PF_COLOR_BT709_LIMITED, &libyuv::kYuvH709Constants}};
  for (const auto& m : matrices) {
    // libyuv's "ARGB" is B, G, R, A in memory.
    std::vector<uint8_t> argb(w * h * 4), rgb(w * h * 3);
    const auto to_rgb = [&] {
      for (int i = 0; i < w * h; ++i) {
        rgb[3 * i] = argb[4 * i + 2];
        rgb[3 * i + 1] = argb[4 * i + 1];
        rgb[3 * i + 2] = argb[4 * i];
      }
      return preprocess(packed(PF_PIXEL_RGB, rgb, w, h));
    };
    pf_image img{};
    img.matrix = m.matrix;
    img.width = w;
    img.height = h;
    // NV12 with padded strides.
    std::vector<uint8_t> y_pad(static_cast<size_t>(w + 5) * h), uv_pad(static_cast<size_t>(cw * 2 + 3) * ch);
    for (int r = 0; r < h; ++r) std::copy(&y[r * w], &y[r * w] + w, &y_pad[r * (w + 5)]);
    for (int r = 0; r < ch; ++r) std::copy(&uv[r * cw * 2], &uv[r * cw * 2] + cw * 2, &uv_pad[r * (cw * 2 + 3)]);
    libyuv::NV12ToARGBMatrix(y.data(), w, uv.data(), cw * 2, argb.data(), w * 4, m.yuv, w, h);
    const auto want = to_rgb();
    img.format = PF_PIXEL_NV12;
    img.planes[0] = y_pad.data();
    img.row_stride_bytes[0] = w + 5;
    img.planes[1] = uv_pad.data();
    img.row_stride_bytes[1] = cw * 2 + 3;
    EXPECT_EQ(preprocess(img), want) << "nv12, matrix " << m.matrix;
    EXPECT_EQ(run_image(img, nullptr), run_image(packed(PF_PIXEL_RGB, rgb, w, h), nullptr)) << "nv12 embeddings";

    img.format = PF_PIXEL_NV21;
    img.planes[1] = vu.data();
    img.row_stride_bytes[1] = cw * 2;
    EXPECT_EQ(preprocess(img), want) << "nv21, matrix " << m.matrix;

    libyuv::I420ToARGBMatrix(y.data(), w, u.data(), cw, v.data(), cw, argb.data(), w * 4, m.yuv, w, h);
    EXPECT_EQ(to_rgb(), want) << "libyuv's own I420 and NV12 agree";
    img.format = PF_PIXEL_I420;
    img.planes[0] = y.data();
    img.row_stride_bytes[0] = w;
    img.planes[1] = u.data();
    img.planes[2] = v.data();
    img.row_stride_bytes[1] = img.row_stride_bytes[2] = cw;
    EXPECT_EQ(preprocess(img), want) << "i420, matrix " << m.matrix;
    // Android YUV_420_888 semi-planar: U and V interleaved, pixel stride 2.
    img.planes[1] = uv.data();
    img.planes[2] = uv.data() + 1;
    img.row_stride_bytes[1] = img.row_stride_bytes[2] = cw * 2;
    img.chroma_pixel_stride = 2;
    EXPECT_EQ(preprocess(img), want) << "i420 with chroma pixel stride 2, matrix " << m.matrix;
    img.chroma_pixel_stride = 0;

    std::vector<uint8_t> y422(w * h), u422(cw * h), v422(cw * h);
    libyuv::YUY2ToI422(yuyv.data(), cw * 4, y422.data(), w, u422.data(), cw, v422.data(), cw, w, h);
    libyuv::I422ToARGBMatrix(y422.data(), w, u422.data(), cw, v422.data(), cw, argb.data(), w * 4, m.yuv, w, h);
    EXPECT_EQ(to_rgb(), want) << "libyuv's own 4:2:2 conversion of the same samples agrees";
    pf_image yuy2 = packed(PF_PIXEL_YUYV, yuyv, w, h);
    yuy2.matrix = m.matrix;
    EXPECT_EQ(preprocess(yuy2), want) << "yuyv, matrix " << m.matrix;
  }
}

// Interleaved formats as Pillow's convert("RGB") treats them: alpha dropped, gray replicated.
TEST_F(ImagesTest, InterleavedFormatsAreConvertRgb) {
  const Rgb src = load_rgb("sources/s33x47.npy");
  const size_t n = static_cast<size_t>(src.h * src.w);
  std::vector<uint8_t> bgr(n * 3), rgba(n * 4), bgra(n * 4), gray(n), gray_rgb(n * 3);
  for (size_t i = 0; i < n; ++i) {
    const uint8_t* p = &src.bytes[3 * i];
    bgr[3 * i] = p[2], bgr[3 * i + 1] = p[1], bgr[3 * i + 2] = p[0];
    rgba[4 * i] = p[0], rgba[4 * i + 1] = p[1], rgba[4 * i + 2] = p[2], rgba[4 * i + 3] = static_cast<uint8_t>(i);
    bgra[4 * i] = p[2], bgra[4 * i + 1] = p[1], bgra[4 * i + 2] = p[0], bgra[4 * i + 3] = static_cast<uint8_t>(i * 7);
    gray[i] = p[1];
    gray_rgb[3 * i] = gray_rgb[3 * i + 1] = gray_rgb[3 * i + 2] = p[1];
  }
  const auto want = preprocess(packed(PF_PIXEL_RGB, src.bytes, src.w, src.h));
  EXPECT_EQ(preprocess(packed(PF_PIXEL_BGR, bgr, src.w, src.h)), want);
  EXPECT_EQ(preprocess(packed(PF_PIXEL_RGBA, rgba, src.w, src.h)), want);
  EXPECT_EQ(preprocess(packed(PF_PIXEL_BGRA, bgra, src.w, src.h)), want);
  EXPECT_EQ(preprocess(packed(PF_PIXEL_GRAY8, gray, src.w, src.h)),
            preprocess(packed(PF_PIXEL_RGB, gray_rgb, src.w, src.h)));
}

TEST_F(ImagesTest, BadImagesAreRefusedWithTheRule) {
  const Rgb src = load_rgb("sources/s30x40.npy");
  std::vector<float> out(1 << 20);
  const auto refused = [&](pf_image img, const std::string& needle) {
    EXPECT_EQ(pf_session_run_image(session_->get(), &img, out.data(), nullptr), PF_INVALID_ARGUMENT) << needle;
    EXPECT_NE(std::string(pf_last_error()).find(needle), std::string::npos) << pf_last_error();
  };
  pf_image img = packed(PF_PIXEL_RGB, src.bytes, src.w, src.h);
  pf_image bad = img;
  bad.format = static_cast<pf_pixel_format>(42);
  refused(bad, "pixel format 42");
  bad = img;
  bad.matrix = static_cast<pf_color_matrix>(-1);
  refused(bad, "colour matrix -1");
  bad = img;
  bad.row_stride_bytes[0] = src.w * 3 - 1;
  refused(bad, "row stride 119 of plane 0 is less than the 120 bytes");
  bad = img;
  bad.width = 0;
  refused(bad, "image size 0x30");
  bad = img;
  bad.planes[0] = nullptr;
  refused(bad, "plane 0 of a rgb image is null");
  bad = img;
  bad.format = PF_PIXEL_NV12;
  refused(bad, "plane 1 of a nv12 image is null");
  bad = img;
  bad.width = 40000;
  bad.row_stride_bytes[0] = 120000;
  refused(bad, "must be between 1 and 32768 per side");
  bad = img;
  bad.format = PF_PIXEL_I420;
  bad.planes[1] = bad.planes[2] = src.bytes.data();
  bad.row_stride_bytes[1] = bad.row_stride_bytes[2] = 64;
  bad.chroma_pixel_stride = 3;
  refused(bad, "chroma pixel stride 3 must be 1 or 2");
  EXPECT_EQ(pf_session_run_image(session_->get(), nullptr, out.data(), nullptr), PF_INVALID_ARGUMENT);
  EXPECT_EQ(pf_session_run_video(session_->get(), &img, 0, out.data(), nullptr), PF_INVALID_ARGUMENT);
  pf_image two[2] = {img, img};
  two[1].height = 20;
  EXPECT_EQ(pf_session_run_video(session_->get(), two, 2, out.data(), nullptr), PF_INVALID_ARGUMENT);
  EXPECT_NE(std::string(pf_last_error()).find("a video's frames share one size and format"), std::string::npos);
  int64_t h = 0, w = 0;
  uint8_t small[16];
  EXPECT_EQ(pf_session_preprocess(session_->get(), &img, 1, small, sizeof small, &h, &w), PF_INVALID_ARGUMENT);
  EXPECT_GT(h * w, 0) << "the size is written even when the buffer is too small";
  EXPECT_NE(std::string(pf_last_error()).find("capacity is 16"), std::string::npos) << pf_last_error();
  std::vector<uint8_t> wide(200 * 3 + 1, 0);  // aspect ratio 200:1 -> refused by smart_resize
  pf_image strip = packed(PF_PIXEL_RGB, wide, 201, 1);
  EXPECT_EQ(pf_session_run_image(session_->get(), &strip, out.data(), nullptr), PF_INVALID_ARGUMENT);
  EXPECT_NE(std::string(pf_last_error()).find("aspect ratio above 200"), std::string::npos) << pf_last_error();
}

}  // namespace
}  // namespace patchfuse
