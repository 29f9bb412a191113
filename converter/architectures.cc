#include "converter/architectures.h"

namespace patchfuse {

const std::vector<Architecture>& architectures() {
  // Facts from transformers' modeling code and the published config.json files.
  static const std::vector<Architecture> table = {
      {"qwen2_vl", "vision_config", "in_chans", "visual.patch_embed", "PatchEmbed", false, {2, 14, 14}, 1280, 1536, true, 0, 1, 1},
      {"qwen2_5_vl", "vision_config", "in_chans", "visual.patch_embed", "Qwen2_5_VisionPatchEmbed", false, {2, 14, 14}, 1280, 1280, true, 0, 1, 1},
      {"qwen2_5_omni", "thinker_config.vision_config", "in_channels", "thinker.visual.patch_embed", "Qwen2_5_VisionPatchEmbed", false, {2, 14, 14}, 1280, 1280, true, 0, 1, 1},
      {"qwen3_vl", "vision_config", "in_channels", "model.visual.patch_embed", "Qwen3VLVisionPatchEmbed", true, {2, 16, 16}, 1152, 1152, true, 0, 1, 1},
      {"qwen3_vl_moe", "vision_config", "in_channels", "model.visual.patch_embed", "Qwen3VLMoeVisionPatchEmbed", true, {2, 16, 16}, 1152, 1152, true, 0, 1, 1},
      {"qwen3_omni_moe", "thinker_config.vision_config", "in_channels", "thinker.visual.patch_embed", "Qwen3OmniMoeVisionPatchEmbed", true, {2, 16, 16}, 1152, 1152, true, 0, 1, 1},
      {"glm4v", "vision_config", "in_channels", "model.visual.patch_embed", "Glm4vVisionPatchEmbed", true, {2, 14, 14}, 1536, 1536, true, 0, 1, 1},
      {"glm4v_moe", "vision_config", "in_channels", "model.visual.patch_embed", "Glm4vMoeVisionPatchEmbed", true, {2, 14, 14}, 1536, 1536, true, 0, 1, 1},
  };
  return table;
}

const Architecture* find_architecture(std::string_view model_type) {
  for (const Architecture& a : architectures()) {
    if (a.model_type == model_type) return &a;
  }
  return nullptr;
}

std::string known_model_types() {
  std::string s;
  for (const Architecture& a : architectures()) s += (s.empty() ? "" : ", ") + std::string(a.model_type);
  return s;
}

}  // namespace patchfuse
