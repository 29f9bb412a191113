// Overhead microbenchmarks (Google Benchmark; built with the project, not run by ctest): a
// patchfuse session run against the raw backend call on the same weights and shapes, Qwen2-VL
// geometry (1176 -> 1280), N = 1, 16, 256, 1024, 4096, 1 and 2 threads. Run:
//   build/tests/bench/patchfuse-overhead-bench --benchmark_repetitions=5 --benchmark_enable_random_interleaving=true
//       --benchmark_report_aggregates_only=true
// and compare each Session/... median with the Raw/... median of the same arguments. Random
// interleaving runs the repetitions of all benchmarks shuffled, so a ratio is measured side by
// side rather than minutes apart.
// Frames/...: a still 448x448 image (1024 patches) through the frames path, and Gather/448x448:
// the gather alone (uint8 frame -> rows), so the gather's share of the frames path is one ratio.
// Int8/...: the int8 frames session on still images of 224, 448 and 896 (N = 256, 1024, 4096)
// beside RawInt8/matmul/...: oneDNN's u8 x s8 matmul (K = 588, per-channel scales fixed at
// creation, f32 bias and output) at the same N, and RawInt8/conv1x1/...: the same product as the
// 1x1 convolution the session runs, so the int8 session's overhead, gather included, is one ratio.
// FrameGemm/...: a 1280x720 frame's GEMM, the session's kernel stage beside raw oneDNN
// (frame_gemm_bench.cc, in this binary where oneDNN is built).
// Resize/...: the runtime's resize alone, 1 thread, on the camera sizes the camera issue names
// (1280x720 RGB -> 728x1288 and 1920x1080 -> 728x1316, BICUBIC; pil and torch semantics; NV12
// with its conversion; 1280x720 and 1920x1080 -> SigLIP's 384x384 and 224x224, and 4K and 12 MP
// -> 224x224), to set beside Pillow's Image.resize on the same sizes
// (tests/bench/pillow_resize.py, run alternately with this binary by tests/bench/resize_vs_pillow.sh);
// Resize/bound/...: every source byte read and every output byte written once, the least memory
// traffic a resize of those sizes does, to set the resize's time against. Resize/.../fresh: the
// 720p RGB and 1080p NV12 rows with each frame fresh from memory, as a camera's is.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "runtime/frames/gather.h"
#include "runtime/frames/resize.h"
#include "patchfuse/patchfuse.hpp"
#include "tests/bench/bench_models.h"

#ifdef PATCHFUSE_WITH_ONEDNN
#include <omp.h>

#include <oneapi/dnnl/dnnl.hpp>
#endif
#ifdef PATCHFUSE_WITH_XNNPACK
#include <pthreadpool.h>
#include <xnnpack.h>
#endif

