#include "tools/bench_cold.h"

#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <nlohmann/json.hpp>
#include <thread>

#include "patchfuse/patchfuse.hpp"
#include "runtime/core/output_file.h"
#include "tools/image_files.h"
#include "tools/option_names.h"

extern char** environ;

namespace patchfuse {

namespace {

using Clock = std::chrono::steady_clock;
using ojson = nlohmann::ordered_json;

double ms_since(Clock::time_point t) { return std::chrono::duration<double, std::milli>(Clock::now() - t).count(); }

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t m = v.size() / 2;
  return v.size() % 2 ? v[m] : (v[m - 1] + v[m]) / 2;
}

int child_error(const std::string& message) {
  std::printf("%s\n", ojson{{"error", message}}.dump().c_str());
  return 1;
}
// A configuration the build or CPU does not offer (PF_UNSUPPORTED): reported as skipped, not as an error.
int child_refused(pf_status status, const std::string& message) {
  if (status != PF_UNSUPPORTED) return child_error(message);
  std::printf("%s\n", ojson{{"skipped", message}}.dump().c_str());
  return 1;
}

// Runs `self` with `args`; its stdout, or an {"error"} line when it could not be started.
std::string run_child(const std::string& self, const std::vector<std::string>& args) {
  int fds[2];
  if (pipe(fds) != 0) return ojson{{"error", "pipe failed"}}.dump();
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, fds[1], STDOUT_FILENO);
  posix_spawn_file_actions_addclose(&actions, fds[0]);
  std::vector<char*> argv{const_cast<char*>(self.c_str())};
  for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  pid_t pid = 0;
  const int spawned = posix_spawn(&pid, self.c_str(), &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  close(fds[1]);
  std::string out;
  char buf[4096];
  for (ssize_t got; spawned == 0 && (got = read(fds[0], buf, sizeof buf)) > 0;) out.append(buf, static_cast<size_t>(got));
  close(fds[0]);
  if (spawned != 0) {
    return ojson{{"error", "cannot start " + self + ": " + std::strerror(spawned) +
                               " (under user-mode emulation, a fresh process needs binfmt_misc)"}}
        .dump();
  }
  int status = 0;
  waitpid(pid, &status, 0);
  return out;
}

}  // namespace

