// The runtime's thread-safety contract (include/patchfuse/patchfuse.h): a model is shared by any
// number of threads, a session is used by one thread at a time, errors are per thread. These are
// the tests scripts/test.sh also runs under ThreadSanitizer (with the reference and XNNPACK
// backends: Debian's oneDNN uses OpenMP, which is not TSan-instrumented, so its sessions run here
// only in the ordinary and ASan builds).
#include <gtest/gtest.h>

#include <filesystem>
#include <iterator>
#include <string>
#include <thread>

#include "patchfuse/patchfuse.hpp"
#include "tests/support/model_builder.h"

namespace patchfuse {
namespace {

constexpr int kThreads = 4;
const std::vector<pf_backend> kBackends = {PF_BACKEND_REFERENCE, PF_BACKEND_ONEDNN, PF_BACKEND_XNNPACK};

testing::TestModule spec() { return {"qwen2_vl_bf16", 3, {2, 14, 14}, 72, true, DType::kBF16, Layout::kFusedLinear, {}, true}; }

// One session alone: what every thread must reproduce bit for bit.
std::vector<float> solo_output(const Model& model, const pf_session_options& o, const std::vector<float>& x, size_t n) {
  auto s = Session::create(model, 0, o);
  EXPECT_TRUE(s) << s.error();
  std::vector<float> y(n * static_cast<size_t>(model.module(0).embed_dim));
  if (s) {
    EXPECT_EQ(s->run(x.data(), n, y.data()), "");
  }
  return y;
}

// Runs `body(t)` on kThreads threads at once and returns each thread's error text ("" = ok).
template <class F>
std::vector<std::string> on_threads(F body) {
  std::vector<std::string> errors(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) threads.emplace_back([&, t] { errors[t] = body(t); });
  for (std::thread& th : threads) th.join();
  return errors;
}

// Several sessions on one model, on several threads at once, give the same bits as one session
// alone. Sessions are per thread; the model is shared. Sessions with 2 threads use the backend's
// own pool (XNNPACK's pthreadpool) inside each.
TEST(RuntimeThreads, SessionsOnSeveralThreadsShareOneModel) {
  const std::vector<uint8_t> bytes = testing::make_model(spec(), 1234);
  auto model = Model::open_memory(bytes.data(), bytes.size());
  ASSERT_TRUE(model) << model.error();
  const size_t n = 64, k = static_cast<size_t>(model->module(0).patch_volume);
  const std::vector<float> x = testing::random_floats(n * k, 11);
  for (pf_backend backend : kBackends) {
    if (!pf_backend_available(backend)) continue;
    for (int pool : {1, 2}) {
      SCOPED_TRACE(std::string(pf_backend_name(backend)) + " threads " + std::to_string(pool));
      pf_session_options o = default_options();
      o.backend = backend;
      o.threads = pool;
      const std::vector<float> want = solo_output(*model, o, x, n);
      std::vector<std::vector<float>> got(kThreads, std::vector<float>(want.size()));
      const std::vector<std::string> errors = on_threads([&](int t) -> std::string {
        auto s = Session::create(*model, 0, o);
        if (!s) return s.error();
        for (int rep = 0; rep < 5; ++rep) {
          if (std::string e = s->run(x.data(), n, got[t].data()); !e.empty()) return e;
        }
        return "";
      });
      for (int t = 0; t < kThreads; ++t) {
        EXPECT_EQ(errors[t], "") << "thread " << t;
        EXPECT_EQ(got[t], want) << "thread " << t;
      }
    }
  }
}

// The frames path on several threads at once, each session's gather split over its own pool
// (XNNPACK's pthreadpool with 2 threads): the same bits as one session alone. int8 where offered.
// Also any image in: an NV12 frame of another size, converted and resized on the same pools.
TEST(RuntimeThreads, FramesOnSeveralThreads) {
  const std::vector<uint8_t> bytes = testing::make_model(spec(), 4321);
  auto model = Model::open_memory(bytes.data(), bytes.size());
  ASSERT_TRUE(model) << model.error();
  const size_t h = 112, w = 84, rows = (h / 14) * (w / 14), out = static_cast<size_t>(model->module(0).embed_dim);
  std::vector<uint8_t> frame(h * w * 3);
  for (size_t i = 0; i < frame.size(); ++i) frame[i] = static_cast<uint8_t>((i * 2654435761u) >> 24);
  const uint8_t* f = frame.data();
  std::vector<uint8_t> nv12(131 * 97 + 66 * 49 * 2);  // 97 wide, 131 tall
  for (size_t i = 0; i < nv12.size(); ++i) nv12[i] = static_cast<uint8_t>((i * 40503u) >> 7);
  pf_image camera;
  ASSERT_EQ(pf_image_packed(&camera, PF_PIXEL_NV12, nv12.data(), 97, 131), PF_OK);
  for (pf_backend backend : kBackends) {
    if (!pf_backend_available(backend)) continue;
    for (pf_precision precision : {PF_PRECISION_AUTO, PF_PRECISION_INT8}) {
      for (int pool : {1, 2}) {
        SCOPED_TRACE(std::string(pf_backend_name(backend)) + " threads " + std::to_string(pool));
        pf_session_options o = default_options();
        o.backend = backend;
        o.precision = precision;
        o.threads = pool;
        auto solo = Session::create(*model, 0, o);
        if (!solo) {
          EXPECT_EQ(solo.status(), PF_UNSUPPORTED) << solo.error();  // int8 where the backend has none
          continue;
        }
        auto image_grid = solo->images_grid(1, camera.height, camera.width);
        ASSERT_TRUE(image_grid) << image_grid.error();
        ASSERT_EQ(image_grid->h * image_grid->w, 10 * 6);  // 131x97 -> smart_resize 140x84
        std::vector<float> want(rows * out), want_image(static_cast<size_t>(image_grid->h * image_grid->w) * out);
        ASSERT_EQ(solo->run_frames(&f, 1, h, w, w * 3, want.data()), "");
        ASSERT_EQ(solo->run_image(camera, want_image.data()), "");
        std::vector<std::vector<float>> got(kThreads, std::vector<float>(want.size()));
        std::vector<std::vector<float>> got_image(kThreads, std::vector<float>(want_image.size()));
        const std::vector<std::string> errors = on_threads([&](int t) -> std::string {
          auto s = Session::create(*model, 0, o);
          if (!s) return s.error();
          for (int rep = 0; rep < 3; ++rep) {
            if (std::string e = s->run_frames(&f, 1, h, w, w * 3, got[t].data()); !e.empty()) return e;
            if (std::string e = s->run_image(camera, got_image[t].data()); !e.empty()) return e;
          }
          return "";
        });
        for (int t = 0; t < kThreads; ++t) {
          EXPECT_EQ(errors[t], "") << "thread " << t;
          EXPECT_EQ(got[t], want) << "thread " << t;
          EXPECT_EQ(got_image[t], want_image) << "thread " << t;
        }
      }
    }
  }
}

// Several models opened and released on several threads, each with its own session: nothing is
// shared between models but the backends' process-wide initialisation.
TEST(RuntimeThreads, SeveralModelsOnSeveralThreads) {
  const std::vector<uint8_t> bytes = testing::make_model(spec(), 99);
  const size_t n = 9, k = 1176;
  const std::vector<float> x = testing::random_floats(n * k, 12);
  for (pf_backend backend : kBackends) {
    if (!pf_backend_available(backend)) continue;
    SCOPED_TRACE(pf_backend_name(backend));
    pf_session_options o = default_options();
    o.backend = backend;
    auto reference_model = Model::open_memory(bytes.data(), bytes.size());
    ASSERT_TRUE(reference_model);
    const std::vector<float> want = solo_output(*reference_model, o, x, n);
    std::vector<std::vector<float>> got(kThreads, std::vector<float>(want.size()));
    const std::vector<std::string> errors = on_threads([&](int t) -> std::string {
      for (int rep = 0; rep < 3; ++rep) {
        auto m = Model::open_memory(bytes.data(), bytes.size());
        if (!m) return m.error();
        auto s = Session::create(*m, 0, o);
        if (!s) return s.error();
        if (std::string e = s->run(x.data(), n, got[t].data()); !e.empty()) return e;
      }
      return "";
    });
    for (int t = 0; t < kThreads; ++t) {
      EXPECT_EQ(errors[t], "") << "thread " << t;
      EXPECT_EQ(got[t], want) << "thread " << t;
    }
  }
}

size_t os_threads() {
  const std::filesystem::directory_iterator tasks("/proc/self/task");
  return static_cast<size_t>(std::distance(begin(tasks), end(tasks)));
}

// A session of one thread computes on the caller's thread alone, from creation (packing) to its
// runs: no pool thread is started. The int8 oneDNN GEMM once ran on every core of the machine
// because its primitive took the thread count when it was made, not the session's. ctest runs
// each test in its own process, so the count starts from the main thread (and a sanitizer's own).
TEST(RuntimeThreads, AOneThreadSessionStartsNoThread) {
  const std::vector<uint8_t> bytes = testing::make_model(spec(), 77);
  auto model = Model::open_memory(bytes.data(), bytes.size());
  ASSERT_TRUE(model) << model.error();
  std::vector<uint8_t> frame(96 * 128 * 3, 200);
  pf_image image;
  ASSERT_EQ(pf_image_packed(&image, PF_PIXEL_RGB, frame.data(), 128, 96), PF_OK);
  const size_t before = os_threads();
  for (pf_backend backend : {PF_BACKEND_REFERENCE, PF_BACKEND_ONEDNN, PF_BACKEND_XNNPACK, PF_BACKEND_GEMMLOWP}) {
    if (!pf_backend_available(backend)) continue;
    for (pf_precision precision : {PF_PRECISION_F32, PF_PRECISION_INT8}) {
      SCOPED_TRACE(std::string(pf_backend_name(backend)) + (precision == PF_PRECISION_INT8 ? " int8" : " f32"));
      pf_session_options o = default_options();
      o.backend = backend;
      o.precision = precision;
      o.threads = 1;
      auto s = Session::create(*model, 0, o);
      if (!s) {
        EXPECT_EQ(s.status(), PF_UNSUPPORTED) << s.error();  // a precision the backend does not offer
        continue;
      }
      pf_input_shape shape{};
      shape.kind = PF_INPUT_IMAGES;
      shape.t = 1;
      shape.height = image.height;
      shape.width = image.width;
      shape.format = image.format;
      ASSERT_EQ(s->prepare(shape), "");
      auto grid = s->images_grid(1, image.height, image.width);
      ASSERT_TRUE(grid) << grid.error();
      std::vector<float> out(static_cast<size_t>(grid->h * grid->w * model->module(0).embed_dim));
      ASSERT_EQ(s->run_image(image, out.data()), "");
      EXPECT_EQ(os_threads(), before);
    }
  }
}

// pf_last_error() is per thread: a failure on one thread never shows in another's message.
TEST(RuntimeThreads, ErrorsStayOnTheirThread) {
  const std::vector<uint8_t> bytes = testing::make_model(spec(), 5);
  pf_model* model = nullptr;
  ASSERT_EQ(pf_model_open_memory(bytes.data(), bytes.size(), &model), PF_OK);
  const std::vector<std::string> errors = on_threads([&](int t) -> std::string {
    for (int rep = 0; rep < 50; ++rep) {
      pf_session_options o;
      pf_session_options_init(&o);
      o.threads = 0;  // invalid on purpose; the message names this thread's value
      pf_session* s = nullptr;
      if (t % 2 == 0) {
        if (pf_session_create(model, 0, &o, &s) != PF_INVALID_ARGUMENT) return "threads 0 accepted";
        if (std::string(pf_last_error()).find("threads 0 must be") == std::string::npos) return pf_last_error();
      } else {
        if (pf_model_get_module(model, 7, nullptr) != PF_INVALID_ARGUMENT) return "null out accepted";
        if (std::string(pf_last_error()).find("null argument") == std::string::npos) return pf_last_error();
      }
    }
    return "";
  });
  for (int t = 0; t < kThreads; ++t) EXPECT_EQ(errors[t], "") << "thread " << t;
  pf_model_release(model);
}

}  // namespace
}  // namespace patchfuse