namespace {

using bench::bf16_available;
using bench::frames_model_bytes;
using bench::kK;
using bench::kOut;
using bench::model_bytes;
using bench::random_bytes;
using bench::values;
using bench::weights;

constexpr size_t kSide = 448;  // a still 448x448 image: 32 x 32 = 1024 patches

const std::vector<uint8_t>& frame() {
  static const std::vector<uint8_t> f = random_bytes(kSide * kSide * 3, 7);
  return f;
}

// One still side x side image through a frames session; counts N and the GEMM's (G)OP/s.
void time_frames(benchmark::State& state, pf_backend backend, pf_precision precision, size_t side, int threads) {
  auto session = bench::open_session(frames_model_bytes(), backend, precision, threads);
  if (!session) {
    state.SkipWithError(session.error().c_str());
    return;
  }
  const std::vector<uint8_t> image = side == kSide ? frame() : random_bytes(side * side * 3, 7);
  const uint8_t* f = image.data();
  const size_t n = (side / 14) * (side / 14);
  std::vector<float> y(n * kOut);
  session->run_frames(&f, 1, side, side, side * 3, y.data());  // folds and packs the still weights once
  for (auto _ : state) {
    if (!session->run_frames(&f, 1, side, side, side * 3, y.data()).empty()) state.SkipWithError("run failed");
  }
  state.counters["N"] = static_cast<double>(n);
  state.counters["GFLOP/s"] = benchmark::Counter(2.0 * static_cast<double>(n) * (kK / 2) * kOut * 1e-9,
                                                 benchmark::Counter::kIsIterationInvariantRate);
}

// The 448x448 image on state.range(0) threads.
void frames_run(benchmark::State& state, pf_backend backend, pf_precision precision) {
  time_frames(state, backend, precision, kSide, static_cast<int>(state.range(0)));
}

// The gather alone into rows of T: float (f32 kernels) or uint8_t (int8 kernels).
template <class T>
void gather_only(benchmark::State& state) {
  const patchfuse::Preprocessing p = bench::preprocessing();
  const patchfuse::FrameGrid grid = patchfuse::frame_grid(p, 1, kSide, kSide).value();
  std::vector<T> rows(static_cast<size_t>(grid.rows()) * kK / 2);
  const uint8_t* f = frame().data();
  for (auto _ : state) {
    patchfuse::gather_rows(&f, 1, kSide * 3, 0, grid, p, 3, true, 0, patchfuse::gather_block_count(grid, p), rows.data());
    benchmark::DoNotOptimize(rows.data());
  }
}

// The resize alone, 1 thread: src_w x src_h of `format` -> out_h x out_w. fresh: each run takes
// the next of as many frames as fill 64 MB, more than a last-level cache, so that a frame comes
// from memory as a camera's does (the rows without it keep one frame in the cache).
void resize_only(benchmark::State& state, patchfuse::PixelFormat format, patchfuse::ResizeSemantics semantics, size_t src_w,
                 size_t src_h, size_t out_h, size_t out_w, bool fresh) {
  const bool nv12 = format == patchfuse::PixelFormat::kNv12;
  const size_t frame_bytes = nv12 ? src_w * src_h * 3 / 2 : src_w * src_h * 3;
  const size_t frames = fresh ? (size_t{64} << 20) / frame_bytes + 1 : 1;
  const std::vector<uint8_t> src = random_bytes(frames * frame_bytes, 11);
  patchfuse::ImageView v;
  v.format = format;
  v.width = src_w;
  v.height = src_h;
  v.row_stride[0] = nv12 ? src_w : src_w * 3;
  v.row_stride[1] = src_w;
  const auto frame = [&](size_t i) {
    v.planes[0] = src.data() + i % frames * frame_bytes;
    if (nv12) v.planes[1] = v.planes[0] + src_w * src_h;
  };
  frame(0);
  patchfuse::ResizeSpec s;
  s.src_h = src_h;
  s.src_w = src_w;
  s.resized_h = s.out_h = out_h;
  s.resized_w = s.out_w = out_w;
  s.semantics = semantics;
  const patchfuse::Resizer r = patchfuse::Resizer::create(s).value();
  std::vector<uint8_t> scratch(r.scratch_bytes(v)), out(out_h * out_w * 3);
  size_t i = 0;
  for (auto _ : state) {
    frame(i++);
    r.run(v, 0, out_h, scratch.data(), out.data());
    benchmark::DoNotOptimize(out.data());
  }
}

void resize_bound(benchmark::State& state, size_t src_bytes, size_t out_bytes) {
  const std::vector<uint8_t> src = random_bytes(src_bytes, 11);
  std::vector<uint8_t> out(out_bytes);
  uint8_t fill = 0;
  for (auto _ : state) {
    uint64_t sum = 0;
    for (size_t i = 0; i + 8 <= src.size(); i += 8) {
      uint64_t w;
      std::memcpy(&w, &src[i], 8);
      sum += w;
    }
    std::memset(out.data(), fill++, out.size());
    benchmark::DoNotOptimize(sum);
    benchmark::DoNotOptimize(out.data());
  }
}

// A camera image through the whole frames path (conversion, resize, gather, GEMM), on oneDNN f32.
void camera_run(benchmark::State& state, patchfuse::PixelFormat format, size_t src_w, size_t src_h) {
  auto session =
      bench::open_session(frames_model_bytes(), PF_BACKEND_AUTO, PF_PRECISION_AUTO, static_cast<int>(state.range(0)));
  if (!session) {
    state.SkipWithError(session.error().c_str());
    return;
  }
  const bool nv12 = format == patchfuse::PixelFormat::kNv12;
  const std::vector<uint8_t> src = random_bytes(nv12 ? src_w * src_h * 3 / 2 : src_w * src_h * 3, 11);
  pf_image img;
  pf_image_packed(&img, nv12 ? PF_PIXEL_NV12 : PF_PIXEL_RGB, src.data(), static_cast<int64_t>(src_w), static_cast<int64_t>(src_h));
  auto grid = session->images_grid(1, static_cast<int64_t>(src_h), static_cast<int64_t>(src_w));
  std::vector<float> y(static_cast<size_t>(grid->t * grid->h * grid->w) * kOut);
  session->run_image(img, y.data());
  for (auto _ : state) {
    if (!session->run_image(img, y.data()).empty()) state.SkipWithError("run failed");
  }
}

void set_counters(benchmark::State& state, size_t n) {
  state.counters["GFLOP/s"] = benchmark::Counter(2.0 * static_cast<double>(n) * kK * kOut * 1e-9,
                                                 benchmark::Counter::kIsIterationInvariantRate);
}

void session_run(benchmark::State& state, pf_backend backend, pf_precision precision) {
  const size_t n = static_cast<size_t>(state.range(0));
  auto session = bench::open_session(model_bytes(), backend, precision, static_cast<int>(state.range(1)));
  if (!session) {
    state.SkipWithError(session.error().c_str());
    return;
  }
  const std::vector<float> x = values(n * kK, 2);
  std::vector<float> y(n * kOut);
  session->run(x.data(), n, y.data());  // creates this N's primitives, as any first call does
  for (auto _ : state) {
    if (!session->run(x.data(), n, y.data()).empty()) state.SkipWithError("run failed");
  }
  set_counters(state, n);
}

#ifdef PATCHFUSE_WITH_ONEDNN
// dnnl::matmul built by hand: weights reordered to the primitive's layout once, execute + wait.
void raw_onednn(benchmark::State& state, bool bf16) {
  using dt = dnnl::memory::data_type;
  using tag = dnnl::memory::format_tag;
  const int64_t n = state.range(0);
  omp_set_num_threads(static_cast<int>(state.range(1)));
  try {
    dnnl::engine eng(dnnl::engine::kind::cpu, 0);
    dnnl::stream strm(eng);
    const dt t = bf16 ? dt::bf16 : dt::f32;
    dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(dnnl::memory::desc({n, kK}, t, tag::ab),
                                                       dnnl::memory::desc({kK, kOut}, t, tag::any),
                                                       dnnl::memory::desc({n, kOut}, dt::f32, tag::ab)),
                                    eng);
    std::vector<float> x = values(static_cast<size_t>(n * kK), 2), y(static_cast<size_t>(n * kOut));
    dnnl::memory wf(dnnl::memory::desc({kK, kOut}, dt::f32, tag::ba), eng, const_cast<float*>(weights().data()));
    dnnl::memory w(pd.weights_desc(), eng);
    dnnl::reorder(wf, w).execute(strm, wf, w);
    dnnl::memory xf(dnnl::memory::desc({n, kK}, dt::f32, tag::ab), eng, x.data());
    dnnl::memory src = bf16 ? dnnl::memory(pd.src_desc(), eng) : xf;
    dnnl::memory dst(pd.dst_desc(), eng, y.data());
    dnnl::reorder to_bf16;
    if (bf16) to_bf16 = dnnl::reorder(xf, src);
    dnnl::matmul mm(pd);
    strm.wait();
    for (auto _ : state) {
      if (bf16) to_bf16.execute(strm, xf, src);  // the f32 -> bf16 input conversion is part of the op
      mm.execute(strm, {{DNNL_ARG_SRC, src}, {DNNL_ARG_WEIGHTS, w}, {DNNL_ARG_DST, dst}});
      strm.wait();
    }
  } catch (const dnnl::error& e) {
    state.SkipWithError(e.what());
    return;
  }
  set_counters(state, static_cast<size_t>(n));
}

