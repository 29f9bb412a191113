// Where a patch embedding's conv geometry comes from: kernel, in_channels and embed_dim from the
// weight's shape, cross-checked against config.json; stride / padding / dilation / groups from the
// architecture table, or from --geometry for an architecture the table does not know.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "converter/architectures.h"
#include "converter/hf_config.h"
#include "runtime/rules/fusion_rules.h"

namespace patchfuse {

struct GeometryOverride {
  std::vector<int64_t> stride;    // required
  std::vector<int64_t> padding;   // default all 0
  std::vector<int64_t> dilation;  // default all 1
  int64_t groups = 1;
};

// Parses "stride=2x14x14[,padding=0x0x0][,dilation=1x1x1][,groups=1]".
Result<GeometryOverride> parse_geometry_override(const std::string& text);

// Fails (naming both values) when the config disagrees with the weight, when the config has none
// of the geometry fields, or when the architecture is unknown and no override is given.
// The result is structurally valid but not necessarily eligible: that is the rules' call.
Result<ConvGeometry> resolve_geometry(const FusionFamily& family, const std::string& module,
                                      const std::string& weight_name,
                                      const std::vector<int64_t>& weight_shape, const VisionConfig& config,
                                      const std::optional<GeometryOverride>& override_geometry);

}  // namespace patchfuse
