// Known architectures (DESIGN.md §2). A checkpoint stores weights, not module hyper-parameters:
// stride, padding, dilation and groups of the patch-embedding conv come from this table, keyed by
// config.json's model_type. The other columns are facts of the real checkpoints, used by the
// sample-checkpoint generator and its tests, to cross-check the config and to name the fused class.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/encoder_input/block_inputs.h"
#include "runtime/encoder_input/encoder_input.h"

namespace patchfuse {

// What Hugging Face applies between the patch-embedding conv and the vision encoder's first block
// (runtime/encoder_input/). Tensor names are relative to the patch-embedding module's parent
// ("../x": one level further up), so they follow the module wherever the checkpoint nests it.
struct EncoderSteps {
  std::string_view refused;            // non-empty: why patchfuse does not compute it
  bool merge_order = false;            // rows in spatial_merge_size blocks (config, default 2)
  bool window = false;                 // Qwen2.5-VL's window order (config window_size, default 112)
  std::string_view position;           // the position table
  PositionMode position_mode = PositionMode::kNone;
  std::string_view position_switch;    // a config bool that turns the table off (InternVL), or ""
  std::string_view class_embedding;    // a class row first
  NormKind norm = NormKind::kNone;
  std::string_view norm_weight, norm_bias;
  std::string_view eps_key;            // config field of the norm's eps, or "" for a fixed one
  double eps = 0;                      // its default
  bool norm_before_position = false;
  int64_t sample_side = 0;             // the position table's side in the reference checkpoint (sample
                                       // generator); 0: image_size / patch
};

// What the blocks take per grid (runtime/encoder_input/block_inputs.h) and the config class's
// defaults of the schedule, for a config.json that leaves them out.
struct BlockSteps {
  RotaryKind rotary = RotaryKind::kNone;
  bool segments = false;                    // cu_seqlens
  int64_t depth = 0, heads = 0;             // defaults; 0: none (only what config.json says)
  std::vector<int64_t> fullatt;             // Qwen2.5-VL's fullatt_block_indexes default
  std::vector<int64_t> deepstack;           // Qwen3-VL's deepstack_visual_indexes default
  bool reads_fullatt = false, reads_deepstack = false;
  PositionIdsKind position_ids = PositionIdsKind::kNone;
  int64_t image_size = 0;                   // image_size default (Pixtral, the bucketized towers)
};

// A step's tensor name for the patch embedding at `module`: `relative` below the module's parent,
// each leading "../" one level further up.
std::string encoder_tensor_name(const std::string& module, std::string_view relative);

struct Architecture {
  std::string_view model_type;
  std::string_view family;             // fusion family of its patch embedding
  std::string_view vision_config_at;   // where config.json nests the vision config ("" = top level)
  std::string_view in_channels_key;    // "in_chans", "in_channels" or "num_channels"
  std::string_view patch_embed_path;   // module path in the checkpoint
  std::string_view patch_embed_class;  // transformers class of that module
  bool bias = false;
  std::vector<int64_t> kernel;  // (kt, p, p) for Conv3d, (ph, pw) for Conv2d
  int64_t embed_dim = 0;
  int64_t vision_hidden_size = 0;  // config "hidden_size": not always embed_dim (Qwen2-VL)
  std::string_view image_processor;  // preprocessor_config.json's image_processor_type
  int64_t image_size = 0;            // a fixed-size processor's output side (0: smart_resize)
  // Conv hyper-parameters. Every entry today builds its conv with stride = kernel, no padding,
  // dilation 1, groups 1; they are data so an architecture that differs is one row.
  bool stride_equals_kernel = true;
  int64_t padding = 0, dilation = 1, groups = 1;
  EncoderSteps encoder;
  BlockSteps blocks;
};

const std::vector<Architecture>& architectures();
const Architecture* find_architecture(std::string_view model_type);
// "qwen2_vl, qwen2_5_vl, ..." for error messages.
std::string known_model_types();

// Model types whose patch embedding is already an nn.Linear over flattened patches (SigLIP2's
// NaFlex, Llama 4's unfold + linear): why there is nothing to fuse, or nullptr.
const char* already_linear_reason(std::string_view model_type);

}  // namespace patchfuse
