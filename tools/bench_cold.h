// patchfuse-bench --cold N: what an app pays before its first result, measured in fresh processes
// (a process that already made a session has paid for page faults, library loading and one-time
// work the next one would not). The bench runs itself N times per configuration with a hidden
// --cold-child option; each child opens the model, creates a session, prepares it (or not), runs
// once, then times steady runs, and prints one JSON line; the parent reports medians.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "patchfuse/patchfuse.h"

namespace patchfuse {

// One child's configuration: what to open and run (the bench's own options, one value each).
struct ColdConfig {
  std::string model, module, backend = "auto", precision = "auto", stage = "patches";
  std::string image, format = "rgb";  // image "": pixel_values rows of `patches`
  size_t frames = 1, patches = 1024;
  int threads = 1, warmup = 3, runs = 10;
  uint32_t seed = 1;
  bool prepare = true;
  std::string weights_cache;  // "": none
};

// The child's side: one cold measurement, printed as a JSON line on stdout; 0 on success.
int cold_child(const ColdConfig& c);

// The parent's side: `count` fresh processes of `self` (this executable) for each configuration,
// with and without pf_session_prepare, and with `weights_cache` (a path prefix) also with prepare
// and a weights cache that an untimed process has written first (one file per configuration,
// since a file holds one configuration's kernels); prints the medians and returns one row per run
// configuration (medians, per-process cold ms, or "skipped"/"error" with the reason).
nlohmann::ordered_json cold_parent(const std::string& self, const std::vector<ColdConfig>& configs, int count,
                                   const std::string& weights_cache);

// The command-line arguments that make `self` run `c` as a child.
std::vector<std::string> cold_child_arguments(const ColdConfig& c);

// Seeded values in [-1, 1) (SplitMix64): the bench's synthetic pixel_values rows.
std::vector<float> synthetic_rows(size_t count, uint64_t seed);

}  // namespace patchfuse
