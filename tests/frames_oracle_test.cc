// Frames sessions against the double-precision oracle (the gathered rows times the whole fold's
// weights) on still frames: the folded weights packed a block of output channels at a time, and
// a camera frame's rows cut into chunks and kernel calls.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "patchfuse/patchfuse.hpp"
#include "runtime/frames/gather.h"
#include "runtime/frames/weight_transforms.h"
#include "runtime/model/model_file.h"
#include "tests/support/model_builder.h"
#include "tests/support/sessions.h"
#include "tests/support/tolerance.h"

namespace patchfuse {
namespace {

// A still frame of height x width through the model in `bytes`, as the double-precision oracle:
// the gathered rows times the whole fold's weights.
testing::Oracle still_frame_oracle(const std::vector<uint8_t>& bytes, const uint8_t* frame, size_t height, size_t width) {
  const ModuleView m = read_model(bytes.data(), bytes.size(), "m.pfb").value().modules.at(0);
  const Preprocessing& p = *m.preprocessing;
  const FoldedWeights f = fold_normalization(conv_weights(m), p, true);
  const FrameGrid g = frame_grid(p, 1, height, width).value();
  const auto n = static_cast<size_t>(g.rows()), k = static_cast<size_t>(f.k);
  std::vector<float> rows(n * k);  // what the kernel gets: (u8 - 128) / 256 in the processor's order
  gather_rows(&frame, 1, width * 3, 0, g, p, 3, true, 0, gather_block_count(g, p), rows.data());
  ModuleView folded = m;
  folded.patch_volume = f.k;
  folded.dtype = DType::kF32;
  folded.weight.data = reinterpret_cast<const uint8_t*>(f.weight.data());
  folded.bias->data = reinterpret_cast<const uint8_t*>(f.bias.data());
  return testing::oracle(folded, rows.data(), n);
}

// Every element of y within its precision's bound of the oracle; false (with a failure naming the
// row and channel) at the first that is not.
bool near_oracle(const std::vector<float>& y, const testing::Oracle& want, pf_precision computed, int64_t k, int64_t out) {
  const double tol = testing::element_tolerance(computed, k);
  for (size_t i = 0; i < y.size(); ++i) {
    if (std::abs(y[i] - want.y[i]) > tol * want.abs_sum[i]) {
      ADD_FAILURE() << "row " << i / static_cast<size_t>(out) << " channel " << i % static_cast<size_t>(out) << ": " << y[i]
                    << " against " << want.y[i] << ", bound " << tol * want.abs_sum[i];
      return false;
    }
  }
  return true;
}

// What pf_session_prepare is told of one camera frame of height x width.
pf_input_shape frame_shape(size_t height, size_t width) {
  pf_input_shape shape{};
  shape.kind = PF_INPUT_FRAMES;
  shape.t = 1;
  shape.height = static_cast<int64_t>(height);
  shape.width = static_cast<int64_t>(width);
  return shape;
}

std::vector<uint8_t> seeded_frame(size_t height, size_t width) {
  std::vector<uint8_t> frame(height * width * 3);
  for (size_t i = 0; i < frame.size(); ++i) frame[i] = static_cast<uint8_t>((i * 2654435761u) >> 24);
  return frame;
}

// Frames kernels take the folded weights a block of output channels at a time (FoldedRows; oneDNN
// reorders each block straight into its place in its packed layout). Widths of one short block,
// exactly one, and several with a short last; fused and unfused; f32, bf16 and f16 where a backend
// has them: the output on a still frame against the whole fold's product in double.
TEST(FoldedRows, EveryBlockLandsInPlace) {
  const size_t side = 56;
  const std::vector<uint8_t> frame = seeded_frame(side, side);
  const uint8_t* frames = frame.data();
  int checked = 0;
  for (int64_t out : {40, 64, 200}) {
    testing::TestModule spec;
    spec.embed_dim = out;
    spec.bias = true;
    spec.preprocessing = true;
    const std::vector<uint8_t> bytes = testing::make_model(spec, 11);
    const testing::Oracle want = still_frame_oracle(bytes, frames, side, side);
    auto model = Model::open_memory(bytes.data(), bytes.size());
    ASSERT_TRUE(model) << model.error();
    for (pf_backend b : {PF_BACKEND_REFERENCE, PF_BACKEND_ONEDNN, PF_BACKEND_XNNPACK}) {
      for (pf_path path : {PF_PATH_FUSED, PF_PATH_UNFUSED}) {
        for (pf_precision prec : {PF_PRECISION_F32, PF_PRECISION_BF16, PF_PRECISION_F16}) {
          auto s = testing::make_session(*model, b, path, prec);
          if (!s) continue;  // not built, or not on this CPU
          SCOPED_TRACE(cat("embed_dim ", out, " ", s->info().detail));
          std::vector<float> y(want.y.size());
          ASSERT_EQ(s->run_frames(&frames, 1, side, side, side * 3, y.data()), "");
          ASSERT_TRUE(near_oracle(y, want, s->info().precision, 588, out));
          ++checked;
        }
      }
    }
  }
  EXPECT_GE(checked, 3 * 2);  // the reference backend, fused and unfused, at every width
}

// A 720p camera frame's 4784 rows run in several chunks of 184-row merge rows, or on oneDNN's AMX
// kernels in one call after the frame's last chunk (Kernel::whole_frame_calls), which the bf16
// matmul cuts into a multiple of 64 rows and a short call (Kernel::row_multiple, frame_calls):
// every row in place on every backend, precision and thread count here, with
// pf_session_prepare's calls the run's own (setup_ms 0 on the run after it).
TEST(FrameCalls, ACameraFramesRowsLandInPlaceAfterPrepare) {
  const size_t width = 1288, height = 728;  // the processor's size of a 1280x720 frame
  const std::vector<uint8_t> frame = seeded_frame(height, width);
  const uint8_t* frames = frame.data();
  testing::TestModule spec;
  spec.bias = true;
  spec.preprocessing = true;
  const std::vector<uint8_t> bytes = testing::make_model(spec, 12);
  const testing::Oracle want = still_frame_oracle(bytes, frames, height, width);
  auto model = Model::open_memory(bytes.data(), bytes.size());
  ASSERT_TRUE(model) << model.error();
  int checked = 0;
  for (pf_backend b : {PF_BACKEND_REFERENCE, PF_BACKEND_ONEDNN, PF_BACKEND_XNNPACK}) {
    for (pf_precision prec : {PF_PRECISION_F32, PF_PRECISION_BF16}) {
      for (int threads : {1, 2}) {
        auto s = testing::make_session(*model, b, PF_PATH_FUSED, prec, 0, threads);
        if (!s) continue;  // not built, or not on this CPU
        SCOPED_TRACE(cat(s->info().detail, ", ", threads, " threads"));
        ASSERT_EQ(s->prepare(frame_shape(height, width)), "");
        std::vector<float> y(want.y.size());
        ASSERT_EQ(s->run_frames(&frames, 1, height, width, width * 3, y.data()), "");
        EXPECT_EQ(s->last_profile().setup_ms, 0.0);
        ASSERT_TRUE(near_oracle(y, want, s->info().precision, 588, spec.embed_dim));
        ++checked;
      }
    }
  }
  EXPECT_GE(checked, 2);  // the reference backend at 1 and 2 threads at least
}

// int8 on a 720p camera frame after prepare: oneDNN's calls (on AMX cut to at most 1280 rows
// over K = 588's tail, OneDnnKernel::pack) against the reference backend's exact integer
// sums, at 1 and 2 threads: every row in place, within the bound the int8 frames test holds.
TEST(FrameCalls, Int8CameraFramesMatchTheExactReference) {
  if (!pf_backend_available(PF_BACKEND_ONEDNN)) GTEST_SKIP() << "backend onednn is not built into this library";
  const size_t width = 1288, height = 728;
  const std::vector<uint8_t> frame = seeded_frame(height, width);
  const uint8_t* frames = frame.data();
  testing::TestModule spec;
  spec.bias = true;
  spec.preprocessing = true;
  const std::vector<uint8_t> bytes = testing::make_model(spec, 14);
  auto model = Model::open_memory(bytes.data(), bytes.size());
  ASSERT_TRUE(model) << model.error();
  auto reference = testing::make_session(*model, PF_BACKEND_REFERENCE, PF_PATH_FUSED, PF_PRECISION_INT8);
  ASSERT_TRUE(reference) << reference.error();
  std::vector<float> want(4784 * static_cast<size_t>(spec.embed_dim)), y(want.size());
  ASSERT_EQ(reference->run_frames(&frames, 1, height, width, width * 3, want.data()), "");
  double max_ref = 0;
  for (float v : want) max_ref = std::max(max_ref, static_cast<double>(std::abs(v)));
  for (int threads : {1, 2}) {
    auto s = testing::make_session(*model, PF_BACKEND_ONEDNN, PF_PATH_FUSED, PF_PRECISION_INT8, 0, threads);
    ASSERT_TRUE(s) << s.error();
    if (std::string(s->info().note).find("7-bit") != std::string::npos) GTEST_SKIP() << "7-bit weights: not the same sums";
    SCOPED_TRACE(cat(s->info().detail, ", ", threads, " threads"));
    ASSERT_EQ(s->prepare(frame_shape(height, width)), "");
    std::fill(y.begin(), y.end(), std::nanf(""));
    ASSERT_EQ(s->run_frames(&frames, 1, height, width, width * 3, y.data()), "");
    double max_diff = 0;
    for (size_t i = 0; i < y.size(); ++i) {
      const double d = std::abs(static_cast<double>(y[i]) - want[i]);
      if (!(d <= max_diff)) max_diff = d;  // a row left NaN counts
    }
    EXPECT_LE(max_diff, 1e-5 * max_ref);  // the same integer sums; f32 epilogues apart (int8 frames test: 6.5e-8)
  }
}

// The fold against weight_transforms.h's formula, computed here in double term by term: 3x3
// kernels (row lengths that are no multiple of the fold's 4 running sums), one and two frames,
// still and video, each value and bias within one f32 rounding of the exact sum (bound below).
TEST(FoldNormalization, IsTheFormulaInDouble) {
  const int64_t out = 5, channels = 3, pixels = 3 * 3;
  Preprocessing p;
  p.mean = {0.48f, 0.46f, 0.41f};
  p.std = {0.27f, 0.26f, 0.28f};
  p.patch_size = 3;
  for (int64_t frames : {1, 2}) {
    const int64_t values = channels * frames * pixels;
    const std::vector<float> w = testing::random_floats(static_cast<size_t>(out * values), 41);
    const std::vector<float> b = testing::random_floats(static_cast<size_t>(out), 42);
    ConvWeights m;
    m.weight = reinterpret_cast<const uint8_t*>(w.data());
    m.bias = reinterpret_cast<const uint8_t*>(b.data());
    m.embed_dim = out;
    m.channels = channels;
    m.frames = frames;
    m.pixels = pixels;
    for (bool still : {true, false}) {
      SCOPED_TRACE(cat(frames, " frames, ", still ? "still" : "video"));
      const FoldedWeights f = fold_normalization(m, p, still);
      ASSERT_EQ(f.k, still ? channels * pixels : values);
      for (int64_t o = 0; o < out; ++o) {
        double bias = b[static_cast<size_t>(o)], bias_abs = std::abs(bias);
        std::vector<double> row(static_cast<size_t>(f.k), 0.0), row_abs(row.size(), 0.0);
        for (int64_t c = 0; c < channels; ++c) {
          const double scale = 256.0 * p.rescale_factor / p.std[c], offset = (128.0 * p.rescale_factor - p.mean[c]) / p.std[c];
          for (int64_t t = 0; t < frames; ++t) {
            for (int64_t i = 0; i < pixels; ++i) {
              const double v = w[static_cast<size_t>(((o * channels + c) * frames + t) * pixels + i)];
              const auto j = static_cast<size_t>(still ? c * pixels + i : (c * frames + t) * pixels + i);
              row[j] += v * scale;
              row_abs[j] += std::abs(v * scale);
              bias += v * offset;
              bias_abs += std::abs(v * offset);
            }
          }
        }
        // One rounding to f32 (2^-24 relative) after sums in double (far below it).
        const double f32_rounding = std::ldexp(1.0, -23);
        for (size_t j = 0; j < row.size(); ++j) {
          EXPECT_NEAR(f.weight[static_cast<size_t>(o * f.k) + j], row[j], f32_rounding * row_abs[j]) << "o " << o << " j " << j;
        }
        EXPECT_NEAR(f.bias[static_cast<size_t>(o)], bias, f32_rounding * bias_abs) << "o " << o;
      }
    }
  }
}

}  // namespace
}  // namespace patchfuse
