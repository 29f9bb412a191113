// patchfuse-bench: on-device latency of the patch projection (DESIGN.md §4). For every
// backend x precision x path x threads x patches: init (open + session creation, packing
// included), pf_session_prepare for the size, first run, then timed runs after warm-up with min / mean / std / p50 / p90 / p99 /
// max, GFLOP/s, peak RSS; with --path both, fused and unfused are timed alternately, run for run,
// so their ratio is measured side by side under the same machine noise. With --image WxH the
// frames path (seeded synthetic uint8 frames: gather + GEMM on the folded weights, a still image at
// half K) is timed against the pixel_values path on the same number of patches, also alternately.
// With --output-stage patches,encoder-input both stages are timed alternately too, so the encoder
// input's cost (its epilogue, with the grid's terms cached) is a ratio from one run.
#include <sched.h>
#include <unistd.h>
#include <sys/resource.h>
#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>

#include "patchfuse/patchfuse.hpp"
#include "runtime/core/output_file.h"
#include "cli/command_line.h"
#include "tools/image_files.h"
#include "tools/output_diff.h"
#include "tools/machine_info.h"
#include "cli/npy.h"
#include "tools/option_names.h"
#include "tools/bench_cold.h"
#include "tools/bench_compare.h"

namespace {

using Clock = std::chrono::steady_clock;
using ojson = nlohmann::ordered_json;

double ms_since(Clock::time_point t) { return std::chrono::duration<double, std::milli>(Clock::now() - t).count(); }

double peak_rss_mb() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return u.ru_maxrss / 1024.0;  // KiB on Linux
}

struct Stats {
  double min = 0, mean = 0, std = 0, p50 = 0, p90 = 0, p99 = 0, max = 0;
};

Stats stats_of(std::vector<double> v) {
  Stats s;
  if (v.empty()) return s;
  std::sort(v.begin(), v.end());
  auto pct = [&](double p) {  // nearest-rank percentile
    const size_t rank = static_cast<size_t>(std::ceil(p / 100.0 * static_cast<double>(v.size())));
    return v[std::min(v.size() - 1, rank == 0 ? 0 : rank - 1)];
  };
  s.min = v.front();
  s.max = v.back();
  for (double x : v) s.mean += x;
  s.mean /= static_cast<double>(v.size());
  for (double x : v) s.std += (x - s.mean) * (x - s.mean);
  s.std = v.size() > 1 ? std::sqrt(s.std / static_cast<double>(v.size() - 1)) : 0.0;
  s.p50 = pct(50);
  s.p90 = pct(90);
  s.p99 = pct(99);
  return s;
}

struct Options {
  std::string model, input, json, pin, module, image, format = "rgb";
  std::vector<std::string> backends = {"auto"}, precisions = {"auto"}, stages = {"patches"};
  std::vector<int> threads = {1};
  std::vector<size_t> patches = {1024};
  std::string path = "fused";
  int warmup = 5, runs = 30;
  double min_time = 0.0;  // seconds of timed runs per configuration, on top of --runs
  uint32_t seed = 1;
  size_t frames = 1;
  bool frames_only = false;
  std::string csv;
  int cold = 0;             // --cold N: fresh processes per configuration
  bool cold_only = false;   // --cold-only: no steady table
  std::string weights_cache;
  std::string cold_child;   // hidden: this process is one of them ("prepare" or "no-prepare")
};

// What one timed configuration runs: the pixel_values path or the frames path, on a path, into
// an output stage.
struct Variant {
  pf_path path;
  bool frames;
  pf_output_stage stage;
  std::string name() const {
    return std::string(stage == PF_OUTPUT_ENCODER_INPUT ? "enc/" : "") + (frames ? "frames/" : "") +
           (path == PF_PATH_FUSED ? "fused" : "unfused");
  }
};

// One timed session.
struct Measured {
  std::string error;
  bool skipped = false;  // `error` is a refusal (PF_UNSUPPORTED: a combination the build or CPU does not offer)
  pf_session_info info{};
  double init_ms = 0, prepare_ms = 0, first_ms = 0;
  std::vector<double> runs_ms;
  double int8_error = -1;  // int8 frames: max |y - f32 reference| / max |f32 reference|; -1: not int8
  // frames: each timed run's stages (pf_session_last_profile) and the share of conversion + resize +
  // gather in that run's wall time
  std::vector<double> preprocess_ms, gather_ms, kernel_ms, preprocessing_share, encoder_input_ms;
  double first_setup_ms = 0;  // the first run's one-time work (pf_run_profile.setup_ms): 0 when prepare did it all
};

}  // namespace

