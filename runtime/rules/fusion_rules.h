// The fusion rules (DESIGN.md §2), in one place. patchfuse-convert uses them to find and rewrite
// patch embeddings; the runtime uses them to verify models and to fuse an original-layout module
// at session creation. Nothing here knows about JSON, safetensors or files.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "runtime/core/result.h"

namespace patchfuse {

// Conv geometry of a patch embedding. Spatial arrays have the family's rank (3 for Conv3d: t,h,w).
struct ConvGeometry {
  std::vector<int64_t> kernel, stride, padding, dilation;
  int64_t groups = 1;
  int64_t in_channels = 0;
  int64_t embed_dim = 0;  // the conv's out_channels
};

// One registered family of fusable modules: the Conv3d patch embeddings of the Qwen2-VL family and
// the Conv2d ones of SigLIP/CLIP/ViT. Another family is one more entry in fusion_families().
struct FusionFamily {
  std::string_view name;          // key in the fusion config, e.g. "patch_embeddings"
  std::string_view module_regex;  // ECMAScript regex on the module path
  std::string_view conv_child;    // child holding the conv weights, e.g. "proj"; "" when the module is the conv
  std::string_view fused_child;   // child holding the linear weights, e.g. "linear_proj"
  int spatial_rank;               // 3 for Conv3d, 2 for Conv2d
  std::vector<std::string_view> option_keys;  // options the family accepts in the fusion config
};

// The registry: every family, in a fixed order.
const std::vector<FusionFamily>& fusion_families();
const FusionFamily* find_family(std::string_view name,
                                const std::vector<FusionFamily>& registry = fusion_families());

// ---- fusion config -------------------------------------------------------------------------
// A config maps family names to true, false or an options mapping, in the user's order. The
// converter turns JSON / flags into FusionValue; anything that is neither bool nor mapping arrives
// as kInvalid with its text, and validate_fusion_config() rejects it, so the rule lives here.
struct FusionValue {
  enum class Kind { kBool, kOptions, kInvalid };
  Kind kind = Kind::kBool;
  bool enabled = true;                                       // kBool
  std::vector<std::pair<std::string, std::string>> options;  // kOptions: key -> JSON text
  std::string text;                                          // kInvalid: how the user wrote it
};

struct FusionConfigEntry {
  std::string family;
  FusionValue value;
};
using FusionConfig = std::vector<FusionConfigEntry>;

// {"patch_embeddings": true} (DESIGN.md §2). Other families run when the user names them
// (`--fusion conv2d_patch_embeddings`); `NAME=false` keeps a family's modules in their conv layout.
FusionConfig default_fusion_config();

// User entries first, in their order, then the default families they did not mention.
FusionConfig merge_with_default(const FusionConfig& user);

// One validated config entry.
struct FusionStep {
  const FusionFamily* family;
  bool enabled;  // true for `true` and for an options mapping
  std::vector<std::pair<std::string, std::string>> options;
};

// Checks names (unknown -> "Unknown fusion type: NAME"), values, options and duplicates, then
// that no two enabled families rewrite the same source pattern (they would fight over tensors).
Result<std::vector<FusionStep>> validate_fusion_config(
    const FusionConfig& config, const std::vector<FusionFamily>& registry = fusion_families());

// ---- candidates and eligibility --------------------------------------------------------------
// The module path of `tensor_name` if it is "<M>.<conv_child>.weight" (or "<M>.weight" for a
// family whose module is the conv) with M matching the family's regex; nullopt otherwise.
std::optional<std::string> candidate_module(const FusionFamily& family, std::string_view tensor_name);

// Shape checks that make a weight a conv of this family: rank 2 + spatial_rank, positive dims.
// Returns the geometry fields the weight determines (kernel, in_channels * groups, embed_dim).
Result<ConvGeometry> geometry_from_conv_weight(const FusionFamily& family, const std::string& tensor_name,
                                               const std::vector<int64_t>& shape);

// Structural validity (ranks, positive sizes, channels divisible by groups). Every geometry read
// from a file passes this before anything else looks at it.
Status check_geometry(const FusionFamily& family, const std::string& module, const ConvGeometry& g);

// The eligibility rules: stride == kernel, padding 0, dilation 1, groups 1. Returns every rule the
// geometry breaks, each as "stride (1,14,14) must equal kernel (2,14,14)"; empty when eligible.
std::vector<std::string> eligibility_violations(const ConvGeometry& g);

// check_geometry + eligibility_violations as one error naming the module and the first rule.
Status check_eligible(const FusionFamily& family, const std::string& module, const ConvGeometry& g);

// in_channels * product(kernel): the length of one flattened patch. nullopt on overflow.
std::optional<int64_t> patch_volume(const ConvGeometry& g);

// ---- transforms (names and shapes; the bytes never change: the reshape is row-major) ---------
std::string conv_weight_name(const FusionFamily& family, const std::string& module);
std::string conv_bias_name(const FusionFamily& family, const std::string& module);
std::string fused_weight_name(const FusionFamily& family, const std::string& module);
std::string fused_bias_name(const FusionFamily& family, const std::string& module);

// [out, C/groups, k...]
std::vector<int64_t> conv_weight_shape(const ConvGeometry& g);
// [out, C * prod(k)]; requires an eligible geometry (groups == 1).
std::vector<int64_t> fused_weight_shape(const ConvGeometry& g);

// Reverse direction: checks that a fused weight of `fused_shape` holds exactly the elements of the
// conv weight for `g` and returns the conv shape.
Result<std::vector<int64_t>> unfuse_weight_shape(const std::string& tensor_name,
                                                 const std::vector<int64_t>& fused_shape,
                                                 const ConvGeometry& g);

// "Fused" + original, or "" when the original class is unknown.
std::string fused_class_name(std::string_view original_class);

// A Conv2d is a Conv3d whose kernel has depth 1: the same weight bytes and the same patch rows.
// Sessions hand backends and the frames code this view, so they implement Conv3d only.
ConvGeometry as_conv3d(const ConvGeometry& g);

// "(2,14,14)"
std::string format_dims(const std::vector<int64_t>& dims);

}  // namespace patchfuse
