#include "converter/preprocessor_config.h"

#include "converter/architectures.h"
#include "converter/json_file.h"

#include <fstream>
#include <optional>
#include <tuple>
#include <nlohmann/json.hpp>
#include <sstream>

namespace patchfuse {

using nlohmann::json;

namespace {

Result<int64_t> positive_int(const json& root, const char* key, int64_t fallback, const std::string& path) {
  if (!root.contains(key)) return fallback;
  const json& v = root[key];
  PF_CHECK(v.is_number_integer() && v.get<int64_t>() > 0, Code::kInvalidModel, path, ": ", key,
           " must be a positive integer, got ", v.dump());
  return v.get<int64_t>();
}

Result<bool> flag(const json& root, const char* key, const std::string& path) {
  if (!root.contains(key)) return true;
  PF_CHECK(root[key].is_boolean(), Code::kInvalidModel, path, ": ", key, " must be true or false, got ", root[key].dump());
  return root[key].get<bool>();
}

Result<std::vector<float>> numbers(const json& root, const char* key, std::vector<float> fallback, const std::string& path) {
  if (!root.contains(key)) return fallback;
  const json& v = root[key];
  PF_CHECK(v.is_array() && !v.empty(), Code::kInvalidModel, path, ": ", key, " must be a list of numbers, got ", v.dump());
  std::vector<float> out;
  for (const json& x : v) {
    PF_CHECK(x.is_number(), Code::kInvalidModel, path, ": ", key, " must be a list of numbers, got ", v.dump());
    out.push_back(x.get<float>());
  }
  return out;
}

// A size entry: an int (square) or {"height": h, "width": w}; nullopt for anything else (e.g.
// {"shortest_edge": s}, which keeps the aspect ratio).
Result<std::optional<std::pair<int64_t, int64_t>>> fixed_size(const json& root, const char* key, const std::string& path) {
  if (!root.contains(key)) return std::optional<std::pair<int64_t, int64_t>>();
  const json& v = root[key];
  if (v.is_number_integer()) {
    PF_ASSIGN_OR_RETURN(const int64_t side, positive_int(root, key, 0, path));
    return std::optional(std::make_pair(side, side));
  }
  if (v.is_object() && v.contains("height") && v.contains("width")) {
    PF_ASSIGN_OR_RETURN(const int64_t h, positive_int(v, "height", 0, cat(path, ": ", key)));
    PF_ASSIGN_OR_RETURN(const int64_t w, positive_int(v, "width", 0, cat(path, ": ", key)));
    return std::optional(std::make_pair(h, w));
  }
  return std::optional<std::pair<int64_t, int64_t>>();
}

}  // namespace

Result<Preprocessing> load_preprocessor_config(const std::string& path, const std::string& model_type) {
  PF_ASSIGN_OR_RETURN(const json root, load_json_object(path, "the preprocessor config"));

  Preprocessing p;
  std::string processor;
  if (root.contains("image_processor_type")) {
    PF_CHECK(root["image_processor_type"].is_string(), Code::kInvalidModel, path,
             ": image_processor_type must be a string, got ", root["image_processor_type"].dump());
    processor = root["image_processor_type"].get<std::string>();
  } else if (const Architecture* a = find_architecture(model_type)) {
    processor = std::string(a->image_processor);
  }
  if (processor.rfind("Glm4v", 0) == 0) {
    p.resize = ResizeVariant::kGlm4v;
  } else if (processor.rfind("Qwen2VL", 0) == 0 || processor.empty()) {
    p.resize = ResizeVariant::kQwen2Vl;
  } else {
    p.resize = ResizeVariant::kFixed;
  }
  const bool fixed = p.resize == ResizeVariant::kFixed;
  // Defaults of the Qwen2-VL and GLM-4V processors themselves (transformers
  // image_processing_qwen2_vl.py, _glm4v.py). Fixed-size processors differ in their defaults
  // (0.5, CLIP's, ImageNet's), so theirs must be in the file.
  const bool glm = p.resize == ResizeVariant::kGlm4v;
  const std::vector<float> clip_mean = {0.48145466f, 0.4578275f, 0.40821073f};
  const std::vector<float> clip_std = {0.26862954f, 0.26130258f, 0.27577711f};
  for (const char* key : {"image_mean", "image_std"}) {
    PF_CHECK(!fixed || root.contains(key), Code::kInvalidModel, path, ": ", key, " is missing; ", processor,
             " has no default patchfuse can assume");
  }
  PF_ASSIGN_OR_RETURN(p.mean, numbers(root, "image_mean", clip_mean, path));
  PF_ASSIGN_OR_RETURN(p.std, numbers(root, "image_std", clip_std, path));
  if (root.contains("rescale_factor")) {
    PF_CHECK(root["rescale_factor"].is_number(), Code::kInvalidModel, path, ": rescale_factor must be a number, got ",
             root["rescale_factor"].dump());
    p.rescale_factor = root["rescale_factor"].get<float>();
  }
  PF_ASSIGN_OR_RETURN(const bool do_rescale, flag(root, "do_rescale", path));
  PF_ASSIGN_OR_RETURN(const bool do_normalize, flag(root, "do_normalize", path));
  if (!do_rescale) p.rescale_factor = 1.0f;
  if (!do_normalize) {
    p.mean.assign(p.mean.size(), 0.0f);
    p.std.assign(p.std.size(), 1.0f);
  }
  PF_CHECK(p.mean.size() == p.std.size(), Code::kInvalidModel, path, ": image_mean has ", p.mean.size(),
           " values but image_std has ", p.std.size());

  if (fixed) {
    // One image, patches in raster order; the patch size is the weight's (these processors do
    // not cut patches themselves). The size: the centre crop when there is one, else `size`.
    p.patch_size = 0;
    p.temporal_patch_size = p.merge_size = 1;
    PF_ASSIGN_OR_RETURN(const bool crop, flag(root, "do_center_crop", path));
    std::optional<std::pair<int64_t, int64_t>> size;
    if (crop && root.contains("do_center_crop")) {
      PF_ASSIGN_OR_RETURN(size, fixed_size(root, "crop_size", path));
    }
    if (!size) {
      PF_ASSIGN_OR_RETURN(size, fixed_size(root, "size", path));
    }
    PF_CHECK(size.has_value(), Code::kUnsupported, path, ": ", processor, " sizes images by ",
             root.contains("size") ? root["size"].dump() : std::string("(no size)"),
             ", not to one fixed size, and patchfuse does not reproduce that resize");
    std::tie(p.fixed_height, p.fixed_width) = *size;
    return p;
  }
  PF_ASSIGN_OR_RETURN(p.patch_size, positive_int(root, "patch_size", 14, path));
  PF_ASSIGN_OR_RETURN(p.temporal_patch_size, positive_int(root, "temporal_patch_size", 2, path));
  PF_ASSIGN_OR_RETURN(p.merge_size, positive_int(root, "merge_size", 2, path));

  p.min_pixels = glm ? 112 * 112 : 56 * 56;
  p.max_pixels = glm ? 28 * 28 * 15000 : 28 * 28 * 1280;
  if (root.contains("size") && root["size"].is_object()) {
    PF_ASSIGN_OR_RETURN(p.min_pixels, positive_int(root["size"], "shortest_edge", p.min_pixels, path + ": size"));
    PF_ASSIGN_OR_RETURN(p.max_pixels, positive_int(root["size"], "longest_edge", p.max_pixels, path + ": size"));
  }
  // Explicit min_pixels / max_pixels win, as in the processors.
  PF_ASSIGN_OR_RETURN(p.min_pixels, positive_int(root, "min_pixels", p.min_pixels, path));
  PF_ASSIGN_OR_RETURN(p.max_pixels, positive_int(root, "max_pixels", p.max_pixels, path));
  PF_CHECK(p.min_pixels <= p.max_pixels, Code::kInvalidModel, path, ": min_pixels ", p.min_pixels,
           " exceeds max_pixels ", p.max_pixels);
  return p;
}

}  // namespace patchfuse