std::vector<float> synthetic_rows(size_t count, uint64_t seed) {
  std::vector<float> v(count);
  for (float& x : v) {  // SplitMix64 -> [-1, 1)
    uint64_t z = (seed += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    x = static_cast<float>(static_cast<double>((z ^ (z >> 31)) >> 11) / 4503599627370496.0 - 1.0);
  }
  return v;
}

std::vector<std::string> cold_child_arguments(const ColdConfig& c) {
  std::vector<std::string> a{c.model, "--backend", c.backend, "--precision", c.precision, "--threads", std::to_string(c.threads),
                             "--output-stage", c.stage, "--warmup", std::to_string(c.warmup), "--runs", std::to_string(c.runs),
                             "--seed", std::to_string(c.seed), "--patches", std::to_string(c.patches),
                             "--cold-child", c.prepare ? "prepare" : "no-prepare"};
  if (!c.module.empty()) a.insert(a.end(), {"--module", c.module});
  if (!c.image.empty()) a.insert(a.end(), {"--image", c.image, "--format", c.format, "--frames", std::to_string(c.frames)});
  if (!c.weights_cache.empty()) a.insert(a.end(), {"--weights-cache", c.weights_cache});
  return a;
}

int cold_child(const ColdConfig& c) {
  // The input exists before the clock starts, as an app's camera frame or pixel_values would.
  std::vector<Image> sources;
  std::vector<pf_image> views;
  size_t h = 0, w = 0;
  if (!c.image.empty()) {
    if (!parse_size(c.image, w, h)) return child_error("--image " + c.image + " is not WxH");
    for (size_t f = 0; f < c.frames; ++f) {
      sources.push_back(synthetic_image(pixel_format_names().at(c.format), h, w, c.seed + static_cast<uint32_t>(f)));
    }
    for (const Image& s : sources) views.push_back(s.view());
  }

  const auto t0 = Clock::now();
  auto model = Model::open_file(c.model);
  if (!model) return child_error(model.error());
  const double open_ms = ms_since(t0);
  size_t index = 0;
  if (!c.module.empty()) {
    auto found = model->find_module(c.module);
    if (!found) return child_error(found.error());
    index = *found;
  }
  pf_session_options so = default_options();
  so.backend = backend_names().at(c.backend);
  so.precision = precision_names().at(c.precision);
  so.threads = c.threads;
  so.output_stage = output_stage_names().at(c.stage);
  so.weights_cache = c.weights_cache.empty() ? nullptr : c.weights_cache.c_str();
  const auto t1 = Clock::now();
  auto session = Session::create(*model, index, so);
  if (!session) return child_refused(session.status(), session.error());
  const double create_ms = ms_since(t1);

  // The app's buffers, sized and written once before its first run (a buffer only allocated would
  // have its page faults counted in our first run).
  const pf_module_info info = model->module(index);
  pf_grid grid{1, 1, static_cast<int64_t>(c.patches)};
  if (!views.empty()) {
    auto g = session->images_grid(views.size(), static_cast<int64_t>(h), static_cast<int64_t>(w));
    if (!g) return child_error(g.error());
    grid = *g;
  }
  auto rows = session->output_rows(grid);
  if (!rows) return child_error(rows.error());
  std::vector<float> output(static_cast<size_t>(*rows * info.embed_dim), 1.0f);
  const std::vector<float> input =
      views.empty() ? synthetic_rows(c.patches * static_cast<size_t>(info.patch_volume), c.seed) : std::vector<float>();
  auto run = [&] {
    if (!views.empty()) return session->run_video(views.data(), views.size(), output.data());
    return so.output_stage == PF_OUTPUT_ENCODER_INPUT ? session->run_grid(input.data(), grid, output.data())
                                                      : session->run(input.data(), c.patches, output.data());
  };

  double prepare_ms = 0;
  if (c.prepare) {
    const auto tp = Clock::now();
    const pf_input_shape shape = input_shape(views, grid);
    const pf_status st = pf_session_prepare(session->get(), &shape);
    if (st != PF_OK) return child_refused(st, pf_last_error());
    prepare_ms = ms_since(tp);
  }
  const auto tf = Clock::now();
  std::string e = run();
  const double first_ms = ms_since(tf);
  if (!e.empty()) return child_error(e);
  for (int i = 0; i < c.warmup && e.empty(); ++i) e = run();
  // c.runs timed runs, back to back or at a camera's pace: each started `period` after the one
  // before (at once when that one took longer: a late app drops frames, it does not catch up),
  // the thread asleep between them. Back to back, a run finds the caches and the core as the last
  // run left them; a camera's frame, like the first run, finds them as other work left them
  // (docs/runtime.md).
  const auto timed_runs = [&](std::chrono::microseconds period) {
    std::vector<double> ms;
    auto start = Clock::now();
    for (int i = 0; i < c.runs && e.empty(); ++i) {
      start = std::max(start + period, Clock::now());
      std::this_thread::sleep_until(start);
      const auto t = Clock::now();
      e = run();
      ms.push_back(ms_since(t));
    }
    return ms;
  };
  const std::vector<double> steady = timed_runs(std::chrono::microseconds(0));
  const std::vector<double> paced = timed_runs(std::chrono::microseconds(33333));  // none after an error
  if (!e.empty()) return child_error(e);
  const pf_session_info si = session->info();
  std::printf("%s\n", ojson{{"backend", pf_backend_name(si.backend)},
                            {"precision", precision_text(si.precision)},
                            {"isa", si.isa},
                            {"weights_cache", si.weights_cache},
                            {"open_ms", open_ms},
                            {"create_ms", create_ms},
                            {"prepare_ms", prepare_ms},
                            {"first_ms", first_ms},
                            {"steady_p50_ms", median(steady)},
                            {"paced_p50_ms", median(paced)}}
                          .dump()
                          .c_str());
  return 0;
}

nlohmann::ordered_json cold_parent(const std::string& self, const std::vector<ColdConfig>& configs, int count,
                                   const std::string& weights_cache) {
  // Every configuration with and without prepare (and with a cache), interleaved process by
  // process, so the machine's drift falls on all of them alike.
  std::vector<ColdConfig> runs;
  for (const ColdConfig& c : configs) {
    for (bool prepare : {false, true}) {
      runs.push_back(c);
      runs.back().prepare = prepare;
    }
    if (!weights_cache.empty()) {
      runs.push_back(c);
      runs.back().weights_cache = cat(weights_cache, ".", c.backend, ".", c.precision, ".", c.threads, "t");
    }
  }
  std::vector<std::vector<ojson>> samples(runs.size());
  std::vector<std::string> errors(runs.size());
  std::vector<bool> skipped(runs.size());  // errors[r] is a refusal (PF_UNSUPPORTED), not a failure
  for (size_t r = 0; r < runs.size(); ++r) {  // the cache written once, untimed
    if (runs[r].weights_cache.empty()) continue;
    std::remove(runs[r].weights_cache.c_str());
    const ojson j = ojson::parse(run_child(self, cold_child_arguments(runs[r])), nullptr, false);
    if (!j.is_object() || j.contains("error") || j.contains("skipped")) {
      skipped[r] = j.is_object() && j.contains("skipped");
      errors[r] = !j.is_object() ? "the child printed no result" : j[skipped[r] ? "skipped" : "error"].get<std::string>();
    }
  }
  for (int i = 0; i < count; ++i) {
    std::fprintf(stderr, "[cold %d/%d] %zu fresh processes ...\n", i + 1, count, runs.size());
    for (size_t r = 0; r < runs.size(); ++r) {
      if (!errors[r].empty()) continue;
      const std::string out = run_child(self, cold_child_arguments(runs[r]));
      const ojson j = ojson::parse(out, nullptr, false);
      if (j.is_discarded() || !j.is_object()) {
        errors[r] = "the child process printed no result" + (out.empty() ? std::string() : ": " + out);
      } else if (j.contains("error") || j.contains("skipped")) {
        skipped[r] = j.contains("skipped");
        errors[r] = j[skipped[r] ? "skipped" : "error"].get<std::string>();
      } else {
        samples[r].push_back(j);
      }
    }
  }
  std::printf("cold start: %d fresh processes per row, medians (ratios per process, then their median)\n", count);
  std::printf("%-9s %-9s %-13s %3s | %8s %9s %8s %8s | %9s | %9s %14s | %12s %11s\n", "backend", "precision", "prepare", "thr",
              "open_ms", "create_ms", "prep_ms", "first_ms", "p50_ms", "first/p50", "(c+p+f)/p50", "p50_at_30fps", "first/that");
  ojson results = ojson::array();
  for (size_t r = 0; r < runs.size(); ++r) {
    const ColdConfig& c = runs[r];
    const char* prepared = !c.weights_cache.empty() ? "yes + cache" : c.prepare ? "yes" : "no";
    ojson j = {{"backend_requested", c.backend}, {"precision_requested", c.precision}, {"threads", c.threads},
               {"prepare", c.prepare}, {"weights_cache", c.weights_cache}, {"processes", samples[r].size()}};
    if (!errors[r].empty()) {
      std::printf("%-9s %-9s %-13s %3d | %s: %s\n", c.backend.c_str(), c.precision.c_str(), prepared, c.threads,
                  skipped[r] ? "skipped" : "error", errors[r].c_str());
      j[skipped[r] ? "skipped" : "error"] = errors[r];
      results.push_back(j);
      continue;
    }
    auto field = [&](const char* name) {
      std::vector<double> v;
      for (const ojson& s : samples[r]) v.push_back(s[name].get<double>());
      return v;
    };
    std::vector<double> first_ratio, cold_ratio, paced_ratio, cold_ms;  // cold_ms per process, for `compare`'s noise band
    for (const ojson& s : samples[r]) {
      const double p50 = s["steady_p50_ms"].get<double>();
      cold_ms.push_back(s["create_ms"].get<double>() + s["prepare_ms"].get<double>() + s["first_ms"].get<double>());
      first_ratio.push_back(s["first_ms"].get<double>() / p50);
      paced_ratio.push_back(s["first_ms"].get<double>() / s["paced_p50_ms"].get<double>());
      cold_ratio.push_back(cold_ms.back() / p50);
    }
    const ojson& any_sample = samples[r].front();
    j["backend"] = any_sample["backend"];
    j["precision"] = any_sample["precision"];
    j["isa"] = any_sample["isa"];
    if (!c.weights_cache.empty()) j["weights_cache_report"] = samples[r].back()["weights_cache"];
    for (const char* name : {"open_ms", "create_ms", "prepare_ms", "first_ms", "steady_p50_ms", "paced_p50_ms"}) {
      j[std::string("median_") + name] = median(field(name));
    }
    j["median_first_over_p50"] = median(first_ratio);
    j["median_create_prepare_first_over_p50"] = median(cold_ratio);
    j["median_first_over_paced_p50"] = median(paced_ratio);
    j["create_prepare_first_ms"] = cold_ms;
    std::printf("%-9s %-9s %-13s %3d | %8.2f %9.2f %8.2f %8.2f | %9.3f | %9.2f %14.2f | %12.3f %11.2f\n",
                j["backend"].get<std::string>().c_str(), j["precision"].get<std::string>().c_str(), prepared,
                c.threads, j["median_open_ms"].get<double>(), j["median_create_ms"].get<double>(),
                j["median_prepare_ms"].get<double>(), j["median_first_ms"].get<double>(), j["median_steady_p50_ms"].get<double>(),
                median(first_ratio), median(cold_ratio), j["median_paced_p50_ms"].get<double>(), median(paced_ratio));
    results.push_back(j);
  }
  std::printf("p50_at_30fps: the steady runs again, each started 1/30 s after the one before\n");
  return results;
}

}  // namespace patchfuse
