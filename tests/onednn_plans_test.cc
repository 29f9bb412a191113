// pf_session_prepare against oneDNN's own account: after it, the run it prepared creates no oneDNN
// primitive (no "create:" line while dnnl_set_verbose(2) prints to the captured stdout), on
// pixel_values, frames and images, at every precision this CPU runs, 1 and 2 threads. Row counts
// that AMX's matmul runs as two calls (Kernel::row_multiple) are among them. setup_ms cannot
// catch a plan a kernel makes inside its run; this does. And on AMX, the K the bf16 kernels run
// and the int8 kernel's call sizes.
#include <gtest/gtest.h>

#include <oneapi/dnnl/dnnl.hpp>
#include <functional>
#include <regex>
#include <string>
#include <vector>

#include "patchfuse/patchfuse.hpp"
#include "tests/support/model_builder.h"
#include "tests/support/sessions.h"

namespace patchfuse {
namespace {

// The lines oneDNN prints while `f` runs (dnnl_set_verbose(2)) from `what` on: "create:" for the
// primitives it makes, "exec," for those it runs.
std::string verbose_during(const char* what, const std::function<void()>& f) {
  dnnl::set_verbose(2);
  ::testing::internal::CaptureStdout();
  f();
  const std::string out = ::testing::internal::GetCapturedStdout();
  dnnl::set_verbose(0);
  std::string lines;
  for (size_t at = out.find(what); at != std::string::npos; at = out.find(what, at + 1)) {
    lines += out.substr(at, out.find('\n', at) - at) + "\n";
  }
  return lines;
}
std::string creations_during(const std::function<void()>& f) { return verbose_during("create:", f); }

pf_input_shape frames_shape(pf_input_kind kind, int64_t height, int64_t width) {
  pf_input_shape s{};
  s.kind = kind;
  s.t = 1;
  s.height = height;
  s.width = width;
  s.format = PF_PIXEL_RGB;
  return s;
}

// The model both tests run: Qwen2-VL's geometry (K = 1176; 588 for a still frame), a bias and
// preprocessing, so it runs pixel_values, frames and images.
struct PlansModel {
  testing::TestModule spec = [] {
    testing::TestModule t;
    t.bias = true;
    t.preprocessing = true;
    return t;
  }();
  std::vector<uint8_t> bytes = testing::make_model(spec, 13);
};

TEST(OneDnnPlans, ARunAfterPrepareCreatesNoPrimitive) {
  if (!pf_backend_available(PF_BACKEND_ONEDNN)) GTEST_SKIP() << "backend onednn is not built into this library";
  const PlansModel m;
  const testing::TestModule& spec = m.spec;
  auto model = Model::open_memory(m.bytes.data(), m.bytes.size());
  ASSERT_TRUE(model) << model.error();
  const size_t out = static_cast<size_t>(spec.embed_dim), k = 3 * 2 * 14 * 14;
  // 46 x 46 patches: 2116 rows, 33 * 64 + 4; a 720p frame's 4784 rows (74 * 64 + 48); the same
  // frame through the resize.
  const pf_grid grid{1, 46, 46};
  const std::vector<float> pixels(grid.h * grid.w * k, 0.25f);
  const std::vector<uint8_t> frame(1288 * 728 * 3, 100), image(1280 * 720 * 3, 100);
  std::vector<float> y(4784 * out);
  int checked = 0;
  for (pf_precision p : {PF_PRECISION_F32, PF_PRECISION_BF16, PF_PRECISION_INT8}) {
    for (int threads : {1, 2}) {
      auto s = testing::make_session(*model, PF_BACKEND_ONEDNN, PF_PATH_FUSED, p, 0, threads);
      if (!s) continue;  // bf16 on a CPU without it
      SCOPED_TRACE(cat(s->info().detail, ", ", threads, " threads"));
      std::string error;
      if (p != PF_PRECISION_INT8) {  // int8 runs on pixels only
        pf_input_shape shape{};
        shape.kind = PF_INPUT_PIXEL_VALUES;
        shape.grid = grid;
        ASSERT_EQ(s->prepare(shape), "");
        EXPECT_EQ(creations_during([&] { error = s->run_grid(pixels.data(), grid, y.data()); }), "") << "pixel_values";
        ASSERT_EQ(error, "");
      }
      ASSERT_EQ(s->prepare(frames_shape(PF_INPUT_FRAMES, 728, 1288)), "");
      const uint8_t* f = frame.data();
      EXPECT_EQ(creations_during([&] { error = s->run_frames(&f, 1, 728, 1288, 1288 * 3, y.data()); }), "") << "frames";
      ASSERT_EQ(error, "");
      ASSERT_EQ(s->prepare(frames_shape(PF_INPUT_IMAGES, 720, 1280)), "");
      pf_image img;
      pf_image_packed(&img, PF_PIXEL_RGB, image.data(), 1280, 720);
      EXPECT_EQ(creations_during([&] { error = s->run_image(img, y.data()); }), "") << "images";
      ASSERT_EQ(error, "");
      ++checked;
    }
  }
  EXPECT_GE(checked, 4);  // f32 and int8 at 1 and 2 threads on every x86-64 CPU
}

// On AMX the bf16 frames kernel computes over K = 588 padded to 608 (Kernel::row_padding; its
// 0.8x speed at 588 is in docs/amx.md), and the pixel_values kernel, whose rows are the caller's,
// over 1176 as it is: what oneDNN is asked to run, from its own account.
TEST(OneDnnPlans, OnAmxTheBf16FramesKernelRunsOverThePaddedK) {
  if (!pf_backend_available(PF_BACKEND_ONEDNN)) GTEST_SKIP() << "backend onednn is not built into this library";
  if (dnnl::get_effective_cpu_isa() != dnnl::cpu_isa::avx512_core_amx) GTEST_SKIP() << "oneDNN does not run AMX here";
  const PlansModel m;
  const testing::TestModule& spec = m.spec;
  auto model = Model::open_memory(m.bytes.data(), m.bytes.size());
  ASSERT_TRUE(model) << model.error();
  auto s = testing::make_session(*model, PF_BACKEND_ONEDNN, PF_PATH_FUSED, PF_PRECISION_BF16);
  ASSERT_TRUE(s);
  const size_t out = static_cast<size_t>(spec.embed_dim), k = 3 * 2 * 14 * 14;
  const std::vector<uint8_t> frame(448 * 448 * 3, 100);
  const uint8_t* f = frame.data();
  std::vector<float> y(1024 * out);
  std::string error;
  const std::string frames = verbose_during("exec,", [&] { error = s->run_frames(&f, 1, 448, 448, 448 * 3, y.data()); });
  ASSERT_EQ(error, "");
  EXPECT_NE(frames.find("x608:608x"), std::string::npos) << frames;
  EXPECT_NE(std::string(s->info().detail).find("K padded to 608"), std::string::npos) << s->info().detail;
  const pf_grid grid{1, 32, 32};
  const std::vector<float> pixels(1024 * k, 0.25f);
  const std::string rows = verbose_during("exec,", [&] { error = s->run_grid(pixels.data(), grid, y.data()); });
  ASSERT_EQ(error, "");
  EXPECT_NE(rows.find("x1176:1176x"), std::string::npos) << rows;
}

// On AMX a camera frame's rows are all gathered before the kernel runs them (Kernel::
// whole_frame_calls; chunk by chunk ran 10-30% slower, docs/amx.md): bf16 in one call of a
// multiple of 64 rows and one of the rest (4784 = 4736 + 48); int8, over K = 588's tail, in
// near-equal calls of at most 1280 rows (kTailCallRows; OneDnnKernel::pack: oneDNN's code for
// such a call grows with its rows), 4 x 1196; at 1 and 2 threads (int8 at 2 threads keeps its
// two chunks, which make the same calls), from oneDNN's own account of the calls it runs.
TEST(OneDnnPlans, OnAmxAFramesRowsRunInOneSequenceOfCalls) {
  if (!pf_backend_available(PF_BACKEND_ONEDNN)) GTEST_SKIP() << "backend onednn is not built into this library";
  if (dnnl::get_effective_cpu_isa() != dnnl::cpu_isa::avx512_core_amx) GTEST_SKIP() << "oneDNN does not run AMX here";
  const PlansModel m;
  auto model = Model::open_memory(m.bytes.data(), m.bytes.size());
  ASSERT_TRUE(model) << model.error();
  const std::vector<uint8_t> frame(1288 * 728 * 3, 100);
  const uint8_t* f = frame.data();
  std::vector<float> y(4784 * static_cast<size_t>(m.spec.embed_dim));
  for (pf_precision precision : {PF_PRECISION_BF16, PF_PRECISION_INT8}) {
    for (int threads : {1, 2}) {
      auto s = testing::make_session(*model, PF_BACKEND_ONEDNN, PF_PATH_FUSED, precision, 0, threads);
      ASSERT_TRUE(s);
      std::string error;
      const std::string calls = verbose_during("exec,", [&] { error = s->run_frames(&f, 1, 728, 1288, 1288 * 3, y.data()); });
      ASSERT_EQ(error, "");
      // The rows of each call: "_iw<n>" in a 1x1 convolution's shape, ",<n>x608:" in a matmul's.
      const std::regex rows(precision == PF_PRECISION_INT8 ? "_iw([0-9]+)" : ",([0-9]+)x608:");
      std::vector<int> sizes;
      for (std::sregex_iterator it(calls.begin(), calls.end(), rows), end; it != end; ++it) sizes.push_back(std::stoi((*it)[1]));
      const std::vector<int> want = precision == PF_PRECISION_INT8 ? std::vector<int>{1196, 1196, 1196, 1196}
                                                                   : std::vector<int>{4736, 48};
      EXPECT_EQ(sizes, want) << threads << " threads:\n" << calls;
    }
  }
}

}  // namespace
}  // namespace patchfuse
