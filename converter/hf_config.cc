#include "converter/hf_config.h"

#include "converter/json_file.h"

#include <algorithm>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

namespace patchfuse {

using nlohmann::json;

static Result<int64_t> positive_int(const json& v, const std::string& where) {
  PF_CHECK(v.is_number_integer() && v.get<int64_t>() > 0, Code::kInvalidModel, where,
           " must be a positive integer, got ", v.dump());
  return v.get<int64_t>();
}

// An int s as (s, s), or [h, w].
static Result<std::pair<int64_t, int64_t>> side_pair(const json& p, const std::string& where) {
  if (!p.is_array()) {
    PF_ASSIGN_OR_RETURN(int64_t s, positive_int(p, where));
    return std::make_pair(s, s);
  }
  PF_CHECK(p.size() == 2, Code::kInvalidModel, where, " must be an int or [h, w], got ", p.dump());
  PF_ASSIGN_OR_RETURN(int64_t h, positive_int(p[0], where + "[0]"));
  PF_ASSIGN_OR_RETURN(int64_t w, positive_int(p[1], where + "[1]"));
  return std::make_pair(h, w);
}

Result<VisionConfig> load_vision_config(const std::string& path) {
  PF_ASSIGN_OR_RETURN(const json root, load_json_object(path, "the model config (pass --config CONFIG.json)"));

  VisionConfig vc;
  vc.file = path;
  if (root.contains("model_type")) {
    PF_CHECK(root["model_type"].is_string(), Code::kInvalidModel, path, ": model_type must be a string, got ",
             root["model_type"].dump());
    vc.model_type = root["model_type"].get<std::string>();
  }
  const json* vision = &root;
  vc.location = "(top level)";
  if (root.contains("vision_config") && root["vision_config"].is_object()) {
    vision = &root["vision_config"];
    vc.location = "vision_config";
  } else if (root.contains("thinker_config") && root["thinker_config"].is_object() &&
             root["thinker_config"].contains("vision_config") && root["thinker_config"]["vision_config"].is_object()) {
    vision = &root["thinker_config"]["vision_config"];
    vc.location = "thinker_config.vision_config";
  }
  const json& v = *vision;
  const std::string at = cat(path, ": ", vc.location == "(top level)" ? "" : vc.location + ".");

  if (v.contains("temporal_patch_size")) {
    PF_ASSIGN_OR_RETURN(vc.temporal_patch_size, positive_int(v["temporal_patch_size"], at + "temporal_patch_size"));
  }
  for (auto [key, field] : {std::pair{"patch_size", &vc.patch_size}, std::pair{"image_size", &vc.image_size}}) {
    if (v.contains(key)) {
      PF_ASSIGN_OR_RETURN(*field, side_pair(v[key], at + key));
    }
  }
  for (const char* key : {"in_channels", "in_chans", "num_channels"}) {
    if (v.contains(key)) {
      PF_ASSIGN_OR_RETURN(vc.in_channels, positive_int(v[key], at + key));
      vc.in_channels_key = key;
      break;
    }
  }
  if (v.contains("hidden_size")) {
    PF_ASSIGN_OR_RETURN(vc.hidden_size, positive_int(v["hidden_size"], at + "hidden_size"));
  }
  for (auto [key, field] : {std::pair{"spatial_merge_size", &vc.spatial_merge_size}, std::pair{"window_size", &vc.window_size}}) {
    if (v.contains(key)) {
      PF_ASSIGN_OR_RETURN(*field, positive_int(v[key], at + key));
    }
  }
  for (auto [key, field] : {std::pair{"rms_norm_eps", &vc.rms_norm_eps}, std::pair{"layer_norm_eps", &vc.layer_norm_eps}}) {
    if (!v.contains(key)) continue;
    PF_CHECK(v[key].is_number() && v[key].get<double>() > 0, Code::kInvalidModel, at, key,
             " must be a positive number, got ", v[key].dump());
    *field = v[key].get<double>();
  }
  if (v.contains("use_absolute_position_embeddings")) {
    PF_CHECK(v["use_absolute_position_embeddings"].is_boolean(), Code::kInvalidModel, at,
             "use_absolute_position_embeddings must be true or false, got ", v["use_absolute_position_embeddings"].dump());
    vc.use_absolute_position_embeddings = v["use_absolute_position_embeddings"].get<bool>();
  }
  for (auto [keys, field] : {std::pair{std::vector<const char*>{"depth", "num_hidden_layers"}, &vc.depth},
                             std::pair{std::vector<const char*>{"num_heads", "num_attention_heads"}, &vc.num_heads},
                             std::pair{std::vector<const char*>{"head_dim"}, &vc.head_dim}}) {
    for (const char* key : keys) {
      if (!v.contains(key)) continue;
      PF_ASSIGN_OR_RETURN(*field, positive_int(v[key], at + key));
      break;
    }
  }
  for (auto [key, field] : {std::pair{"fullatt_block_indexes", &vc.fullatt_block_indexes},
                            std::pair{"deepstack_visual_indexes", &vc.deepstack_visual_indexes}}) {
    if (!v.contains(key)) continue;
    const json& list = v[key];
    const bool ints = list.is_array() && std::all_of(list.begin(), list.end(), [](const json& x) {
      return x.is_number_integer() && x.get<int64_t>() >= 0;
    });
    PF_CHECK(ints, Code::kInvalidModel, at, key, " must be a list of block numbers (integers >= 0), got ", list.dump());
    *field = list.get<std::vector<int64_t>>();
  }
  // Pixtral keeps its theta in rope_parameters (transformers 5), earlier in rope_theta.
  const bool nested = v.contains("rope_parameters") && v["rope_parameters"].is_object() &&
                      v["rope_parameters"].contains("rope_theta");
  if (nested || v.contains("rope_theta")) {
    const json& theta = nested ? v["rope_parameters"]["rope_theta"] : v["rope_theta"];
    PF_CHECK(theta.is_number() && theta.get<double>() > 1, Code::kInvalidModel, at,
             nested ? "rope_parameters.rope_theta" : "rope_theta", " must be a number above 1, got ", theta.dump());
    vc.rope_theta = theta.get<double>();
  }
  return vc;
}

}  // namespace patchfuse
