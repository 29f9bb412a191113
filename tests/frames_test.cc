// The frames path against PyTorch: uint8 frames through pf_session_run_frames on every backend,
// path and precision, compared with nn.Conv3d on the pixel_values that a NumPy copy of Hugging
// Face's processor made from the same frames (tests/fixtures/frames/make_frames.py). Also the
// gather order itself, strided and page-boundary frames, and the refusals.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <cmath>
#include <cstring>

#include "converter/convert.h"
#include "patchfuse/patchfuse.hpp"
#include "runtime/frames/gather.h"
#include "runtime/frames/weight_transforms.h"
#include "runtime/model/model_file.h"
#include "tests/support/model_builder.h"
#include "tests/support/sessions.h"
#include "tests/support/test_util.h"
#include "tests/support/tolerance.h"
#include "cli/npy.h"

namespace patchfuse {
namespace {

const std::string kFixtures = PATCHFUSE_FRAMES_DIR;
const char* const kCases[] = {"still", "video3", "video4"};

struct Frames {
  size_t t = 0, height = 0, width = 0;
  std::vector<uint8_t> bytes;  // [t, height, width, 3]
  std::vector<const uint8_t*> pointers() const {
    std::vector<const uint8_t*> p;
    for (size_t f = 0; f < t; ++f) p.push_back(bytes.data() + f * height * width * 3);
    return p;
  }
};

Frames load_frames(const std::string& preset, const std::string& c) {
  NpyArray a = read_npy(kFixtures + "/" + preset + "/frames_" + c + ".npy").value();
  EXPECT_EQ(a.descr, "|u1");
  Frames f;
  f.t = static_cast<size_t>(a.shape[0]);
  f.height = static_cast<size_t>(a.shape[1]);
  f.width = static_cast<size_t>(a.shape[2]);
  f.bytes = std::move(a.bytes);
  return f;
}

std::vector<double> load(const std::string& preset, const std::string& what, const std::string& c) {
  return read_npy(kFixtures + "/" + preset + "/" + what + "_" + c + ".npy").value().to_double();
}

class FramesTest : public ::testing::TestWithParam<const char*> {
 protected:
  void SetUp() override {
    ConvertOptions o;
    o.input = kFixtures + "/" + GetParam();
    o.output = dir_ / "m.pfb";
    model_ = testing::converted_model(o);
    ASSERT_TRUE(model_);
    ASSERT_EQ(model_->module(0).has_preprocessing, 1);
  }
  Expected<Session> session(pf_backend b, pf_path path, pf_precision p, int threads = 1) const {
    return testing::make_session(*model_, b, path, p, 0, threads);
  }
  testing::TempDir dir_;
  std::optional<Model> model_;
};

// Gathered rows, normalized the way the processor does, are the processor's pixel_values: the row
// order (merge groups), the column order (c, t, y, x), the still-image repeat and the video padding.
TEST_P(FramesTest, GatherOrderIsHuggingFaces) {
  auto file = open_model_file(dir_ / "m.pfb");
  ASSERT_TRUE(file.ok());
  const ModuleView& m = file->view.modules[0];
  const Preprocessing& p = *m.preprocessing;
  const int64_t C = 3, T = p.temporal_patch_size, PP = p.patch_size * p.patch_size;
  // Every SIMD level this process has: the plane split and row forms of each, or its rows straight
  // from RGB rows (frame_kernels_test.cc holds them to the portable forms; this to the processor).
  for (const SimdLevel level : kSimdLevels) {
    if (level > simd_level()) continue;
    const FrameKernels& forms = frame_kernels(level);
    for (const char* c : kCases) {
      SCOPED_TRACE(cat(c, " at ", simd_level_name(level)));
      const Frames f = load_frames(GetParam(), c);
      const std::vector<double> pv = load(GetParam(), "pixel_values", c);
      const FrameGrid g = frame_grid(p, f.t, f.height, f.width).value();
      const bool still = f.t == 1;
      const int64_t k = still ? C * PP : C * T * PP;
      std::vector<float> rows(static_cast<size_t>(g.rows() * k));
      const int64_t blocks = gather_block_count(g, p);
      gather_rows(f.pointers().data(), f.t, f.width * 3, 0, g, p, C, still, 0, blocks, rows.data(), forms);
      // Block by block, in reverse (as threads may finish), each from copies of only the image rows
      // it covers, as the images path gathers from resized bands (first_row): the same rows.
      std::vector<float> by_block(rows.size(), -1.0f);
      const size_t stride = f.width * 3, band = static_cast<size_t>(p.merge_size * p.patch_size);
      for (int64_t b = blocks - 1; b >= 0; --b) {
        const size_t y0 = static_cast<size_t>(b % (blocks / g.t)) * band;
        std::vector<std::vector<uint8_t>> bands;
        std::vector<const uint8_t*> band_pointers;
        for (const uint8_t* frame : f.pointers()) bands.emplace_back(frame + y0 * stride, frame + (y0 + band) * stride);
        for (const auto& rows_of_band : bands) band_pointers.push_back(rows_of_band.data());
        gather_rows(band_pointers.data(), f.t, stride, y0, g, p, C, still, b, b + 1,
                    by_block.data() + b * (g.rows() / blocks) * k, forms);
      }
      ASSERT_EQ(by_block, rows);
      // The int8 gather (the pixels as they are) holds the same pixels.
      std::vector<uint8_t> rows8(rows.size());
      gather_rows(f.pointers().data(), f.t, f.width * 3, 0, g, p, C, still, 0, blocks, rows8.data(), forms);
      for (size_t i = 0; i < rows.size(); ++i) {
        ASSERT_EQ(rows8[i], static_cast<float>(rows[i] / kPixelScale + kPixelCentre)) << i;
      }
      // The bf16 gather (what a bf16 kernel takes) holds the same values exactly.
      std::vector<uint16_t> rows16(rows.size());
      gather_rows(f.pointers().data(), f.t, f.width * 3, 0, g, p, C, still, 0, blocks, rows16.data(), forms);
      for (size_t i = 0; i < rows.size(); ++i) {
        const uint32_t bits = static_cast<uint32_t>(rows16[i]) << 16;
        float v;
        std::memcpy(&v, &bits, 4);
        ASSERT_EQ(v, rows[i]) << i;
      }
      // Rows a pitch apart (a kernel's row_padding): the same values, then zeros over what was
      // there (NaN bits here), by block in reverse as threads may write them.
      const int64_t pitch = k + 20;
      std::vector<uint16_t> padded(static_cast<size_t>(g.rows() * pitch), 0xFFFF);
      for (int64_t b = blocks - 1; b >= 0; --b) {
        gather_rows(f.pointers().data(), f.t, f.width * 3, 0, g, p, C, still, b, b + 1,
                    padded.data() + b * (g.rows() / blocks) * pitch, forms, static_cast<size_t>(pitch));
      }
      for (int64_t r = 0; r < g.rows(); ++r) {
        for (int64_t i = 0; i < pitch; ++i) {
          ASSERT_EQ(padded[static_cast<size_t>(r * pitch + i)], i < k ? rows16[static_cast<size_t>(r * k + i)] : 0)
              << "row " << r << " value " << i;
        }
      }
      ASSERT_EQ(pv.size(), static_cast<size_t>(g.rows() * C * T * PP));
      for (int64_t r = 0; r < g.rows(); ++r) {
        for (int64_t ch = 0; ch < C; ++ch) {
          for (int64_t t = 0; t < T; ++t) {
            for (int64_t i = 0; i < PP; ++i) {
              const float u8 = static_cast<float>(
                  rows[static_cast<size_t>(r * k + (still ? ch * PP + i : (ch * T + t) * PP + i))] / kPixelScale + kPixelCentre);
              const float want = static_cast<float>(pv[static_cast<size_t>(r * C * T * PP + (ch * T + t) * PP + i)]);
              // The processor's float32 rescale-then-normalize, repeated here: equal to 1e-6.
              const float got = (static_cast<float>(u8 * static_cast<double>(p.rescale_factor)) - p.mean[static_cast<size_t>(ch)]) /
                                p.std[static_cast<size_t>(ch)];
              ASSERT_NEAR(got, want, 1e-6) << "row " << r << " c " << ch << " t " << t << " i " << i;
            }
          }
        }
      }
    }
  }
}

// The acceptance check: every backend, path and precision on still images and videos (odd and
// even frame counts) against PyTorch's Conv3d on the processor's pixel_values, on 1 and 2 threads
// (the gather shares the kernel's threads).
TEST_P(FramesTest, EveryBackendMatchesPytorchOnFrames) {
  int ran = 0;
  for (pf_backend b : {PF_BACKEND_REFERENCE, PF_BACKEND_ONEDNN, PF_BACKEND_XNNPACK}) {
    for (pf_path path : {PF_PATH_FUSED, PF_PATH_UNFUSED}) {
      for (pf_precision prec : {PF_PRECISION_AUTO, PF_PRECISION_F32, PF_PRECISION_BF16, PF_PRECISION_F16}) {
        for (int threads : {1, 2}) {
          auto s = session(b, path, prec, threads);
          if (!s) {
            EXPECT_EQ(s.status(), PF_UNSUPPORTED) << s.error();
            continue;
          }
          const pf_session_info info = s->info();
          for (const char* c : kCases) {
            SCOPED_TRACE(std::string(c) + " " + info.detail + " threads " + std::to_string(info.threads));
            const Frames f = load_frames(GetParam(), c);
            const std::vector<double> want = load(GetParam(), "expected", c);
            auto grid = s->frames_grid(f.t, f.height, f.width);
            ASSERT_TRUE(grid) << grid.error();
            const size_t rows = static_cast<size_t>(grid->t * grid->h * grid->w);
            std::vector<float> y(rows * static_cast<size_t>(model_->module(0).embed_dim));
            ASSERT_EQ(y.size(), want.size());
            pf_grid got_grid{};
            ASSERT_EQ(s->run_frames(f.pointers().data(), f.t, f.height, f.width, f.width * 3, y.data(), &got_grid), "");
            EXPECT_EQ(got_grid.t, grid->t);
            EXPECT_TRUE(testing::within_bound(y, want, info.precision));
            ++ran;
          }
        }
      }
    }
  }
  EXPECT_GE(ran, 2 * 2 * 3 * 3);  // reference fused/unfused and both f32 oneDNN or XNNPACK paths at least
}

// int8: the exact uint8 pixels times per-channel int8 weights, against PyTorch on the float model
// within the int8 bound (2e-2 of max |ref|; the observed figure is printed), on the exact
// reference int8 kernel and on oneDNN. Where oneDNN has VNNI/AMX it uses the same 8-bit weights
// and must agree with the reference to f32 rounding (its epilogue scale * (float(acc) + bias)
// rounds twice in f32); below (capped to AVX2) it uses 7-bit weights, so it is held to the bound.
// gemmlowp (ARM's int8) equals the reference bit for bit. XNNPACK refuses with its measured reason; float inputs and the unfused path are refused too.
TEST_P(FramesTest, Int8MatchesPytorchWithinItsBound) {
  auto reference = session(PF_BACKEND_REFERENCE, PF_PATH_FUSED, PF_PRECISION_INT8);
  ASSERT_TRUE(reference) << reference.error();
  EXPECT_EQ(reference->info().precision, PF_PRECISION_INT8);
  auto onednn = session(PF_BACKEND_ONEDNN, PF_PATH_FUSED, PF_PRECISION_INT8, 2);
  if (!onednn) {
    EXPECT_EQ(onednn.status(), PF_UNSUPPORTED) << onednn.error();  // not built
  }
  const bool seven_bit = onednn && std::string(onednn->info().note).find("7-bit") != std::string::npos;
  auto gemmlowp = session(PF_BACKEND_GEMMLOWP, PF_PATH_FUSED, PF_PRECISION_INT8, 2);
  if (!gemmlowp) {
    EXPECT_EQ(gemmlowp.status(), PF_UNSUPPORTED) << gemmlowp.error();  // not built, or no kernel for this CPU
  }
  auto xnnpack = session(PF_BACKEND_XNNPACK, PF_PATH_FUSED, PF_PRECISION_INT8);
  ASSERT_FALSE(xnnpack);
  EXPECT_EQ(xnnpack.status(), PF_UNSUPPORTED);
  for (const char* c : kCases) {
    SCOPED_TRACE(c);
    const Frames f = load_frames(GetParam(), c);
    const std::vector<double> want = load(GetParam(), "expected", c);
    std::vector<float> y(want.size()), y_onednn(want.size());
    ASSERT_EQ(reference->run_frames(f.pointers().data(), f.t, f.height, f.width, f.width * 3, y.data()), "");
    const testing::OutputError e = testing::output_error(y, want);
    std::printf("%s %s: int8 max |err| %.3g of max |ref| %.3g (bound %.0e)\n", GetParam(), c, e.relative(), e.max_ref,
                testing::max_relative_tolerance(PF_PRECISION_INT8));
    EXPECT_TRUE(testing::within_bound(y, want, PF_PRECISION_INT8));
    if (gemmlowp) {  // the same integer sums and the same double epilogue: the same bits
      std::vector<float> y_gemmlowp(want.size());
      ASSERT_EQ(gemmlowp->run_frames(f.pointers().data(), f.t, f.height, f.width, f.width * 3, y_gemmlowp.data()), "");
      EXPECT_EQ(y_gemmlowp, y) << gemmlowp->info().detail;
    }
    if (!onednn) continue;
    ASSERT_EQ(onednn->run_frames(f.pointers().data(), f.t, f.height, f.width, f.width * 3, y_onednn.data()), "");
    if (seven_bit) {
      const testing::OutputError e7 = testing::output_error(y_onednn, want);
      std::printf("%s %s: oneDNN int8, 7-bit weights: max |err| %.3g of max |ref| (bound %.0e)\n", GetParam(), c,
                  e7.relative(), testing::max_relative_tolerance(PF_PRECISION_INT8));
      EXPECT_TRUE(testing::within_bound(y_onednn, want, PF_PRECISION_INT8)) << onednn->info().detail;
      continue;
    }
    const double max_diff = testing::output_error(y_onednn, y).max_err;
    EXPECT_LE(max_diff, 1e-5 * e.max_ref) << onednn->info().detail;  // observed up to 6.5e-8 (VNNI)
    std::printf("%s %s: oneDNN int8 vs the exact reference: max |diff| %.3g of max |ref|\n", GetParam(), c, max_diff / e.max_ref);
  }
  // Only frames are exact: pixel_values are refused, and so is the unfused (convolution) path.
  const std::vector<double> pv = load(GetParam(), "pixel_values", "still");
  const std::vector<float> rows(pv.begin(), pv.end());
  std::vector<float> out(rows.size());
  EXPECT_NE(reference->run(rows.data(), 1, out.data()).find("precision int8 takes frames only"), std::string::npos);
  auto unfused = session(PF_BACKEND_REFERENCE, PF_PATH_UNFUSED, PF_PRECISION_INT8);
  ASSERT_FALSE(unfused);
  EXPECT_NE(unfused.error().find("int8 runs the fused GEMM only"), std::string::npos) << unfused.error();
}

// Rows with padding after them (row_stride > width * 3) and a frame that ends at an unmapped
// page give the same bits as tightly packed frames, on every backend, path and precision that
// runs here (int8 included: its gather reads the same frames).
TEST_P(FramesTest, StridedAndPageEndingFramesGiveTheSameBits) {
  const Frames f = load_frames(GetParam(), "still");
  int ran = 0;
  for (pf_backend b : {PF_BACKEND_REFERENCE, PF_BACKEND_ONEDNN, PF_BACKEND_XNNPACK, PF_BACKEND_GEMMLOWP}) {
    for (pf_path path : {PF_PATH_FUSED, PF_PATH_UNFUSED}) {
      for (pf_precision precision : {PF_PRECISION_F32, PF_PRECISION_BF16, PF_PRECISION_F16, PF_PRECISION_INT8}) {
        auto s = session(b, path, precision);
        if (!s) {
          EXPECT_EQ(s.status(), PF_UNSUPPORTED) << s.error();
          continue;
        }
        SCOPED_TRACE(s->info().detail);
        ++ran;
        const size_t out = static_cast<size_t>(model_->module(0).embed_dim);
        const size_t rows = static_cast<size_t>(s->frames_grid(1, f.height, f.width)->t * s->frames_grid(1, f.height, f.width)->h *
                                                s->frames_grid(1, f.height, f.width)->w);
        std::vector<float> want(rows * out), got(rows * out);
        ASSERT_EQ(s->run_frames(f.pointers().data(), 1, f.height, f.width, f.width * 3, want.data()), "");

        const size_t stride = f.width * 3 + 13;
        std::vector<uint8_t> padded(f.height * stride, 0xAB);
        for (size_t y = 0; y < f.height; ++y) std::memcpy(&padded[y * stride], &f.bytes[y * f.width * 3], f.width * 3);
        const uint8_t* p = padded.data();
        ASSERT_EQ(s->run_frames(&p, 1, f.height, f.width, stride, got.data()), "");
        EXPECT_EQ(got, want);

        const testing::BytesBeforeGuardPage guarded(f.bytes.data(), f.bytes.size());
        const uint8_t* q = guarded.data();
        ASSERT_EQ(s->run_frames(&q, 1, f.height, f.width, f.width * 3, got.data()), "");
        EXPECT_EQ(got, want);
      }
    }
  }
  EXPECT_GE(ran, 3);  // reference f32 fused and unfused, int8
}

TEST_P(FramesTest, WrongSizesAndArgumentsAreRefused) {
  auto s = session(PF_BACKEND_REFERENCE, PF_PATH_FUSED, PF_PRECISION_F32);
  ASSERT_TRUE(s);
  const Frames f = load_frames(GetParam(), "still");
  const uint8_t* p = f.bytes.data();
  std::vector<float> y(1 << 16);
  const size_t factor = f.height / 2;  // the fixtures are 2 x 3 merge blocks
  std::string e = s->run_frames(&p, 1, f.height - 1, f.width, f.width * 3, y.data());
  EXPECT_NE(e.find("is not a multiple of patch_size * merge_size = " + std::to_string(factor)), std::string::npos) << e;
  EXPECT_NE(e.find("Hugging Face resizes this image to " + std::to_string(f.height) + "x"), std::string::npos) << e;
  e = s->run_frames(&p, 1, f.height, f.width, f.width * 3 - 1, y.data());
  EXPECT_NE(e.find("row_stride_bytes"), std::string::npos) << e;
  e = s->run_frames(&p, 0, f.height, f.width, f.width * 3, y.data());
  EXPECT_NE(e.find("t = 0"), std::string::npos) << e;
  pf_grid g{};
  EXPECT_EQ(pf_session_run_frames(s->get(), nullptr, 1, f.height, f.width, f.width * 3, y.data(), &g), PF_INVALID_ARGUMENT);
  EXPECT_EQ(pf_session_run_frames(s->get(), &p, 1, f.height, f.width, f.width * 3, nullptr, &g), PF_INVALID_ARGUMENT);
}

// pf_model_video_frame_size applies the stored video rule: Qwen3-VL's fixture has a
// video_preprocessor_config.json (Qwen3VLVideoProcessor's formula and bounds; expected sizes from
// Python in smart_resize.json), Qwen2-VL's has none, so its videos are sized like its images.
TEST_P(FramesTest, VideoFrameSizeFollowsTheStoredRule) {
  const bool qwen3 = std::string(GetParam()) == "qwen3_vl";
  const auto table = nlohmann::json::parse(testing::read_bytes(kFixtures + "/smart_resize.json"));
  size_t checked = 0;
  for (const auto& row : table) {
    const int64_t h = row["height"], w = row["width"];
    if (!qwen3) {
      if (row.contains("frames")) continue;
      auto video = model_->video_frame_size(0, 7, h, w);
      auto image = model_->frame_size(0, h, w);
      ASSERT_TRUE(video && image) << row.dump();
      EXPECT_EQ(*video, *image) << row.dump();
      ++checked;
    } else if (row.contains("frames") && row["variant"] == "glm4v" && row["patch_size"] == 16 && !row["cap"]) {
      auto got = model_->video_frame_size(0, row["frames"], h, w);
      ASSERT_TRUE(got) << row.dump() << ": " << got.error();
      EXPECT_EQ(got->first, row["resized"][0].get<int64_t>()) << row.dump();
      EXPECT_EQ(got->second, row["resized"][1].get<int64_t>()) << row.dump();
      ++checked;
    }
  }
  EXPECT_GT(checked, 50u);
  const auto one = model_->video_frame_size(0, 1, 480, 640);
  EXPECT_EQ(static_cast<bool>(one), !qwen3) << "Qwen3-VL's video processor refuses fewer than temporal_patch_size frames";
  EXPECT_FALSE(model_->video_frame_size(0, 0, 480, 640));
}

// quantize_int8 puts the bias in the accumulator's units: scale * (sum q * u8 + bias) must be
// scale * sum q * (u8 - 128) + b', the pixels' centring cancelling exactly. The right side is
// computed here in double from the quantized weights and scales alone (not from the bias it
// made), for seeded folded weights and pixels at both weight widths; each channel reaches +-max_q.
TEST(Int8Quantization, BiasCancelsTheCentringExactly) {
  FoldedWeights f;
  f.k = 147;
  const size_t k = 147, out = 23, n = 5;
  f.weight = testing::random_floats(out * k, 21);
  for (float& w : f.weight) w *= 0.05f;
  f.bias = testing::random_floats(out, 22);
  std::vector<uint8_t> pixels(n * k);
  for (size_t i = 0; i < pixels.size(); ++i) pixels[i] = static_cast<uint8_t>((i * 2654435761u) >> 24);
  for (int max_q : {127, 63}) {
    SCOPED_TRACE("max_q " + std::to_string(max_q));
    const Int8Weights q = quantize_int8(f, max_q);
    for (size_t o = 0; o < out; ++o) {
      int max_abs = 0;
      for (size_t j = 0; j < k; ++j) max_abs = std::max(max_abs, std::abs(static_cast<int>(q.weight[o * k + j])));
      ASSERT_EQ(max_abs, max_q) << "channel " << o;
      for (size_t r = 0; r < n; ++r) {
        int64_t acc = 0;
        double centred = 0, magnitude = 0;
        for (size_t j = 0; j < k; ++j) {
          const int qw = q.weight[o * k + j], u8 = pixels[r * k + j];
          acc += static_cast<int64_t>(qw) * u8;
          centred += static_cast<double>(qw) * (u8 - 128);
          magnitude += std::abs(qw) * 128.0;
        }
        const double scale = q.scale[o];
        const double got = scale * (static_cast<double>(acc) + static_cast<double>(q.bias[o]));
        const double want = scale * centred + static_cast<double>(f.bias[o]);
        // The bias is stored as f32: its rounding, 6e-8 of |b'| + 128 * scale * |sum q|, bounds the difference.
        EXPECT_NEAR(got, want, 1e-6 * (std::fabs(f.bias[o]) + scale * magnitude)) << "channel " << o << " row " << r;
      }
    }
  }
}

// Every level's gather against the baseline's (which GatherOrderIsHuggingFaces holds to the
// processor) on shapes the fixtures lack: 1 and 3 channels, patch sizes 4 and 16 (the rows straight
// from RGB rows) and 17 and 32 (beyond them: planes), merges 1 and 2, a still image and three frames.
TEST(GatherRows, EveryLevelIsTheBaselineOnAnyShape) {
  for (const int64_t C : {1, 3}) {
    for (const int64_t P : {4, 16, 17, 32}) {
      for (const int64_t M : {1, 2}) {
        for (const size_t t : {1u, 3u}) {
          Preprocessing p;
          p.patch_size = P;
          p.merge_size = M;
          p.temporal_patch_size = 2;
          const bool still = t == 1;
          const FrameGrid g{2, 2 * M, 3 * M};
          const auto height = static_cast<size_t>(g.h * P), width = static_cast<size_t>(g.w * P) + 3;
          const size_t stride = width * static_cast<size_t>(C);
          std::vector<uint8_t> bytes(t * height * stride);
          for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<uint8_t>((i * 2654435761u) >> 24);
          std::vector<const uint8_t*> frames;
          for (size_t f = 0; f < t; ++f) frames.push_back(bytes.data() + f * height * stride);
          const auto n = static_cast<size_t>(g.rows() * C * (still ? 1 : 2) * P * P);
          const int64_t blocks = gather_block_count(g, p);
          const FrameKernels& baseline = frame_kernels(SimdLevel::kBaseline);
          std::vector<uint8_t> want8(n);
          std::vector<float> want(n);
          gather_rows(frames.data(), t, stride, 0, g, p, C, still, 0, blocks, want8.data(), baseline);
          gather_rows(frames.data(), t, stride, 0, g, p, C, still, 0, blocks, want.data(), baseline);
          for (const SimdLevel level : kSimdLevels) {
            if (level > simd_level()) continue;
            SCOPED_TRACE(cat("C ", C, " P ", P, " M ", M, " frames ", t, " at ", simd_level_name(level)));
            std::vector<uint8_t> got8(n);
            std::vector<float> got(n);
            gather_rows(frames.data(), t, stride, 0, g, p, C, still, 0, blocks, got8.data(), frame_kernels(level));
            gather_rows(frames.data(), t, stride, 0, g, p, C, still, 0, blocks, got.data(), frame_kernels(level));
            ASSERT_EQ(got8, want8);
            ASSERT_EQ(got, want);
          }
        }
      }
    }
  }
}

// The quantized weights are rounded half to even, as torch.round and std::nearbyint do. With the
// channel's largest weight at 127 / 256 the scale is exactly 1, so the others land on the ties.
// That weight comes last, past the blocks of four the maximum is taken over.
TEST(Int8Quantization, RoundsHalfToEven) {
  FoldedWeights f;
  const std::vector<float> halves{0.5f, 1.5f, 2.5f, 3.5f, -0.5f, -2.5f, -3.5f, 126.5f};
  f.k = static_cast<int64_t>(halves.size()) + 1;
  for (float h : halves) f.weight.push_back(h / kPixelScale);
  f.weight.push_back(127.0f / kPixelScale);
  f.bias = {0.0f};
  const Int8Weights q = quantize_int8(f, 127);
  ASSERT_EQ(q.scale[0], 1.0f);
  const std::vector<int> want{0, 2, 2, 4, 0, -2, -4, 126, 127};
  for (size_t j = 0; j < want.size(); ++j) EXPECT_EQ(q.weight[j], want[j]) << "weight " << j;
}

// Quantizing from the fold channel by channel (what int8 sessions do, without the f32 rows) gives
// the bytes, scales and biases of quantizing the whole fold, for still images and videos, both
// weight widths, bf16 and f32 models.
TEST(Int8Quantization, ChannelByChannelEqualsTheWholeFold) {
  const int64_t out = 7, channels = 3, frames = 2, pixels = 4 * 4, k = channels * frames * pixels;
  std::vector<float> w32 = testing::random_floats(static_cast<size_t>(out * k), 31), b32 = testing::random_floats(out, 32);
  std::vector<uint16_t> w16(w32.size()), b16(b32.size());
  for (size_t i = 0; i < w32.size(); ++i) w16[i] = f32_to_bf16(w32[i]);
  for (size_t i = 0; i < b32.size(); ++i) b16[i] = f32_to_bf16(b32[i]);
  Preprocessing p;
  p.mean = {0.48f, 0.46f, 0.41f};
  p.std = {0.27f, 0.26f, 0.28f};
  p.patch_size = 4;
  p.temporal_patch_size = frames;
  for (DType dtype : {DType::kF32, DType::kBF16}) {
    ConvWeights m;
    m.dtype = m.bias_dtype = dtype;
    m.weight = dtype == DType::kF32 ? reinterpret_cast<const uint8_t*>(w32.data()) : reinterpret_cast<const uint8_t*>(w16.data());
    m.bias = dtype == DType::kF32 ? reinterpret_cast<const uint8_t*>(b32.data()) : reinterpret_cast<const uint8_t*>(b16.data());
    m.embed_dim = out;
    m.channels = channels;
    m.frames = frames;
    m.pixels = pixels;
    for (bool still : {true, false}) {
      for (int max_q : {127, 63}) {
        SCOPED_TRACE(cat(dtype_name(dtype), still ? " still" : " video", " max_q ", max_q));
        const Int8Weights whole = quantize_int8(fold_normalization(m, p, still), max_q);
        const Int8Weights rows = quantize_int8(m, p, still, max_q);
        EXPECT_EQ(rows.k, whole.k);
        EXPECT_EQ(rows.weight, whole.weight);
        EXPECT_EQ(rows.scale, whole.scale);
        EXPECT_EQ(rows.bias, whole.bias);
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Presets, FramesTest, ::testing::Values("qwen2_vl", "qwen3_vl"));

// A model converted without preprocessor_config.json takes pixel_values only; the frames API says why.
TEST(Frames, ModelWithoutPreprocessingIsRefused) {
  testing::TempDir dir;
  ConvertOptions o;
  o.input = std::string(PATCHFUSE_GOLDEN_DIR) + "/qwen2_vl_f32";
  o.output = dir / "m.pfb";
  auto r = convert_checkpoint(o);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_TRUE(testing::has_note(r->notes, "takes pixel_values only"));
  auto m = Model::open_file(o.output);
  ASSERT_TRUE(m);
  EXPECT_EQ(m->module(0).has_preprocessing, 0);
  auto s = Session::create(*m, 0, default_options());
  ASSERT_TRUE(s);
  std::vector<uint8_t> frame(56 * 56 * 3);
  const uint8_t* p = frame.data();
  std::vector<float> y(16 * 48);
  pf_grid g{};
  EXPECT_EQ(pf_session_run_frames(s->get(), &p, 1, 56, 56, 56 * 3, y.data(), &g), PF_UNSUPPORTED);
  EXPECT_NE(std::string(pf_last_error()).find("has no preprocessing"), std::string::npos) << pf_last_error();
  EXPECT_FALSE(m->frame_size(0, 100, 100));
  EXPECT_FALSE(m->video_frame_size(0, 4, 100, 100));
}

}  // namespace
}  // namespace patchfuse
