#include "converter/fusion_flags.h"

#include <nlohmann/json.hpp>

namespace patchfuse {

FusionConfig parse_fusion_flags(const std::vector<std::string>& flags) {
  FusionConfig config;
  for (const std::string& flag : flags) {
    const size_t eq = flag.find('=');
    FusionConfigEntry e;
    e.family = flag.substr(0, eq);
    if (eq == std::string::npos) {  // bare NAME means NAME=true
      config.push_back(std::move(e));
      continue;
    }
    const std::string text = flag.substr(eq + 1);
    const nlohmann::json v = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
    if (v.is_boolean()) {
      e.value.enabled = v.get<bool>();
    } else if (v.is_object()) {
      e.value.kind = FusionValue::Kind::kOptions;
      for (const auto& [k, opt] : v.items()) e.value.options.emplace_back(k, opt.dump());
    } else {
      e.value.kind = FusionValue::Kind::kInvalid;
      e.value.text = "'" + text + "'";
    }
    config.push_back(std::move(e));
  }
  return config;
}

}  // namespace patchfuse