// The int8 frames session on one still side x side image (state.range(0)), threads state.range(1).
void int8_frames_run(benchmark::State& state) {
  time_frames(state, PF_BACKEND_ONEDNN, PF_PRECISION_INT8, static_cast<size_t>(state.range(0)),
              static_cast<int>(state.range(1)));
}

// u8 x s8 product with per-output-channel scales fixed at creation and an f32 bias, K = 588 (a
// still image's summed weights), N = state.range(0): as dnnl::matmul, or as the 1x1 convolution an
// int8 session runs ([1, K, 1, N] nhwc: the same bytes as the [N, K] rows).
void raw_onednn_int8(benchmark::State& state, bool conv) {
  using dt = dnnl::memory::data_type;
  using tag = dnnl::memory::format_tag;
  const int64_t n = state.range(0), k = kK / 2;
  omp_set_num_threads(static_cast<int>(state.range(1)));
  try {
    dnnl::engine eng(dnnl::engine::kind::cpu, 0);
    dnnl::stream strm(eng);
    dnnl::primitive_attr attr;
    attr.set_output_scales(1 << 1, std::vector<float>(static_cast<size_t>(kOut), 1e-3f));
    const dnnl::memory::desc any_w = conv ? dnnl::memory::desc({kOut, k, 1, 1}, dt::s8, tag::any)
                                          : dnnl::memory::desc({k, kOut}, dt::s8, tag::any);
    const dnnl::memory::desc model_w = conv ? dnnl::memory::desc({kOut, k, 1, 1}, dt::s8, tag::oihw)
                                            : dnnl::memory::desc({k, kOut}, dt::s8, tag::ba);
    dnnl::primitive_desc_base pd =
        conv ? dnnl::primitive_desc_base(dnnl::convolution_forward::primitive_desc(
                   dnnl::convolution_forward::desc(dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_direct,
                                                   dnnl::memory::desc({1, k, 1, n}, dt::u8, tag::nhwc), any_w,
                                                   dnnl::memory::desc({kOut}, dt::f32, tag::a),
                                                   dnnl::memory::desc({1, kOut, 1, n}, dt::f32, tag::nhwc), {1, 1}, {0, 0},
                                                   {0, 0}, {0, 0}),
                   attr, eng))
             : dnnl::primitive_desc_base(dnnl::matmul::primitive_desc(
                   dnnl::matmul::desc(dnnl::memory::desc({n, k}, dt::u8, tag::ab), any_w,
                                      dnnl::memory::desc({1, kOut}, dt::f32, tag::ab),
                                      dnnl::memory::desc({n, kOut}, dt::f32, tag::ab)),
                   attr, eng));
    std::vector<uint8_t> x = random_bytes(static_cast<size_t>(n * k), 2), wq = random_bytes(static_cast<size_t>(k * kOut), 3);
    std::vector<float> bias = values(static_cast<size_t>(kOut), 4), y(static_cast<size_t>(n * kOut));
    dnnl::memory ws(model_w, eng, wq.data());
    dnnl::memory w(pd.weights_desc(), eng);
    dnnl::reorder(ws, w).execute(strm, ws, w);
    dnnl::memory src(pd.src_desc(), eng, x.data()), b(pd.query_md(dnnl::query::weights_md, 1), eng, bias.data()),
        dst(pd.dst_desc(), eng, y.data());
    dnnl::primitive prim = conv ? dnnl::primitive(dnnl::convolution_forward(dnnl::convolution_forward::primitive_desc(pd.get())))
                                : dnnl::primitive(dnnl::matmul(dnnl::matmul::primitive_desc(pd.get())));
    strm.wait();
    state.SetLabel(pd.impl_info_str());
    for (auto _ : state) {
      prim.execute(strm, {{DNNL_ARG_SRC, src}, {DNNL_ARG_WEIGHTS, w}, {DNNL_ARG_BIAS, b}, {DNNL_ARG_DST, dst}});
      strm.wait();
    }
  } catch (const dnnl::error& e) {
    state.SkipWithError(e.what());
    return;
  }
  state.counters["GFLOP/s"] = benchmark::Counter(2.0 * static_cast<double>(n) * (kK / 2) * kOut * 1e-9,
                                                 benchmark::Counter::kIsIterationInvariantRate);
}
#endif

