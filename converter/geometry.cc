#include "converter/geometry.h"

#include <cerrno>
#include <cstdlib>
#include <sstream>

namespace patchfuse {

static Result<std::vector<int64_t>> parse_dims(const std::string& key, const std::string& text) {
  std::vector<int64_t> dims;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, 'x')) {
    char* end = nullptr;
    errno = 0;
    const long long v = std::strtoll(item.c_str(), &end, 10);
    PF_CHECK(!item.empty() && *end == '\0' && errno == 0 && v >= 0, Code::kInvalidArgument, "--geometry: ", key,
             "='", text, "' must be non-negative integers joined by 'x', like 2x14x14");
    dims.push_back(v);
  }
  PF_CHECK(!dims.empty(), Code::kInvalidArgument, "--geometry: ", key, " has no value");
  return dims;
}

Result<GeometryOverride> parse_geometry_override(const std::string& text) {
  GeometryOverride g;
  std::stringstream in(text);
  std::string part;
  while (std::getline(in, part, ',')) {
    const size_t eq = part.find('=');
    PF_CHECK(eq != std::string::npos, Code::kInvalidArgument, "--geometry: '", part,
             "' must be KEY=VALUE with KEY one of stride, padding, dilation, groups");
    const std::string key = part.substr(0, eq), value = part.substr(eq + 1);
    if (key == "stride") {
      PF_ASSIGN_OR_RETURN(g.stride, parse_dims(key, value));
    } else if (key == "padding") {
      PF_ASSIGN_OR_RETURN(g.padding, parse_dims(key, value));
    } else if (key == "dilation") {
      PF_ASSIGN_OR_RETURN(g.dilation, parse_dims(key, value));
    } else if (key == "groups") {
      PF_ASSIGN_OR_RETURN(std::vector<int64_t> groups, parse_dims(key, value));
      PF_CHECK(groups.size() == 1, Code::kInvalidArgument, "--geometry: groups='", value, "' must be one integer");
      g.groups = groups[0];
    } else {
      return make_error(Code::kInvalidArgument, cat("--geometry: unknown key '", key,
                                                    "'; expected stride, padding, dilation or groups"));
    }
  }
  PF_CHECK(!g.stride.empty(), Code::kInvalidArgument, "--geometry '", text, "' must give stride=TxHxW");
  return g;
}

// The config's view of the kernel must match the weight's: patch_size is the last two kernel dims,
// temporal_patch_size the first one of a Conv3d. A Conv2d patch embedding's out_channels is the
// encoder's hidden_size (a Conv3d's need not be: Qwen2-VL's is embed_dim, not hidden_size).
static Status cross_check(const FusionFamily& family, const std::string& weight_name, const ConvGeometry& g,
                          const VisionConfig& c) {
  const std::string at = cat(c.file, ": ", c.location == "(top level)" ? "" : c.location + ".");
  PF_CHECK(c.temporal_patch_size || c.patch_size || c.in_channels, Code::kInvalidModel, at,
           "{patch_size, temporal_patch_size, in_channels, in_chans}: none is present, so the shape ",
           format_dims(conv_weight_shape(g)), " of ", weight_name, " cannot be cross-checked");
  const size_t r = g.kernel.size();
  if (c.patch_size) {
    const std::vector<int64_t> want = {c.patch_size->first, c.patch_size->second};
    const std::vector<int64_t> have = {g.kernel[r - 2], g.kernel[r - 1]};
    PF_CHECK(want == have, Code::kInvalidModel, at, "patch_size ", format_dims(want), " disagrees with ", weight_name,
             " kernel (h,w) ", format_dims(have));
  }
  if (c.temporal_patch_size && r == 3) {
    PF_CHECK(*c.temporal_patch_size == g.kernel[0], Code::kInvalidModel, at, "temporal_patch_size ",
             *c.temporal_patch_size, " disagrees with ", weight_name, " kernel t ", g.kernel[0]);
  }
  if (c.in_channels) {
    PF_CHECK(*c.in_channels == g.in_channels, Code::kInvalidModel, at, c.in_channels_key, " ", *c.in_channels,
             " disagrees with ", weight_name, " in_channels ", g.in_channels);
  }
  if (c.hidden_size && family.spatial_rank == 2) {
    PF_CHECK(*c.hidden_size == g.embed_dim, Code::kInvalidModel, at, "hidden_size ", *c.hidden_size, " disagrees with ",
             weight_name, " out_channels ", g.embed_dim);
  }
  return {};
}

Result<ConvGeometry> resolve_geometry(const FusionFamily& family, const std::string& module,
                                      const std::string& weight_name,
                                      const std::vector<int64_t>& weight_shape, const VisionConfig& config,
                                      const std::optional<GeometryOverride>& override_geometry) {
  PF_ASSIGN_OR_RETURN(ConvGeometry g, geometry_from_conv_weight(family, weight_name, weight_shape));
  const size_t rank = g.kernel.size();
  if (override_geometry) {
    g.stride = override_geometry->stride;
    g.padding = override_geometry->padding;
    if (g.padding.empty()) g.padding.assign(rank, 0);
    g.dilation = override_geometry->dilation;
    if (g.dilation.empty()) g.dilation.assign(rank, 1);
    g.groups = override_geometry->groups;
  } else {
    const Architecture* arch = find_architecture(config.model_type);
    PF_CHECK(arch != nullptr, Code::kUnsupported, config.file, ": model_type '", config.model_type,
             "' is not a known architecture (known: ", known_model_types(),
             "); pass --geometry stride=TxHxW (HxW for a Conv2d)[,padding=..][,dilation=..][,groups=N] to convert it");
    g.stride.assign(rank, 1);
    if (arch->stride_equals_kernel) g.stride = g.kernel;
    g.padding.assign(rank, arch->padding);
    g.dilation.assign(rank, arch->dilation);
    g.groups = arch->groups;
  }
  // A weight stores in_channels / groups; the module's in_channels is the product.
  g.in_channels *= g.groups;
  PF_RETURN_IF_ERROR(cross_check(family, weight_name, g, config));
  PF_RETURN_IF_ERROR(check_geometry(family, module, g));
  return g;
}

}  // namespace patchfuse
