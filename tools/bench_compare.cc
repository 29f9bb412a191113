#include "tools/bench_compare.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "runtime/core/mapped_file.h"

namespace patchfuse {

namespace {

using ojson = nlohmann::ordered_json;

// A result row's identity in both files: what was asked for, not what resolved.
using Key = std::tuple<std::string, std::string, std::string, int64_t, int64_t, std::string>;

Key key_of(const ojson& r) {
  return {r.value("backend_requested", ""), r.value("precision_requested", ""), r.value("path", ""),
          r.value("threads_requested", int64_t{0}), r.value("patches", int64_t{0}), r.value("output_stage", "")};
}

bool load(const char* path, ojson& doc) {
  Result<MappedFile> file = MappedFile::open(path, MappedFile::Reading::kWhole);  // a regular file, as every input
  if (!file.ok()) {
    std::fprintf(stderr, "patchfuse-bench: error: %s\n", file.error().message.c_str());
    return false;
  }
  doc = ojson::parse(file->data(), file->data() + file->size(), nullptr, false);
  if (doc.is_discarded() || !doc.is_object() || !doc.contains("results") || !doc["results"].is_array()) {
    std::fprintf(stderr, "patchfuse-bench: error: %s: not a patchfuse-bench --json file (no results array)\n", path);
    return false;
  }
  return true;
}

// The cold start's rows: the same configuration, with or without prepare and a weights cache.
using ColdKey = std::tuple<std::string, std::string, int64_t, bool, bool>;

ColdKey cold_key_of(const ojson& r) {
  return {r.value("backend_requested", ""), r.value("precision_requested", ""), r.value("threads", int64_t{0}),
          r.value("prepare", false), !r.value("weights_cache", std::string()).empty()};
}

// p50 and p90 (nearest rank) of a row's samples; {-1, -1} for a row that was not timed.
std::pair<double, double> p50_p90(const ojson& r, const char* samples) {
  if (!r.contains(samples) || r[samples].empty()) return {-1.0, -1.0};
  std::vector<double> v = r[samples].get<std::vector<double>>();
  std::sort(v.begin(), v.end());
  const auto pct = [&](double p) { return v[std::min(v.size() - 1, static_cast<size_t>(std::ceil(p / 100.0 * v.size())) - 1)]; };
  return {pct(50), pct(90)};
}

// Prints one row's A and B p50, B/A and the verdict; the noise band is the larger of the two rows'
// own spread (p90 over p50, less 1). Returns whether both were timed.
bool print_ratio(std::pair<double, double> a, std::pair<double, double> b) {
  const auto [pa, a90] = a;
  const auto [pb, b90] = b;
  if (pa <= 0 || pb <= 0) {
    std::printf("%10s %10s | %7s %7s  %s\n", pa > 0 ? std::to_string(pa).substr(0, 8).c_str() : "-",
                pb > 0 ? std::to_string(pb).substr(0, 8).c_str() : "-", "", "", "not timed in both (skipped or error)");
    return false;
  }
  const double ratio = pb / pa, noise = std::max(a90 / pa - 1, b90 / pb - 1);
  const char* verdict = std::fabs(ratio - 1) <= noise ? "within noise" : ratio < 1 ? "B faster" : "B slower";
  std::printf("%10.4f %10.4f | %7.3f %6.1f%%  %s\n", pa, pb, ratio, 100 * noise, verdict);
  return true;
}

std::string describe(const ojson& doc) {
  const ojson& m = doc.value("machine", ojson::object());
  return m.value("cpu", std::string("?")) + ", " + std::to_string(m.value("online_cpus", 0)) + " CPUs" +
         (m.value("emulated", false) ? " [EMULATED]" : "");
}

}  // namespace

int bench_compare(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "patchfuse-bench: usage error: patchfuse-bench compare A.json B.json\n");
    return 2;
  }
  ojson a, b;
  if (!load(argv[2], a) || !load(argv[3], b)) return 1;
  std::map<Key, const ojson*> in_a;
  for (const ojson& r : a["results"]) in_a[key_of(r)] = &r;
  std::printf("A: %s (%s)\nB: %s (%s)\n", argv[2], describe(a).c_str(), argv[3], describe(b).c_str());
  if (a.value("model", ojson::object()).value("content_hash", "") != b.value("model", ojson::object()).value("content_hash", "")) {
    std::printf("note: the two files timed different models (content hashes differ)\n");
  }
  std::printf("%-9s %-9s %-13s %3s %6s | %10s %10s | %7s %7s  %s\n", "backend", "precision", "path", "thr", "N", "A p50_ms",
              "B p50_ms", "B/A", "noise", "verdict");
  int compared = 0;
  for (const ojson& rb : b["results"]) {
    const auto found = in_a.find(key_of(rb));
    if (found == in_a.end()) continue;
    const ojson& ra = *found->second;
    const auto [backend, precision, path, threads, n, stage] = found->first;
    std::printf("%-9s %-9s %-13s %3lld %6lld | ", backend.c_str(), precision.c_str(), path.c_str(),
                static_cast<long long>(threads), static_cast<long long>(n));
    compared += print_ratio(p50_p90(ra, "samples_ms"), p50_p90(rb, "samples_ms"));
  }
  // The cold start (--cold): create + prepare + first run, per fresh process.
  if (a.contains("cold") && b.contains("cold")) {
    std::map<ColdKey, const ojson*> cold_a;
    for (const ojson& r : a["cold"]) cold_a[cold_key_of(r)] = &r;
    std::printf("cold start, create + prepare + first run per process:\n%-9s %-9s %-13s %3s | %10s %10s | %7s %7s  %s\n",
                "backend", "precision", "prepare", "thr", "A p50_ms", "B p50_ms", "B/A", "noise", "verdict");
    for (const ojson& rb : b["cold"]) {
      const auto found = cold_a.find(cold_key_of(rb));
      if (found == cold_a.end()) continue;
      const auto [backend, precision, threads, prepare, cache] = found->first;
      std::printf("%-9s %-9s %-13s %3lld | ", backend.c_str(), precision.c_str(), cache ? "yes + cache" : prepare ? "yes" : "no",
                  static_cast<long long>(threads));
      compared += print_ratio(p50_p90(*found->second, "create_prepare_first_ms"), p50_p90(rb, "create_prepare_first_ms"));
    }
  }
  std::printf("%d row%s compared\n", compared, compared == 1 ? "" : "s");
  return 0;
}

}  // namespace patchfuse