#ifdef PATCHFUSE_WITH_XNNPACK
// xnn fully-connected f32: created (packed) once, set up once, run per iteration.
void raw_xnnpack(benchmark::State& state) {
  const size_t n = static_cast<size_t>(state.range(0));
  if (xnn_initialize(nullptr) != xnn_status_success) {
    state.SkipWithError("xnn_initialize failed");
    return;
  }
  const int threads = static_cast<int>(state.range(1));
  pthreadpool_t pool = threads > 1 ? pthreadpool_create(static_cast<size_t>(threads)) : nullptr;
  xnn_operator_t op = nullptr;
  std::vector<float> x = values(n * kK + XNN_EXTRA_BYTES / sizeof(float), 2), y(n * kOut);
  if (xnn_create_fully_connected_nc_f32(kK, kOut, kK, kOut, weights().data(), nullptr, -INFINITY, INFINITY, 0, &op) !=
          xnn_status_success ||
      xnn_setup_fully_connected_nc_f32(op, n, x.data(), y.data(), pool) != xnn_status_success) {
    state.SkipWithError("xnnpack fully-connected f32 could not be created");
  } else {
    for (auto _ : state) xnn_run_operator(op, pool);
    set_counters(state, n);
  }
  if (op) xnn_delete_operator(op);
  if (pool) pthreadpool_destroy(pool);
}
#endif

