// The parts of a Hugging Face config.json that patchfuse reads: model_type and the vision
// config's patch geometry fields (patch_size, temporal_patch_size, in_channels / in_chans /
// num_channels, hidden_size).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "runtime/core/result.h"

namespace patchfuse {

struct VisionConfig {
  std::string file;          // config.json path, for messages
  std::string model_type;    // top-level model_type ("" if absent)
  std::string location;      // "vision_config", "thinker_config.vision_config" or "(top level)"
  std::optional<int64_t> temporal_patch_size;
  std::optional<std::pair<int64_t, int64_t>> patch_size;  // (h, w); an int means (p, p)
  std::optional<int64_t> in_channels;
  std::string in_channels_key;  // "in_channels", "in_chans" or "num_channels", whichever was present
  std::optional<int64_t> hidden_size;
  // What the encoder input's steps read (architectures.h, EncoderSteps).
  std::optional<int64_t> spatial_merge_size, window_size;
  std::optional<double> rms_norm_eps, layer_norm_eps;
  std::optional<bool> use_absolute_position_embeddings;
  // What the block inputs read (architectures.h, BlockSteps): the schedule and the RoPE.
  std::optional<int64_t> depth;      // "depth" (Qwen, GLM) or "num_hidden_layers"
  std::optional<int64_t> num_heads;  // "num_heads" (Qwen, GLM) or "num_attention_heads"
  std::optional<int64_t> head_dim;
  std::optional<std::pair<int64_t, int64_t>> image_size;  // (h, w); an int means (s, s)
  std::optional<double> rope_theta;  // "rope_theta" or "rope_parameters.rope_theta"
  std::optional<std::vector<int64_t>> fullatt_block_indexes, deepstack_visual_indexes;
};

// Finds the vision config at `vision_config`, `thinker_config.vision_config` or the top level.
// Fields present with the wrong type are errors naming the file, field and value.
Result<VisionConfig> load_vision_config(const std::string& path);

}  // namespace patchfuse
