// Known architectures (DESIGN.md §2). A checkpoint stores weights, not module hyper-parameters:
// stride, padding, dilation and groups of the patch-embedding conv come from this table, keyed by
// config.json's model_type. The other columns are facts of the real checkpoints, used by the
// sample-checkpoint generator and its tests and to name the fused class.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace patchfuse {

struct Architecture {
  std::string_view model_type;
  std::string_view vision_config_at;   // where config.json nests the vision config
  std::string_view in_channels_key;    // "in_chans" or "in_channels"
  std::string_view patch_embed_path;   // module path in the checkpoint
  std::string_view patch_embed_class;  // transformers class of that module
  bool bias;
  std::array<int64_t, 3> kernel;  // (kt, p, p)
  int64_t embed_dim;
  int64_t vision_hidden_size;  // config "hidden_size": not always embed_dim
  // Conv3d hyper-parameters. Every entry today builds nn.Conv3d(stride=kernel_size), no padding,
  // dilation 1, groups 1; they are data so an architecture that differs is one row.
  bool stride_equals_kernel;
  int64_t padding, dilation, groups;
};

const std::vector<Architecture>& architectures();
const Architecture* find_architecture(std::string_view model_type);
// "qwen2_vl, qwen2_5_vl, ..." for error messages.
std::string known_model_types();

}  // namespace patchfuse