void args(benchmark::internal::Benchmark* b) {
  for (int64_t threads : {1, 2})
    for (int64_t n : {1, 16, 256, 1024, 4096}) b->Args({n, threads});
  b->ArgNames({"N", "threads"})->UseRealTime()->Unit(benchmark::kMicrosecond);
}

[[maybe_unused]] const bool registered = [] {
#ifdef PATCHFUSE_WITH_ONEDNN
  benchmark::RegisterBenchmark("Session/onednn/f32", session_run, PF_BACKEND_ONEDNN, PF_PRECISION_F32)->Apply(args);
  benchmark::RegisterBenchmark("Raw/onednn/f32", raw_onednn, false)->Apply(args);
  if (bf16_available()) {
    benchmark::RegisterBenchmark("Session/onednn/bf16", session_run, PF_BACKEND_ONEDNN, PF_PRECISION_BF16)->Apply(args);
    benchmark::RegisterBenchmark("Raw/onednn/bf16", raw_onednn, true)->Apply(args);
  } else {
    std::fprintf(stderr, "note: oneDNN bf16 is not available on this CPU; its benchmarks are not registered\n");
  }
#endif
#ifdef PATCHFUSE_WITH_XNNPACK
  benchmark::RegisterBenchmark("Session/xnnpack/f32", session_run, PF_BACKEND_XNNPACK, PF_PRECISION_F32)->Apply(args);
  benchmark::RegisterBenchmark("Raw/xnnpack/f32", raw_xnnpack)->Apply(args);
#endif
  // The frames path, and the gather alone, for one still 448x448 image; threads 1 and 2.
  auto frames_args = [](benchmark::internal::Benchmark* b) {
    b->Arg(1)->Arg(2)->ArgNames({"threads"})->UseRealTime()->Unit(benchmark::kMicrosecond);
  };
#ifdef PATCHFUSE_WITH_ONEDNN
  benchmark::RegisterBenchmark("Frames/onednn/f32/448x448", frames_run, PF_BACKEND_ONEDNN, PF_PRECISION_F32)->Apply(frames_args);
  if (bf16_available()) {
    benchmark::RegisterBenchmark("Frames/onednn/bf16/448x448", frames_run, PF_BACKEND_ONEDNN, PF_PRECISION_BF16)->Apply(frames_args);
  }
  benchmark::RegisterBenchmark("Frames/onednn/int8/448x448", frames_run, PF_BACKEND_ONEDNN, PF_PRECISION_INT8)->Apply(frames_args);
  benchmark::RegisterBenchmark("Int8/onednn", int8_frames_run)->Apply([](benchmark::internal::Benchmark* b) {
    for (int64_t threads : {1, 2})
      for (int64_t side : {224, 448, 896}) b->Args({side, threads});
    b->ArgNames({"side", "threads"})->UseRealTime()->Unit(benchmark::kMicrosecond);
  });
  for (bool conv : {false, true}) {
    benchmark::RegisterBenchmark(conv ? "RawInt8/conv1x1/onednn" : "RawInt8/matmul/onednn", raw_onednn_int8, conv)
        ->Apply([](benchmark::internal::Benchmark* b) {
          for (int64_t threads : {1, 2})
            for (int64_t n : {256, 1024, 4096}) b->Args({n, threads});
          b->ArgNames({"N", "threads"})->UseRealTime()->Unit(benchmark::kMicrosecond);
        });
  }
#endif
#ifdef PATCHFUSE_WITH_XNNPACK
  benchmark::RegisterBenchmark("Frames/xnnpack/f32/448x448", frames_run, PF_BACKEND_XNNPACK, PF_PRECISION_F32)->Apply(frames_args);
#endif
  benchmark::RegisterBenchmark("Gather/448x448", gather_only<float>)->UseRealTime()->Unit(benchmark::kMicrosecond);
  benchmark::RegisterBenchmark("Gather/u8/448x448", gather_only<uint8_t>)->UseRealTime()->Unit(benchmark::kMicrosecond);
  using patchfuse::PixelFormat;
  using patchfuse::ResizeSemantics;
  const auto ms = [](benchmark::internal::Benchmark* b) { b->UseRealTime()->Unit(benchmark::kMillisecond); };
  // RGB into Pillow's bicubic: the camera issue's Qwen2-VL sizes; SigLIP's processor (384x384 or
  // 224x224, any aspect): horizontal windows of 15, 21 and 35 taps, the wide pass (VBMI's blocks
  // form takes the first two); a 4K frame and a 12 MP photo (both ways up) to 224: windows of 71
  // and 73 taps, past the unrolled 64 (the wide pass's loop over chunks; the vertical pass's over
  // quads).
  struct Sizes {
    size_t src_w, src_h, out_h, out_w;
  };
  for (const Sizes& z : {Sizes{1280, 720, 728, 1288}, Sizes{1920, 1080, 728, 1316}, Sizes{1280, 720, 384, 384},
                         Sizes{1920, 1080, 384, 384}, Sizes{1920, 1080, 224, 224}, Sizes{3840, 2160, 224, 224},
                         Sizes{4032, 3024, 224, 224}, Sizes{3024, 4032, 224, 224}}) {
    const std::string name = "Resize/pil/rgb/" + std::to_string(z.src_w) + "x" + std::to_string(z.src_h) + "->" +
                             std::to_string(z.out_h) + "x" + std::to_string(z.out_w);
    benchmark::RegisterBenchmark(name.c_str(), resize_only, PixelFormat::kRgb, ResizeSemantics::kPil, z.src_w, z.src_h,
                                 z.out_h, z.out_w, false)->Apply(ms);
  }
  benchmark::RegisterBenchmark("Resize/torch/rgb/1280x720->728x1288", resize_only, PixelFormat::kRgb, ResizeSemantics::kTorch,
                               1280, 720, 728, 1288, false)->Apply(ms);
  benchmark::RegisterBenchmark("Resize/pil/nv12/1920x1080->728x1316", resize_only, PixelFormat::kNv12, ResizeSemantics::kPil,
                               1920, 1080, 728, 1316, false)->Apply(ms);
  // The camera issue's two sources again, each frame fresh from memory.
  benchmark::RegisterBenchmark("Resize/pil/rgb/1280x720->728x1288/fresh", resize_only, PixelFormat::kRgb,
                               ResizeSemantics::kPil, 1280, 720, 728, 1288, true)->Apply(ms);
  benchmark::RegisterBenchmark("Resize/pil/nv12/1920x1080->728x1316/fresh", resize_only, PixelFormat::kNv12,
                               ResizeSemantics::kPil, 1920, 1080, 728, 1316, true)->Apply(ms);
  benchmark::RegisterBenchmark("Resize/bound/rgb/1280x720->728x1288", resize_bound, size_t{1280} * 720 * 3,
                               size_t{728} * 1288 * 3)->Apply(ms);
  benchmark::RegisterBenchmark("Resize/bound/nv12/1920x1080->728x1316", resize_bound, size_t{1920} * 1080 * 3 / 2,
                               size_t{728} * 1316 * 3)->Apply(ms);
  benchmark::RegisterBenchmark("Camera/rgb/1280x720", camera_run, PixelFormat::kRgb, 1280, 720)->Arg(1)->Arg(2)->ArgNames({"threads"})->Apply(ms);
  benchmark::RegisterBenchmark("Camera/nv12/1920x1080", camera_run, PixelFormat::kNv12, 1920, 1080)->Arg(1)->Arg(2)->ArgNames({"threads"})->Apply(ms);
  return true;
}();

}  // namespace

BENCHMARK_MAIN();
