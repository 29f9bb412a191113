// The command-line spellings of backends and precisions, shared by patchfuse-run and
// patchfuse-bench so both accept and print the same words.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "patchfuse/patchfuse.h"

namespace patchfuse {

inline const std::map<std::string, pf_backend>& backend_names() {
  static const std::map<std::string, pf_backend> m = {
      {"auto", PF_BACKEND_AUTO}, {"reference", PF_BACKEND_REFERENCE}, {"onednn", PF_BACKEND_ONEDNN}, {"xnnpack", PF_BACKEND_XNNPACK}};
  return m;
}

inline const std::map<std::string, pf_precision>& precision_names() {
  static const std::map<std::string, pf_precision> m = {
      {"auto", PF_PRECISION_AUTO}, {"f32", PF_PRECISION_F32}, {"bf16", PF_PRECISION_BF16}, {"f16", PF_PRECISION_F16},
      {"int8", PF_PRECISION_INT8}};
  return m;
}

inline const char* precision_text(pf_precision p) {
  for (const auto& [name, value] : precision_names()) {
    if (value == p) return name.c_str();
  }
  return "?";
}

// For CLI11's IsMember check.
template <class T>
std::vector<std::string> keys_of(const std::map<std::string, T>& m) {
  std::vector<std::string> k;
  for (const auto& [name, value] : m) k.push_back(name);
  return k;
}

}  // namespace patchfuse
