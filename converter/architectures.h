// Known architectures (DESIGN.md §2). A checkpoint stores weights, not module hyper-parameters:
// stride, padding, dilation and groups of the patch-embedding conv come from this table, keyed by
// config.json's model_type. The other columns are facts of the real checkpoints, used by the
// sample-checkpoint generator and its tests, to cross-check the config and to name the fused class.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace patchfuse {

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
};

const std::vector<Architecture>& architectures();
const Architecture* find_architecture(std::string_view model_type);
// "qwen2_vl, qwen2_5_vl, ..." for error messages.
std::string known_model_types();

// Model types whose patch embedding is already an nn.Linear over flattened patches (SigLIP2's
// NaFlex, Llama 4's unfold + linear): why there is nothing to fuse, or nullptr.
const char* already_linear_reason(std::string_view model_type);

}  // namespace patchfuse
