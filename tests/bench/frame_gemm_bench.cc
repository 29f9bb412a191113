// FrameGemm/...: a 1280x720 frame's GEMM (K = 588, 4784 rows -> 1280): the session's kernel
// stage (its pf_run_profile.kernel_ms) beside raw oneDNN on the same product in calls of 368 to
// 4784 rows, per precision, so the frames kernel's ratio to the library is one comparison;
// FrameGemm/raw-k608/...: bf16 over K padded to 608, as the session runs it on AMX (row_padding).
// Rows with cold:1 flush the output from the caches before each frame, the session's and raw's
// alike, as an app's output is when its next frame comes (evict, below);
// FrameGemm/raw-after-preprocessing/... runs the session's preprocessing of the frame (untimed)
// before each of raw's frames, as the session runs it before its kernel. Part of
// patchfuse-overhead-bench, built where oneDNN is; run as its header says.
#include <benchmark/benchmark.h>
#include <immintrin.h>
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <optional>
#include <oneapi/dnnl/dnnl.hpp>
#include <string>
#include <vector>

#include "patchfuse/patchfuse.hpp"
#include "tests/bench/bench_models.h"

namespace {

using bench::frames_model_bytes;
using bench::kK;
using bench::kOut;
using bench::random_bytes;
using bench::values;

// The camera frame's GEMM: a 1280x720 RGB frame through the Qwen2-VL processor is 728x1288, 4784
// rows of a still image's K = 588 (3 x 14 x 14) -> 1280, in chunks of whole merge rows (184 rows).
constexpr int64_t kFrameRows = 4784, kFrameK = kK / 2;

// With state.range(1) (cold) the output is flushed from every cache before each timed frame, as
// an app's is when its next frame comes: the session resizes and gathers between two writes of
// the output and raw does not, which leaves raw's next call the caches its last call left
// (FrameGemm/raw-after-preprocessing gives raw the resize instead; docs/amx.md).
void evict(const std::vector<float>& y) {
  for (size_t i = 0; i < y.size(); i += 64 / sizeof(float)) _mm_clflush(y.data() + i);
  _mm_mfence();
}

// The 1280x720 RGB frame the session rows run on.
std::vector<uint8_t> camera_frame() { return random_bytes(1280 * 720 * 3, 11); }

// The session's kernel stage on that frame (pf_run_profile.kernel_ms, the time the session's
// kernel calls took over all its chunks), state.range(0) threads; state.range(1): cold.
void frames_kernel(benchmark::State& state, pf_precision precision) {
  auto session =
      bench::open_session(frames_model_bytes(), PF_BACKEND_ONEDNN, precision, static_cast<int>(state.range(0)));
  if (!session) {
    state.SkipWithError(session.error().c_str());
    return;
  }
  const std::vector<uint8_t> src = camera_frame();
  pf_image img;
  pf_image_packed(&img, PF_PIXEL_RGB, src.data(), 1280, 720);
  std::vector<float> y(static_cast<size_t>(kFrameRows) * kOut);
  session->run_image(img, y.data());
  for (auto _ : state) {
    if (state.range(1) != 0) evict(y);
    if (!session->run_image(img, y.data()).empty()) state.SkipWithError("run failed");
    state.SetIterationTime(session->last_profile().kernel_ms * 1e-3);
  }
  state.SetLabel(session->info().detail);
  state.counters["GFLOP/s"] = benchmark::Counter(2.0 * kFrameRows * kFrameK * kOut * 1e-9,
                                                 benchmark::Counter::kIsIterationInvariantRate);
}

// Raw oneDNN on the same product, in calls of state.range(0) rows (the last call takes the rest),
// state.range(1) threads: f32 and bf16 as dnnl::matmul from rows already in the source type (the
// frames gather writes bf16 rows itself), int8 as the u8 x s8 1x1 convolution the session runs;
// weights in the layout each primitive asks for, an f32 bias (the folded normalization) and f32
// output, as the session's. `after_preprocessing`: before each frame, untimed, the frames session's
// resize of the camera frame (pf_session_preprocess, on as many threads): what the session's
// kernel runs after, without which raw's next call finds the caches and the AMX unit as its
// last call left them (docs/amx.md).
void raw_frames(benchmark::State& state, pf_precision precision, bool after_preprocessing) {
  using dt = dnnl::memory::data_type;
  using tag = dnnl::memory::format_tag;
  const int64_t chunk = std::min(state.range(0), kFrameRows), k = state.range(2);
  omp_set_num_threads(static_cast<int>(state.range(1)));
  const bool int8 = precision == PF_PRECISION_INT8;
  const dt src_t = int8 ? dt::u8 : precision == PF_PRECISION_BF16 ? dt::bf16 : dt::f32;
  const dt w_t = int8 ? dt::s8 : src_t;
  try {
    dnnl::engine eng(dnnl::engine::kind::cpu, 0);
    dnnl::stream strm(eng);
    dnnl::primitive_attr attr;
    if (int8) attr.set_output_scales(1 << 1, std::vector<float>(static_cast<size_t>(kOut), 1e-3f));
    const auto describe = [&](int64_t n) {
      if (int8) {
        return dnnl::primitive_desc_base(dnnl::convolution_forward::primitive_desc(
            dnnl::convolution_forward::desc(dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_direct,
                                            dnnl::memory::desc({1, k, 1, n}, dt::u8, tag::nhwc),
                                            dnnl::memory::desc({kOut, k, 1, 1}, dt::s8, tag::any),
                                            dnnl::memory::desc({kOut}, dt::f32, tag::a),
                                            dnnl::memory::desc({1, kOut, 1, n}, dt::f32, tag::nhwc), {1, 1}, {0, 0},
                                            {0, 0}, {0, 0}),
            attr, eng));
      }
      return dnnl::primitive_desc_base(dnnl::matmul::primitive_desc(
          dnnl::matmul::desc(dnnl::memory::desc({n, k}, src_t, tag::ab), dnnl::memory::desc({k, kOut}, w_t, tag::any),
                             dnnl::memory::desc({1, kOut}, dt::f32, tag::ab), dnnl::memory::desc({n, kOut}, dt::f32, tag::ab)),
          attr, eng));
    };
    // One primitive per call size, each with its own weights in its layout.
    struct Call {
      int64_t first, n;
      size_t plan;
    };
    std::vector<dnnl::primitive> prims;
    std::vector<dnnl::memory> packed;
    std::vector<int64_t> sizes;
    std::vector<Call> calls;
    std::vector<float> wf = values(static_cast<size_t>(kOut * k), 1), bias = values(static_cast<size_t>(kOut), 4);
    std::vector<int8_t> wq(wf.size());
    for (size_t i = 0; i < wf.size(); ++i) wq[i] = static_cast<int8_t>(wf[i] * 200);
    for (int64_t first = 0; first < kFrameRows; first += chunk) {
      const int64_t n = std::min(chunk, kFrameRows - first);
      size_t plan = std::find(sizes.begin(), sizes.end(), n) - sizes.begin();
      if (plan == sizes.size()) {
        const dnnl::primitive_desc_base pd = describe(n);
        dnnl::memory model_w = int8 ? dnnl::memory(dnnl::memory::desc({kOut, k, 1, 1}, dt::s8, tag::oihw), eng, wq.data())
                                    : dnnl::memory(dnnl::memory::desc({k, kOut}, dt::f32, tag::ba), eng, wf.data());
        dnnl::memory w(pd.weights_desc(), eng);
        dnnl::reorder(model_w, w).execute(strm, model_w, w);
        packed.push_back(w);
        prims.push_back(int8 ? dnnl::primitive(dnnl::convolution_forward(dnnl::convolution_forward::primitive_desc(pd.get())))
                             : dnnl::primitive(dnnl::matmul(dnnl::matmul::primitive_desc(pd.get()))));
        sizes.push_back(n);
        if (sizes.size() == 1) state.SetLabel(pd.impl_info_str());
      }
      calls.push_back({first, n, plan});
    }
    const size_t value_bytes = int8 ? 1 : src_t == dt::bf16 ? 2 : 4;
    std::vector<uint8_t> x = random_bytes(static_cast<size_t>(kFrameRows * k) * value_bytes, 2);
    if (!int8) {  // finite values: f32 or bf16 bit patterns of small numbers
      for (size_t i = 0; i + value_bytes <= x.size(); i += value_bytes) x[i + value_bytes - 1] = 0x3C;
    }
    std::vector<float> y(static_cast<size_t>(kFrameRows * kOut));
    const dnnl::memory::desc bias_md = int8 ? dnnl::memory::desc({kOut}, dt::f32, tag::a)
                                            : dnnl::memory::desc({1, kOut}, dt::f32, tag::ab);
    dnnl::memory b(bias_md, eng, bias.data());
    strm.wait();
    const std::vector<uint8_t> frame = camera_frame();
    pf_image img;
    pf_image_packed(&img, PF_PIXEL_RGB, frame.data(), 1280, 720);
    std::optional<patchfuse::Session> preprocessing;
    std::vector<uint8_t> resized;
    int64_t h = 0, w = 0;
    if (after_preprocessing) {
      auto session = bench::open_session(frames_model_bytes(), PF_BACKEND_ONEDNN, precision,
                                         static_cast<int>(state.range(1)));
      if (!session) return state.SkipWithError(session.error().c_str());
      preprocessing.emplace(std::move(*session));
      pf_session_preprocess(preprocessing->get(), &img, 1, nullptr, 0, &h, &w);  // asks the size
      resized.resize(static_cast<size_t>(h * w * 3));
    }
    for (auto _ : state) {
      if (state.range(3) != 0) evict(y);
      if (preprocessing &&
          pf_session_preprocess(preprocessing->get(), &img, 1, resized.data(), resized.size(), &h, &w) != PF_OK) {
        return state.SkipWithError(pf_last_error());
      }
      const auto start = std::chrono::steady_clock::now();
      for (const Call& c : calls) {
        const dnnl::memory::desc src_md = int8 ? dnnl::memory::desc({1, k, 1, c.n}, dt::u8, tag::nhwc)
                                               : dnnl::memory::desc({c.n, k}, src_t, tag::ab);
        const dnnl::memory::desc dst_md = int8 ? dnnl::memory::desc({1, kOut, 1, c.n}, dt::f32, tag::nhwc)
                                               : dnnl::memory::desc({c.n, kOut}, dt::f32, tag::ab);
        dnnl::memory src(src_md, eng, x.data() + static_cast<size_t>(c.first * k) * value_bytes);
        dnnl::memory dst(dst_md, eng, y.data() + c.first * kOut);
        prims[c.plan].execute(strm, {{DNNL_ARG_SRC, src}, {DNNL_ARG_WEIGHTS, packed[c.plan]}, {DNNL_ARG_BIAS, b},
                                     {DNNL_ARG_DST, dst}});
      }
      strm.wait();
      state.SetIterationTime(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    }
  } catch (const dnnl::error& e) {
    state.SkipWithError(e.what());
    return;
  }
  state.counters["GFLOP/s"] = benchmark::Counter(2.0 * kFrameRows * k * kOut * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
}

[[maybe_unused]] const bool registered = [] {
  // The camera frame's GEMM: the session's kernel stage beside raw oneDNN over calls of whole
  // merge rows of 184 (368 to 4784) and others; 704 and 768 beside 736 show oneDNN's AMX row
  // blocking, and raw-k608 (bf16, K padded to 608) its K tail (docs/performance.md).
  for (pf_precision p : {PF_PRECISION_F32, PF_PRECISION_BF16, PF_PRECISION_INT8}) {
    if (p == PF_PRECISION_BF16 && !bench::bf16_available()) continue;
    const std::string name = p == PF_PRECISION_F32 ? "f32" : p == PF_PRECISION_BF16 ? "bf16" : "int8";
    auto* session = benchmark::RegisterBenchmark(("FrameGemm/session/" + name + "/1280x720").c_str(), frames_kernel, p);
    for (int64_t cold : {0, 1})
      for (int64_t threads : {1, 2}) session->Args({threads, cold});
    session->ArgNames({"threads", "cold"})->UseManualTime()->Unit(benchmark::kMillisecond);
    auto* raw = benchmark::RegisterBenchmark(("FrameGemm/raw/" + name + "/1280x720").c_str(), raw_frames, p, false);
    auto* after = benchmark::RegisterBenchmark(("FrameGemm/raw-after-preprocessing/" + name + "/1280x720").c_str(),
                                               raw_frames, p, true);
    for (int64_t threads : {1, 2}) {
      for (int64_t rows : {368, 512, 704, 736, 768, 896, 1656, 2392, 4784}) raw->Args({rows, threads, kFrameK, 0});
      for (int64_t rows : {704, 896, 1196, 4784}) {
        raw->Args({rows, threads, kFrameK, 1});
        after->Args({rows, threads, kFrameK, 0});
      }
      // bf16 on AMX computes over K padded to 608 (row_padding), as FrameGemm/raw-k608 below.
      if (p == PF_PRECISION_BF16)
        for (int64_t rows : {704, 4784}) after->Args({rows, threads, 608, 0});
    }
    for (auto* b : {raw, after}) b->ArgNames({"rows", "threads", "k", "cold"})->UseManualTime()->Unit(benchmark::kMillisecond);
    if (p != PF_PRECISION_BF16) continue;
    auto* k608 = benchmark::RegisterBenchmark("FrameGemm/raw-k608/bf16/1280x720", raw_frames, p, false);
    for (int64_t threads : {1, 2})
      for (int64_t cold : {0, 1})
        for (int64_t rows : {704, 4784}) k608->Args({rows, threads, 608, cold});
    k608->ArgNames({"rows", "threads", "k", "cold"})->UseManualTime()->Unit(benchmark::kMillisecond);
  }
  return true;
}();

}  // namespace
