// `--fusion NAME[=VALUE]` flags -> FusionConfig. VALUE is JSON: true, false or an options object;
// anything else is kept as kInvalid so that validate_fusion_config() reports it.
#pragma once

#include <string>
#include <vector>

#include "runtime/rules/fusion_rules.h"

namespace patchfuse {

FusionConfig parse_fusion_flags(const std::vector<std::string>& flags);

}  // namespace patchfuse