namespace {

// FNV-1a 64 of the model file: the JSON's content hash, so two devices' results are known to be
// of the same model (compare notes when they are not).
std::string content_hash(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  uint64_t h = 1469598103934665603ull;
  std::vector<char> buf(1 << 16);
  while (in.read(buf.data(), static_cast<std::streamsize>(buf.size())) || in.gcount() > 0) {
    for (std::streamsize i = 0; i < in.gcount(); ++i) h = (h ^ static_cast<uint8_t>(buf[static_cast<size_t>(i)])) * 1099511628211ull;
  }
  char text[32];
  std::snprintf(text, sizeof text, "fnv1a64:%016llx", static_cast<unsigned long long>(h));
  return text;
}

std::string env_or_empty(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

}  // namespace

int main(int argc, char** argv) {
  if (argc >= 2 && std::string(argv[1]) == "compare") return patchfuse::bench_compare(argc, argv);
  Options o;
  CLI::App app{"patchfuse-bench: latency of a .pfb patch embedding on this device"};
  app.add_option("MODEL", o.model, "Model .pfb")->required();
  app.add_option("--backend", o.backends, "auto,reference,onednn,xnnpack,gemmlowp (comma list)")->delimiter(',')
      ->check(CLI::IsMember(patchfuse::keys_of(patchfuse::backend_names())));
  app.add_option("--precision", o.precisions, "auto,f32,bf16,f16,int8 (comma list; int8: the frames path only)")->delimiter(',')
      ->check(CLI::IsMember(patchfuse::keys_of(patchfuse::precision_names())));
  app.add_option("--threads", o.threads, "Thread counts (comma list)")->delimiter(',')->check(CLI::Range(1, 1024));
  app.add_option("--patches", o.patches, "Patch counts N (comma list)")->delimiter(',')->check(CLI::Range(1, 1 << 24));
  app.add_option("--output-stage", o.stages, "patches,encoder-input (comma list; encoder-input needs --image for its grid)")
      ->delimiter(',')->check(CLI::IsMember(patchfuse::keys_of(patchfuse::output_stage_names())));
  app.add_option("--path", o.path, "fused, unfused or both")->check(CLI::IsMember({"fused", "unfused", "both"}));
  app.add_option("--warmup", o.warmup, "Untimed runs after the first")->check(CLI::Range(0, 100000));
  app.add_option("--runs", o.runs, "Timed runs (at least)")->check(CLI::Range(1, 1000000));
  app.add_option("--min-time", o.min_time, "Also run until this many seconds are timed")->check(CLI::Range(0.0, 3600.0));
  app.add_option("--input", o.input, "float32 .npy [M, patch_volume]; rows are repeated to fill N (default: seeded random)");
  app.add_option("--seed", o.seed, "Seed of the synthetic input");
  app.add_option("--module", o.module, "Module path when the model has several");
  app.add_option("--pin", o.pin, "Pin the process (and its threads) to these CPUs, e.g. 0,1");
  app.add_option("--json", o.json, "Write every figure, the machine and the configuration as JSON");
  app.add_option("--csv", o.csv, "Also write one line per configuration as CSV (the table's columns, skipped/error reason)");
  app.add_option("--image", o.image, "WxH: also time the frames path on a synthetic camera image of this size "
                                     "(width x height, e.g. 1280x720; resized to the processor's size inside), beside the pixel_values "
                                     "path on its patches, with each run's time per stage (conversion + resize, gather, kernel)");
  app.add_option("--format", o.format, "Pixel format of the --image source: rgb|bgr|rgba|bgra|gray8|nv12|nv21|i420|yuyv")
      ->check(CLI::IsMember(patchfuse::keys_of(patchfuse::pixel_format_names())));
  app.add_option("--frames", o.frames, "Frames of the --image video (1 = still image)")->check(CLI::Range(1, 4096));
  app.add_flag("--frames-only", o.frames_only, "With --image: time the frames path only, not pixel_values rows of the same N");
  app.add_option("--cold", o.cold, "After the steady table (same JSON): N fresh processes per backend x precision x threads, "
                                   "with and without pf_session_prepare; medians of open, create, prepare, first run, steady p50 "
                                   "back to back and at 30/s (fused path, synthetic input, first --output-stage and --patches)")
      ->check(CLI::Range(1, 1000));
  app.add_option("--weights-cache", o.weights_cache, "Packed-weights cache file: each session maps it (written when it "
                                                     "does not match); with --cold, a path prefix, and each configuration is "
                                                     "also timed with prepare and its own cache file, written first");
  app.add_flag("--cold-only", o.cold_only, "With --cold: only the cold start, no steady table");
  app.add_option("--cold-child", o.cold_child)->check(CLI::IsMember({"prepare", "no-prepare"}))->group("");
  if (auto code = patchfuse::parse_command_line(app, argc, argv, "patchfuse-bench")) return *code;
  auto fail = [](const std::string& m) {
    std::fprintf(stderr, "patchfuse-bench: error: %s\n", m.c_str());
    return 1;
  };

  if (o.cold_only && o.cold == 0) {
    std::fprintf(stderr, "patchfuse-bench: usage error: --cold-only goes with --cold N\n");
    return 2;
  }
  if (o.cold_only && (o.path != "fused" || !o.input.empty())) {
    std::fprintf(stderr, "patchfuse-bench: usage error: --cold times the fused path on synthetic input: drop --path and --input\n");
    return 2;
  }
  // The cold start's configuration, less what each process varies (backend, precision, threads, prepare).
  const auto cold_config = [&o] {
    patchfuse::ColdConfig c;
    c.model = o.model;
    c.module = o.module;
    c.stage = o.stages.front();
    c.image = o.image;
    c.format = o.format;
    c.frames = o.frames;
    c.patches = o.patches.front();
    c.warmup = o.warmup;
    c.runs = o.runs;
    c.seed = o.seed;
    return c;
  };
  if (!o.cold_child.empty()) {
    patchfuse::ColdConfig c = cold_config();
    c.backend = o.backends.front();
    c.precision = o.precisions.front();
    c.threads = o.threads.front();
    c.prepare = o.cold_child == "prepare";
    c.weights_cache = o.weights_cache;
    return patchfuse::cold_child(c);
  }

  if (!o.pin.empty()) {
    cpu_set_t set;
    CPU_ZERO(&set);
    std::stringstream ss(o.pin);
    for (std::string cpu; std::getline(ss, cpu, ',');) {
      char* end = nullptr;
      const long c = std::strtol(cpu.c_str(), &end, 10);
      if (cpu.empty() || *end != '\0' || c < 0 || c >= CPU_SETSIZE) {
        std::fprintf(stderr, "patchfuse-bench: usage error: --pin '%s': '%s' is not a CPU number\n", o.pin.c_str(), cpu.c_str());
        return 2;
      }
      CPU_SET(static_cast<int>(c), &set);
    }
    if (sched_setaffinity(0, sizeof(set), &set) != 0) return fail("--pin " + o.pin + ": sched_setaffinity failed");
  }

  const patchfuse::MachineInfo machine = patchfuse::machine_info();
  if (machine.emulated) {
    std::fprintf(stderr, "note: running under user-mode emulation (qemu): these figures show function, not speed\n");
  }
  for (const std::string& out : {o.json, o.csv}) {  // refused before the runs, not after
    if (const patchfuse::Status s = patchfuse::check_not_an_input(out, {o.model}); !s.ok()) return fail(s.error().message);
  }

  // Probe the model once for its geometry and module.
  auto probe = patchfuse::Model::open_file(o.model);
  if (!probe) return fail(probe.error());
  size_t index = 0;
  if (!o.module.empty()) {
    auto found = probe->find_module(o.module);
    if (!found) return fail(o.model + ": " + found.error());
    index = *found;
  } else if (probe->module_count() > 1) {
    return fail(o.model + ": the model has several modules; choose one with --module");
  }
  const pf_module_info info = probe->module(index);
  const size_t k = static_cast<size_t>(info.patch_volume), out = static_cast<size_t>(info.embed_dim);
  struct stat st {};
  ::stat(o.model.c_str(), &st);
  const double model_mb = static_cast<double>(st.st_size) / (1 << 20);

  // --image: synthetic source frames, their grid (N is its row count) and the processor's frame size.
  std::vector<patchfuse::Image> sources;
  std::vector<pf_image> views;
  int64_t resized_h = 0, resized_w = 0;
  pf_grid image_grid{};
  const bool encoder = std::count(o.stages.begin(), o.stages.end(), "encoder-input") > 0;
  if (o.frames_only && o.image.empty()) {
    std::fprintf(stderr, "patchfuse-bench: usage error: --frames-only goes with --image WxH\n");
    return 2;
  }
  if (encoder && o.image.empty()) {
    std::fprintf(stderr, "patchfuse-bench: usage error: --output-stage encoder-input needs --image WxH (its terms depend on the grid)\n");
    return 2;
  }
  if (!o.image.empty()) {
    size_t w = 0, h = 0;
    if (!patchfuse::parse_size(o.image, w, h) || h > 16384 || w > 16384) {
      std::fprintf(stderr, "patchfuse-bench: usage error: --image '%s' must be WxH (width x height, at most 16384 each), "
                           "e.g. 1280x720\n", o.image.c_str());
      return 2;
    }
    for (size_t f = 0; f < o.frames; ++f) {
      sources.push_back(patchfuse::synthetic_image(patchfuse::pixel_format_names().at(o.format), h, w, o.seed + static_cast<uint32_t>(f)));
    }
    for (const auto& src : sources) views.push_back(src.view());
    pf_session_options so = patchfuse::default_options();
    so.backend = PF_BACKEND_REFERENCE;
    auto s = patchfuse::Session::create(*probe, index, so);
    if (!s) return fail(o.model + ": " + s.error());
    auto grid = s->images_grid(o.frames, static_cast<int64_t>(h), static_cast<int64_t>(w));
    if (!grid) return fail(o.model + ": --image " + o.image + ": " + grid.error());
    auto frame = s->preprocess(views[0], views.size(), &resized_h, &resized_w);
    if (!frame) return fail(o.model + ": --image " + o.image + ": " + frame.error());
    o.patches = {static_cast<size_t>(grid->t * grid->h * grid->w)};
    image_grid = *grid;
  }
  const size_t max_n = *std::max_element(o.patches.begin(), o.patches.end());
  std::vector<float> input = o.input.empty() ? patchfuse::synthetic_rows(max_n * k, o.seed) : std::vector<float>(max_n * k);
  if (!o.input.empty()) {
    auto x = patchfuse::read_npy(o.input);
    if (!x.ok()) return fail(x.error().message);
    if (x->descr != "<f4" || x->shape.size() != 2 || x->shape[1] != info.patch_volume || x->shape[0] == 0) {
      return fail(o.input + ": must be float32 [M, " + std::to_string(k) + "] with M >= 1");
    }
    const float* rows = reinterpret_cast<const float*>(x->bytes.data());
    const size_t m = static_cast<size_t>(x->shape[0]);
    for (size_t i = 0; i < max_n; ++i) std::copy(rows + (i % m) * k, rows + (i % m + 1) * k, input.begin() + static_cast<std::ptrdiff_t>(i * k));
  }
  std::vector<float> output((max_n + static_cast<size_t>(image_grid.t)) * out);  // room for class rows

  std::vector<Variant> paths;
  for (const std::string& stage : o.stages) {
    for (bool f : {false, true}) {
      if ((f && views.empty()) || (!f && o.frames_only)) continue;
      const pf_output_stage st = patchfuse::output_stage_names().at(stage);
      if (o.path != "unfused") paths.push_back({PF_PATH_FUSED, f, st});
      if (o.path != "fused") paths.push_back({PF_PATH_UNFUSED, f, st});
    }
  }
  // One timed call of variant `v` on a session.
  auto run = [&](patchfuse::Session& s, const Variant& v, size_t n) {
    if (v.frames) return s.run_video(views.data(), views.size(), output.data());
    return v.stage == PF_OUTPUT_ENCODER_INPUT ? s.run_grid(input.data(), image_grid, output.data())
                                              : s.run(input.data(), n, output.data());
  };

  ojson results = ojson::array();
  std::printf("%s: module %s, %zu -> %zu, %s weights, %.1f MB file; %s (%s), %d CPUs online%s\n", o.model.c_str(), info.path,
              k, out, info.dtype == PF_DTYPE_F32 ? "f32" : info.dtype == PF_DTYPE_F16 ? "f16" : "bf16", model_mb,
              machine.cpu_model.c_str(), machine.architecture.c_str(), machine.online_cpus,
              machine.emulated ? " [EMULATED: not a speed measurement]" : "");
  if (!views.empty()) {
    std::printf("frames: %zu synthetic %s frame%s of %zux%zu (width x height, seed %u) -> the processor's %lldx%lld -> %zu "
                "patches; pixel_values rows are timed on the same N\n",
                views.size(), o.format.c_str(), views.size() == 1 ? "" : "s", sources[0].width, sources[0].height, o.seed,
                static_cast<long long>(resized_w), static_cast<long long>(resized_h), max_n);
  }
  size_t ran = 0;
  if (!o.cold_only) {
    std::printf("%-9s %-9s %-13s %3s %6s | %8s %8s %8s | %8s %8s %8s %8s %8s %8s | %8s %7s %s\n", "backend", "precision", "path",
                "thr", "N", "init_ms", "prep_ms", "first_ms", "p50_ms", "p90_ms", "p99_ms", "min_ms", "mean_ms", "std_ms", "GFLOP/s", "rss_MB",
                "speedup");
    const size_t total = o.backends.size() * o.precisions.size() * o.threads.size() * o.patches.size();
    size_t done = 0;
    for (const std::string& backend : o.backends) {
      for (const std::string& precision : o.precisions) {
        for (int threads : o.threads) {
          for (size_t n : o.patches) {
            std::fprintf(stderr, "[%zu/%zu] %s %s threads=%d N=%zu ...\n", ++done, total, backend.c_str(), precision.c_str(),
                         threads, n);
            // Init = open + create, measured per session.
            std::vector<Measured> m(paths.size());
            std::vector<std::optional<patchfuse::Model>> models(paths.size());
            std::vector<std::optional<patchfuse::Session>> sessions(paths.size());
            for (size_t p = 0; p < paths.size(); ++p) {
              const auto t0 = Clock::now();
              auto model = patchfuse::Model::open_file(o.model);
              if (!model) {
                m[p].error = model.error();
                continue;
              }
              pf_session_options so = patchfuse::default_options();
              so.backend = patchfuse::backend_names().at(backend);
              so.precision = patchfuse::precision_names().at(precision);
              so.threads = threads;
              so.path = paths[p].path;
              so.output_stage = paths[p].stage;
              so.weights_cache = o.weights_cache.empty() ? nullptr : o.weights_cache.c_str();
              auto session = patchfuse::Session::create(*model, index, so);
              if (!session) {
                m[p].error = session.error();
                m[p].skipped = session.status() == PF_UNSUPPORTED;
                continue;
              }
              m[p].init_ms = ms_since(t0);
              // Everything the first run of this size would do once (pf_session_prepare), timed on its own.
              const pf_grid rows_grid = paths[p].stage == PF_OUTPUT_ENCODER_INPUT ? image_grid : pf_grid{1, 1, static_cast<int64_t>(n)};
              const auto tp = Clock::now();
              const pf_input_shape shape = patchfuse::input_shape(paths[p].frames ? views : std::vector<pf_image>(), rows_grid);
              const pf_status prepared = pf_session_prepare(session->get(), &shape);
              if (prepared != PF_OK) {
                m[p].error = pf_last_error();
                m[p].skipped = prepared == PF_UNSUPPORTED;
              }
              m[p].prepare_ms = ms_since(tp);
              if (!m[p].error.empty()) continue;
              const auto t1 = Clock::now();
              m[p].error = run(*session, paths[p], n);
              m[p].first_ms = ms_since(t1);
              m[p].first_setup_ms = session->last_profile().setup_ms;
              m[p].info = session->info();
              if (m[p].error.empty() && m[p].info.precision == PF_PRECISION_INT8) {
                // int8's error, against the float model on the same frames (the reference backend in f32).
                pf_session_options ro = patchfuse::default_options();
                ro.backend = PF_BACKEND_REFERENCE;
                ro.output_stage = paths[p].stage;
                auto ref = patchfuse::Session::create(*model, index, ro);
                std::vector<float> y(output.begin(), output.begin() + static_cast<std::ptrdiff_t>(n * out)), want(n * out);
                m[p].error = ref ? ref->run_video(views.data(), views.size(), want.data()) : ref.error();
                m[p].int8_error = patchfuse::output_diff(y, want).relative();
              }
              models[p].emplace(std::move(*model));
              sessions[p].emplace(std::move(*session));
            }
            for (int w = 0; w < o.warmup; ++w) {
              for (size_t p = 0; p < paths.size(); ++p) {
                if (sessions[p] && m[p].error.empty()) m[p].error = run(*sessions[p], paths[p], n);
              }
            }
            // Timed runs, alternating the paths run for run.
            const auto start = Clock::now();
            for (int r = 0; r < 1000000 && (r < o.runs || ms_since(start) < o.min_time * 1000.0); ++r) {
              for (size_t p = 0; p < paths.size(); ++p) {
                if (!sessions[p] || !m[p].error.empty()) continue;
                const auto t = Clock::now();
                m[p].error = run(*sessions[p], paths[p], n);
                const double wall = ms_since(t);
                m[p].runs_ms.push_back(wall);
                if (paths[p].stage == PF_OUTPUT_ENCODER_INPUT) {
                  m[p].encoder_input_ms.push_back(sessions[p]->last_profile().encoder_input_ms);
                }
                if (paths[p].frames) {
                  const pf_run_profile pr = sessions[p]->last_profile();
                  m[p].preprocess_ms.push_back(pr.preprocess_ms);
                  m[p].gather_ms.push_back(pr.gather_ms);
                  m[p].kernel_ms.push_back(pr.kernel_ms);
                  m[p].preprocessing_share.push_back((pr.preprocess_ms + pr.gather_ms) / wall);
                }
              }
            }
            const double rss = peak_rss_mb();
            std::vector<Stats> s(paths.size());
            for (size_t p = 0; p < paths.size(); ++p) s[p] = stats_of(m[p].runs_ms);
            // Side-by-side ratios: unfused over fused (same input), pixel_values over frames (same path),
            // both within one stage; and the encoder input over the patches (same path and input).
            enum class Pair { kPath, kInput, kStage };
            auto partner = [&](size_t p, Pair pair) -> std::optional<size_t> {
              for (size_t q = 0; q < paths.size(); ++q) {
                const bool same_path = paths[q].path == paths[p].path, same_input = paths[q].frames == paths[p].frames,
                           same_stage = paths[q].stage == paths[p].stage;
                const bool match = pair == Pair::kInput  ? same_path && !same_input && same_stage
                                   : pair == Pair::kPath ? same_input && !same_path && same_stage
                                                         : same_path && same_input && !same_stage;
                if (match && m[q].error.empty() && m[p].error.empty() && s[q].p50 > 0) return q;
              }
              return std::nullopt;
            };
            for (size_t p = 0; p < paths.size(); ++p) {
              const std::string path_name = paths[p].name();
              const auto other_path = partner(p, Pair::kPath);
              const double unfused_over_fused = !other_path ? 0.0
                                                : paths[p].path == PF_PATH_FUSED ? s[*other_path].p50 / s[p].p50
                                                                                 : s[p].p50 / s[*other_path].p50;
              const auto pixels_partner = paths[p].frames ? partner(p, Pair::kInput) : std::nullopt;
              const auto patches_partner = paths[p].stage == PF_OUTPUT_ENCODER_INPUT ? partner(p, Pair::kStage) : std::nullopt;
              const double over_patches = patches_partner ? s[p].p50 / s[patches_partner.value()].p50 : 0.0;
              const double pixels_over_frames = pixels_partner ? s[*pixels_partner].p50 / s[p].p50 : 0.0;
              // The table shows each ratio once: on the fused row, and on the frames row.
              const double speedup = pixels_partner ? pixels_over_frames : paths[p].path == PF_PATH_FUSED ? unfused_over_fused : 0.0;
              ojson j = {{"backend_requested", backend}, {"precision_requested", precision}, {"path", path_name},
                         {"threads_requested", threads}, {"patches", n}};
              if (!m[p].error.empty()) {
                std::printf("%-9s %-9s %-13s %3d %6zu | %s: %s\n", backend.c_str(), precision.c_str(), path_name.c_str(), threads,
                            n, m[p].skipped ? "skipped" : "error", m[p].error.c_str());
                j[m[p].skipped ? "skipped" : "error"] = m[p].error;  // a refusal is expected; an error is not
                results.push_back(j);
                continue;
              }
              ++ran;
              const pf_session_info& si = m[p].info;
              // GFLOP/s of the GEMM actually run: a Conv3d's still-image frames path has K = C*P*P.
              const bool summed = paths[p].frames && views.size() == 1 && info.spatial_rank == 3;
              const size_t k_run = summed ? k / static_cast<size_t>(info.kernel[0]) : k;
              const double gflops = 2.0 * static_cast<double>(n) * static_cast<double>(k_run) * static_cast<double>(out) / (s[p].p50 * 1e6);
              std::printf("%-9s %-9s %-13s %3d %6zu | %8.3f %8.3f %8.3f | %8.4f %8.4f %8.4f %8.4f %8.4f %8.4f | %8.1f %7.1f %s\n",
                          pf_backend_name(si.backend), patchfuse::precision_text(si.precision), path_name.c_str(), si.threads, n,
                          m[p].init_ms, m[p].prepare_ms, m[p].first_ms, s[p].p50, s[p].p90, s[p].p99, s[p].min, s[p].mean, s[p].std, gflops, rss,
                          speedup > 0 ? ("x" + std::to_string(speedup).substr(0, 5)).c_str() : "");
              if (!m[p].preprocess_ms.empty()) {
                const double pre = stats_of(m[p].preprocess_ms).p50, gather = stats_of(m[p].gather_ms).p50,
                             kernel = stats_of(m[p].kernel_ms).p50, share = stats_of(m[p].preprocessing_share).p50;
                std::printf("%-9s   %zux%zu %s -> %lldx%lld, p50 per stage: conversion + resize %.4f ms, gather %.4f ms, "
                            "kernel %.4f ms; conversion + resize + gather = %.1f%% of the frames run (median over runs)\n",
                            "", sources[0].width, sources[0].height, o.format.c_str(), static_cast<long long>(resized_w),
                            static_cast<long long>(resized_h), pre, gather, kernel, 100.0 * share);
                j["stages_p50_ms"] = {{"conversion_resize", pre}, {"gather", gather}, {"kernel", kernel}};
                j["preprocessing_share_p50"] = share;
              }
              if (!m[p].encoder_input_ms.empty()) {
                const double epilogue = stats_of(m[p].encoder_input_ms).p50;
                std::printf("%-9s   encoder input: epilogue p50 %.4f ms%s\n", "", epilogue,
                            over_patches > 0 ? (", run p50 x" + std::to_string(over_patches).substr(0, 5) + " the patches stage's").c_str()
                                             : "");
                j["encoder_input_epilogue_p50_ms"] = epilogue;
                if (over_patches > 0) j["encoder_input_over_patches_p50"] = over_patches;
              }
              if (m[p].int8_error >= 0) {
                std::printf("%-9s   int8 vs the f32 model on these frames: max |err| %.3g of max |ref|\n", "", m[p].int8_error);
                j["int8_max_error_of_max_ref"] = m[p].int8_error;
              }
              j["backend"] = pf_backend_name(si.backend);
              j["precision"] = patchfuse::precision_text(si.precision);
              j["threads"] = si.threads;
              j["kernel"] = si.detail;
              j["isa"] = si.isa;
              if (si.note[0] != '\0') j["note"] = si.note;
              j["init_ms"] = m[p].init_ms;
              j["first_run_ms"] = m[p].first_ms;
              j["prepare_ms"] = m[p].prepare_ms;
              j["cold_start_ms"] = m[p].init_ms + m[p].prepare_ms + m[p].first_ms;
              j["cold_start_over_p50"] = (m[p].init_ms + m[p].prepare_ms + m[p].first_ms) / s[p].p50;
              j["first_run_over_p50"] = m[p].first_ms / s[p].p50;
              j["first_run_setup_ms"] = m[p].first_setup_ms;
              j["warmup_runs"] = o.warmup;
              j["timed_runs"] = m[p].runs_ms.size();
              j["latency_ms"] = {{"min", s[p].min}, {"mean", s[p].mean}, {"std", s[p].std}, {"p50", s[p].p50},
                                 {"p90", s[p].p90}, {"p99", s[p].p99}, {"max", s[p].max}};
              j["gflops_at_p50"] = gflops;
              j["samples_ms"] = m[p].runs_ms;  // every timed run, in order: another statistic needs no re-run
              j["frame_kernels"] = si.frame_kernels;
              j["peak_rss_mb"] = rss;
              if (other_path) j["unfused_over_fused_p50"] = unfused_over_fused;
              if (pixels_partner) j["pixels_over_frames_p50"] = pixels_over_frames;
              j["input"] = paths[p].frames ? "frames" : "pixel_values";
              j["output_stage"] = paths[p].stage == PF_OUTPUT_ENCODER_INPUT ? "encoder-input" : "patches";
              results.push_back(j);
            }
          }
        }
      }
    }
  }

  // The cold start, in fresh processes of this executable (qemu-user answers /proc/self/exe with
  // the emulated binary's path, not its own).
  ojson cold = ojson::array();
  if (o.cold > 0) {
    std::vector<patchfuse::ColdConfig> configs;
    for (const std::string& backend : o.backends) {
      for (const std::string& precision : o.precisions) {
        for (int threads : o.threads) {
          configs.push_back(cold_config());
          configs.back().backend = backend;
          configs.back().precision = precision;
          configs.back().threads = threads;
        }
      }
    }
    std::string self(4096, '\0');
    const ssize_t len = readlink("/proc/self/exe", self.data(), self.size());
    if (len <= 0) return fail("--cold: cannot find this executable (/proc/self/exe)");
    self.resize(static_cast<size_t>(len));
    if (!o.cold_only) std::printf("\n");
    cold = patchfuse::cold_parent(self, configs, o.cold, o.weights_cache);
    for (const ojson& r : cold) ran += !r.contains("error") && !r.contains("skipped");
  }

  if (!o.json.empty()) {
    ojson doc = {
        {"tool", std::string("patchfuse-bench ") + pf_version()},
        {"model", {{"file", o.model}, {"bytes", st.st_size}, {"content_hash", content_hash(o.model)}, {"module", info.path},
                   {"patch_volume", k}, {"embed_dim", out}}},
        {"isa_caps", {{"ONEDNN_MAX_CPU_ISA", env_or_empty("ONEDNN_MAX_CPU_ISA")},
                      {"PATCHFUSE_MAX_CPU_ISA", env_or_empty("PATCHFUSE_MAX_CPU_ISA")}}},
        {"machine",
         {{"cpu", machine.cpu_model}, {"architecture", machine.architecture}, {"isa_features", machine.isa_features},
          {"online_cpus", machine.online_cpus}, {"emulated", machine.emulated}, {"pinned_cpus", o.pin}}},
        {"configuration",
         {{"backends", o.backends}, {"precisions", o.precisions}, {"threads", o.threads}, {"patches", o.patches},
          {"path", o.path}, {"output_stages", o.stages}, {"warmup", o.warmup}, {"runs", o.runs}, {"min_time_s", o.min_time},
          {"input", o.input.empty() ? "synthetic, seed " + std::to_string(o.seed) : o.input},
          {"image", o.image}, {"image_format", o.format}, {"frames", views.size()}, {"cold_processes", o.cold},
          {"cold_only", o.cold_only}}},
        {"results", results}};
    if (o.cold > 0) doc["cold"] = cold;
    const std::string text = doc.dump(2) + "\n";
    patchfuse::Status w = patchfuse::write_file_atomically(o.json, std::vector<uint8_t>(text.begin(), text.end()));
    if (!w.ok()) return fail(w.error().message);
  }
  if (!o.csv.empty()) {
    std::string text = "backend_requested,precision_requested,path,threads,patches,output_stage,backend,precision,init_ms,"
                       "prepare_ms,first_run_ms,p50_ms,p90_ms,p99_ms,min_ms,mean_ms,gflops_at_p50,skipped_or_error\n";
    const auto quoted = [](std::string v) {
      for (size_t i = 0; (i = v.find('"', i)) != std::string::npos; i += 2) v.insert(i, 1, '"');
      return "\"" + v + "\"";
    };
    for (const ojson& r : results) {
      const auto num = [&](const char* key) { return r.contains(key) ? r[key].dump() : std::string(); };
      const auto lat = [&](const char* key) { return r.contains("latency_ms") ? r["latency_ms"][key].dump() : std::string(); };
      text += r["backend_requested"].get<std::string>() + "," + r["precision_requested"].get<std::string>() + "," +
              r["path"].get<std::string>() + "," + r["threads_requested"].dump() + "," + r["patches"].dump() + "," +
              r.value("output_stage", "") + "," + r.value("backend", "") + "," + r.value("precision", "") + "," +
              num("init_ms") + "," + num("prepare_ms") + "," + num("first_run_ms") + "," + lat("p50") + "," + lat("p90") + "," +
              lat("p99") + "," + lat("min") + "," + lat("mean") + "," + num("gflops_at_p50") + "," +
              quoted(r.value("skipped", r.value("error", ""))) + "\n";
    }
    patchfuse::Status w = patchfuse::write_file_atomically(o.csv, std::vector<uint8_t>(text.begin(), text.end()));
    if (!w.ok()) return fail(w.error().message);
  }
  return ran > 0 ? 0 : fail("no configuration could run");
}
