#include "runtime/rules/fusion_rules.h"

#include <algorithm>

#include "runtime/core/checked_math.h"

namespace patchfuse {

const std::vector<FusionFamily>& fusion_families() {
  static const std::vector<FusionFamily> registry = {
      // Qwen2-VL family vision encoders: nn.Conv3d(C, embed_dim, kernel=(kt,p,p), stride=kernel).
      {"patch_embeddings", R"((^|\.)patch_embed$)", "proj", "linear_proj", 3, {}},
      // SigLIP/CLIP/ViT-style encoders: nn.Conv2d(C, embed_dim, kernel=(p,p), stride=kernel) that
      // is itself the module (`embeddings.patch_embedding` in SigLIP, CLIP, Idefics3, Mllama;
      // `embeddings.patch_embeddings.projection` in ViT, DINOv2, InternVL; `patch_conv` in
      // Pixtral). X.weight becomes X.linear.weight, the name Llama 4 gives its own unfolded one.
      {"conv2d_patch_embeddings", R"((^|\.)(patch_embedding|patch_embeddings\.projection|patch_conv)$)", "", "linear",
       2, {}},
  };
  return registry;
}

const FusionFamily* find_family(std::string_view name, const std::vector<FusionFamily>& registry) {
  for (const FusionFamily& f : registry) {
    if (f.name == name) return &f;
  }
  return nullptr;
}

FusionConfig default_fusion_config() {
  FusionValue on;
  on.kind = FusionValue::Kind::kBool;
  on.enabled = true;
  return {{"patch_embeddings", on}};
}

FusionConfig merge_with_default(const FusionConfig& user) {
  FusionConfig merged = user;
  for (const FusionConfigEntry& d : default_fusion_config()) {
    const bool mentioned = std::any_of(user.begin(), user.end(),
                                       [&](const FusionConfigEntry& e) { return e.family == d.family; });
    if (!mentioned) merged.push_back(d);
  }
  return merged;
}

// The tensors a family rewrites: modules matching its regex, through its conv child.
static std::string source_pattern(const FusionFamily& f) {
  return cat(f.module_regex, " -> ", f.conv_child, f.conv_child.empty() ? "" : ".", "{weight,bias}");
}

Result<std::vector<FusionStep>> validate_fusion_config(const FusionConfig& config,
                                                       const std::vector<FusionFamily>& registry) {
  std::vector<FusionStep> steps;
  for (const FusionConfigEntry& entry : config) {
    const FusionFamily* family = find_family(entry.family, registry);
    PF_CHECK(family != nullptr, Code::kInvalidArgument, "Unknown fusion type: ", entry.family);
    for (const FusionStep& s : steps) {
      PF_CHECK(s.family != family, Code::kInvalidArgument, "fusion config: '", entry.family,
               "' is given twice; each family may appear once");
    }
    const FusionValue& v = entry.value;
    PF_CHECK(v.kind != FusionValue::Kind::kInvalid, Code::kInvalidArgument, "fusion config: value of '",
             entry.family, "' must be true, false or an options mapping, got ", v.text);
    for (const auto& [key, value] : v.options) {
      const bool known = std::find(family->option_keys.begin(), family->option_keys.end(), key) !=
                         family->option_keys.end();
      PF_CHECK(known, Code::kInvalidArgument, "fusion config: '", entry.family, "' has no option '", key,
               "' (", family->option_keys.empty() ? "it takes none" : "see its option list", ")");
    }
    const bool enabled = v.kind == FusionValue::Kind::kOptions || v.enabled;
    steps.push_back({family, enabled, v.options});
  }
  // Conflicts: two enabled families rewriting the same tensors would depend on the order they
  // happen to run in. Fail fast and name both instead of appending the second transform.
  for (size_t i = 0; i < steps.size(); ++i) {
    for (size_t j = i + 1; j < steps.size(); ++j) {
      if (!steps[i].enabled || !steps[j].enabled) continue;
      const std::string a = source_pattern(*steps[i].family);
      PF_CHECK(a != source_pattern(*steps[j].family), Code::kInvalidArgument, "fusion config: families '",
               steps[i].family->name, "' and '", steps[j].family->name,
               "' both transform the source pattern '", a, "'");
    }
  }
  return steps;
}

Result<ConvGeometry> geometry_from_conv_weight(const FusionFamily& family, const std::string& tensor_name,
                                               const std::vector<int64_t>& shape) {
  const size_t rank = 2 + static_cast<size_t>(family.spatial_rank);
  PF_CHECK(shape.size() == rank, Code::kInvalidModel, tensor_name, ": shape ", format_dims(shape), " has rank ",
           shape.size(), "; a '", family.name, "' conv weight has rank ", rank, " [out, in, k...]");
  for (int64_t d : shape) {
    PF_CHECK(d > 0, Code::kInvalidModel, tensor_name, ": shape ", format_dims(shape),
             " has a dimension <= 0; every conv weight dimension must be positive");
  }
  ConvGeometry g;
  g.embed_dim = shape[0];
  g.in_channels = shape[1];  // times groups, which the caller fills in from the architecture
  g.kernel.assign(shape.begin() + 2, shape.end());
  return g;
}

Status check_geometry(const FusionFamily& family, const std::string& module, const ConvGeometry& g) {
  const size_t rank = static_cast<size_t>(family.spatial_rank);
  const std::pair<const char*, const std::vector<int64_t>*> arrays[] = {
      {"kernel", &g.kernel}, {"stride", &g.stride}, {"padding", &g.padding}, {"dilation", &g.dilation}};
  for (const auto& [name, dims] : arrays) {
    PF_CHECK(dims->size() == rank, Code::kInvalidModel, "module ", module, ": ", name, " ", format_dims(*dims),
             " has ", dims->size(), " values; family '", family.name, "' needs ", rank);
    for (int64_t d : *dims) {
      const bool ok = std::string_view(name) == "padding" ? d >= 0 : d > 0;
      PF_CHECK(ok, Code::kInvalidModel, "module ", module, ": ", name, " ", format_dims(*dims),
               " has an out-of-range value ", d);
    }
  }
  PF_CHECK(g.groups > 0, Code::kInvalidModel, "module ", module, ": groups ", g.groups, " must be positive");
  PF_CHECK(g.in_channels > 0 && g.embed_dim > 0, Code::kInvalidModel, "module ", module, ": in_channels ",
           g.in_channels, " and embed_dim ", g.embed_dim, " must be positive");
  PF_CHECK(g.in_channels % g.groups == 0 && g.embed_dim % g.groups == 0, Code::kInvalidModel, "module ",
           module, ": in_channels ", g.in_channels, " and embed_dim ", g.embed_dim,
           " must be divisible by groups ", g.groups);
  PF_CHECK(patch_volume(g).has_value(), Code::kInvalidModel, "module ", module,
           ": patch volume in_channels * kernel overflows");
  return {};
}

std::vector<std::string> eligibility_violations(const ConvGeometry& g) {
  std::vector<std::string> broken;
  if (g.stride != g.kernel) {
    broken.push_back(cat("stride ", format_dims(g.stride), " must equal kernel ", format_dims(g.kernel)));
  }
  if (std::any_of(g.padding.begin(), g.padding.end(), [](int64_t p) { return p != 0; })) {
    broken.push_back(cat("padding ", format_dims(g.padding), " must be all 0"));
  }
  if (std::any_of(g.dilation.begin(), g.dilation.end(), [](int64_t d) { return d != 1; })) {
    broken.push_back(cat("dilation ", format_dims(g.dilation), " must be all 1"));
  }
  if (g.groups != 1) broken.push_back(cat("groups ", g.groups, " must be 1"));
  return broken;
}

Status check_eligible(const FusionFamily& family, const std::string& module, const ConvGeometry& g) {
  PF_RETURN_IF_ERROR(check_geometry(family, module, g));
  const std::vector<std::string> broken = eligibility_violations(g);
  PF_CHECK(broken.empty(), Code::kUnsupported, "module ", module, " is not eligible for '", family.name,
           "' fusion: ", broken.front());
  return {};
}

std::optional<int64_t> patch_volume(const ConvGeometry& g) {
  std::vector<int64_t> dims = g.kernel;
  dims.push_back(g.in_channels);
  auto n = checked_product(dims);
  if (!n || *n > static_cast<uint64_t>(INT64_MAX)) return std::nullopt;
  return static_cast<int64_t>(*n);
}

// An empty conv_child: the module is the conv itself (X.weight).
std::string conv_weight_name(const FusionFamily& f, const std::string& m) {
  return f.conv_child.empty() ? cat(m, ".weight") : cat(m, ".", f.conv_child, ".weight");
}
std::string conv_bias_name(const FusionFamily& f, const std::string& m) {
  return f.conv_child.empty() ? cat(m, ".bias") : cat(m, ".", f.conv_child, ".bias");
}
std::string fused_weight_name(const FusionFamily& f, const std::string& m) { return cat(m, ".", f.fused_child, ".weight"); }
std::string fused_bias_name(const FusionFamily& f, const std::string& m) { return cat(m, ".", f.fused_child, ".bias"); }

std::vector<int64_t> conv_weight_shape(const ConvGeometry& g) {
  std::vector<int64_t> shape = {g.embed_dim, g.in_channels / g.groups};
  shape.insert(shape.end(), g.kernel.begin(), g.kernel.end());
  return shape;
}

std::vector<int64_t> fused_weight_shape(const ConvGeometry& g) { return {g.embed_dim, patch_volume(g).value_or(-1)}; }

Result<std::vector<int64_t>> unfuse_weight_shape(const std::string& tensor_name, const std::vector<int64_t>& fused_shape,
                                                 const ConvGeometry& g) {
  const std::vector<int64_t> conv = conv_weight_shape(g);
  const auto have = checked_product(fused_shape);
  const auto want = checked_product(conv);
  PF_CHECK(fused_shape.size() == 2 && have && want && *have == *want && fused_shape[0] == g.embed_dim,
           Code::kInvalidModel, tensor_name, ": fused shape ", format_dims(fused_shape),
           " cannot be reshaped back to the conv shape ", format_dims(conv),
           "; the element counts and embed_dim must match");
  return conv;
}

ConvGeometry as_conv3d(const ConvGeometry& g) {
  if (g.kernel.size() != 2) return g;
  ConvGeometry lifted = g;
  lifted.kernel.insert(lifted.kernel.begin(), 1);
  lifted.stride.insert(lifted.stride.begin(), 1);
  lifted.padding.insert(lifted.padding.begin(), 0);
  lifted.dilation.insert(lifted.dilation.begin(), 1);
  return lifted;
}

std::string fused_class_name(std::string_view original_class) {
  return original_class.empty() ? std::string() : cat("Fused", original_class);
}

std::string format_dims(const std::vector<int64_t>& dims) {
  std::string s = "(";
  for (size_t i = 0; i < dims.size(); ++i) s += cat(i ? "," : "", dims[i]);
  return s + ")";
}

}  // namespace patchfuse
