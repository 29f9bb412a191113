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
};

// Tensor bytes start at multiples of kTensorAlignment and the file ends with kTailSlack zero
// bytes after the FlatBuffer (model_format.h).
std::vector<uint8_t> build_model(const std::string& model_type, const std::vector<FusionStep>& fusion_config,
                                 const std::vector<ModuleRecord>& modules);

}  // namespace patchfuse
