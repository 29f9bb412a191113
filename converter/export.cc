#include "converter/export.h"

#include "runtime/core/output_file.h"
#include "converter/safetensors.h"
#include "runtime/model/model_file.h"

namespace patchfuse {

Result<std::vector<std::string>> export_model(const std::string& model_path, const std::string& output) {
  PF_RETURN_IF_ERROR(check_not_an_input(output, {model_path}));
  PF_ASSIGN_OR_RETURN(ModelFile model, open_model_file(model_path));
  std::vector<TensorToWrite> tensors;
  std::vector<std::string> lines;
  for (const ModuleView& m : model.view.modules) {
    // Reverse transform: the bytes are the same row-major array, only the name and shape change.
    TensorToWrite w{conv_weight_name(*m.family, m.path), m.weight.dtype, m.weight.shape, m.weight.data, m.weight.bytes};
    if (m.layout == Layout::kFusedLinear) {
      PF_ASSIGN_OR_RETURN(w.shape, unfuse_weight_shape(m.weight.name, m.weight.shape, m.geometry));
    }
    lines.push_back(cat(m.weight.name, " -> ", w.name, " ", format_dims(w.shape), " ", dtype_name(w.dtype)));
    tensors.push_back(std::move(w));
    if (m.bias) {
      TensorToWrite b{conv_bias_name(*m.family, m.path), m.bias->dtype, m.bias->shape, m.bias->data, m.bias->bytes};
      lines.push_back(cat(m.bias->name, " -> ", b.name, " ", format_dims(b.shape), " ", dtype_name(b.dtype)));
      tensors.push_back(std::move(b));
    }
  }
  PF_RETURN_IF_ERROR(write_file_atomically(output, serialize_safetensors(std::move(tensors), {{"format", "pt"}})));
  return lines;
}

}  // namespace patchfuse
