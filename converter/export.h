// `patchfuse-convert export`: .pfb -> safetensors in the original conv layout with the original
// tensor names. With --dtype keep at conversion, the tensor bytes equal the checkpoint's.
#pragma once

#include <string>
#include <vector>

#include "runtime/core/result.h"

namespace patchfuse {

// Returns one line per tensor written.
Result<std::vector<std::string>> export_model(const std::string& model_path, const std::string& output);

}  // namespace patchfuse
