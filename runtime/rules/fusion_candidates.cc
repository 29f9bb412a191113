// Candidate discovery, the rules' only use of std::regex. It lives in its own object file so that
// libpatchfuse, which never discovers candidates (models arrive converted), does not link the
// regex engine (~74 KB).
#include <regex>

#include "runtime/rules/fusion_rules.h"

namespace patchfuse {

std::optional<std::string> candidate_module(const FusionFamily& family, std::string_view tensor_name) {
  const std::string suffix = conv_weight_name(family, "");  // ".proj.weight", or ".weight" for a module that is the conv
  if (tensor_name.size() <= suffix.size() ||
      tensor_name.substr(tensor_name.size() - suffix.size()) != suffix) {
    return std::nullopt;
  }
  std::string module(tensor_name.substr(0, tensor_name.size() - suffix.size()));
  static thread_local std::string cached_pattern;
  static thread_local std::regex cached_regex;
  if (cached_pattern != family.module_regex) {
    cached_pattern = std::string(family.module_regex);
    cached_regex = std::regex(cached_pattern, std::regex::ECMAScript);
  }
  if (!std::regex_search(module, cached_regex)) return std::nullopt;
  return module;
}

}  // namespace patchfuse
