// Verified, zero-copy view of a .pfb model held in memory (an mmap or caller memory).
// read_model() runs the FlatBuffers Verifier and then the semantic checks (byte counts against
// shapes without overflow, shapes against the geometry, the shared fusion rules, alignment and
// tail slack) before it hands out any pointer to weight bytes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "runtime/core/dtype.h"
#include "runtime/core/result.h"
#include "runtime/encoder_input/block_inputs.h"
#include "runtime/encoder_input/encoder_input.h"
#include "runtime/frames/preprocessing.h"
#include "runtime/frames/weight_transforms.h"
#include "runtime/rules/fusion_rules.h"

namespace patchfuse {

enum class Layout : uint8_t { kFusedLinear = 0, kOriginalConv = 1 };
const char* layout_name(Layout layout);  // "fused_linear", "original_conv"

struct TensorView {
  std::string name;
  std::vector<int64_t> shape;
  DType dtype = DType::kF32;
  const uint8_t* data = nullptr;  // points into the model buffer
  size_t bytes = 0;
};

struct ModuleView {
  std::string path;
  const FusionFamily* family = nullptr;
  std::string class_name;
  Layout layout = Layout::kFusedLinear;
  ConvGeometry geometry;
  int64_t patch_volume = 0;
  DType dtype = DType::kF32;
  DType source_dtype = DType::kF32;
  TensorView weight;
  std::optional<TensorView> bias;
  std::optional<Preprocessing> preprocessing;  // passed check_preprocessing against `geometry`
  std::optional<EncoderInputSpec> encoder_input;  // passed EncoderInputSpec::check; none in older files
  std::optional<BlockSpec> blocks;  // passed BlockSpec::check; none in files converted before 0.6
};

// The module's conv weights as the frames layer's fold takes them (frames/weight_transforms.h);
// `m`'s geometry is a Conv3d's (as_conv3d for a Conv2d).
ConvWeights conv_weights(const ModuleView& m);

struct ModelView {
  uint32_t schema_version = 0;
  std::string producer;
  std::string model_type;
  FusionConfig fusion_config;  // as applied by the converter, in order
  std::vector<ModuleView> modules;
};

// `origin` names the buffer in error messages (usually the file path). The returned views point
// into [data, data + size), which must outlive them and stay unchanged.
Result<ModelView> read_model(const uint8_t* data, size_t size, const std::string& origin);

}  // namespace patchfuse
