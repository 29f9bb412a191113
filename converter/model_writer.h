// Builds .pfb bytes (schema/patchfuse.fbs). Deterministic: the same records give the same bytes.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "runtime/core/dtype.h"
#include "runtime/model/model_view.h"
#include "runtime/rules/fusion_rules.h"

namespace patchfuse {

struct TensorRecord {
  std::string name;
  std::vector<int64_t> shape;
  DType dtype = DType::kF32;
  std::vector<uint8_t> bytes;
};

// The encoder input's record (schema EncoderInput); tensors keep their checkpoint dtype.
struct EncoderInputRecord {
  std::string refused;
  std::vector<std::string> missing;
  int64_t merge_size = 1, window_size = 0, patch_size = 0;
  PositionMode position_mode = PositionMode::kNone;
  std::optional<TensorRecord> position;  // [class_rows + side^2, embed_dim]
  int64_t position_side = 0;
  std::optional<TensorRecord> class_embedding, norm_weight, norm_bias;  // [embed_dim]
  NormKind norm = NormKind::kNone;
  float norm_eps = 0;
  bool norm_before_position = false;
};

struct ModuleRecord {
  std::string path;
  const FusionFamily* family = nullptr;
  std::string class_name;
  Layout layout = Layout::kFusedLinear;
  ConvGeometry geometry;
  DType dtype = DType::kF32;
  DType source_dtype = DType::kF32;
  TensorRecord weight;
  std::optional<TensorRecord> bias;
  std::optional<Preprocessing> preprocessing;
  std::optional<EncoderInputRecord> encoder_input;
  std::optional<BlockSpec> blocks;  // schema Blocks: plain config values
};

// Tensor bytes start at multiples of kTensorAlignment and the file ends with kTailSlack zero
// bytes after the FlatBuffer (model_format.h).
std::vector<uint8_t> build_model(const std::string& model_type, const std::vector<FusionStep>& fusion_config,
                                 const std::vector<ModuleRecord>& modules);

}  // namespace patchfuse
