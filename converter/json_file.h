// Reading the JSON files of a Hugging Face checkpoint (config.json, preprocessor_config.json,
// model.safetensors.index.json): each must be a JSON object.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "runtime/core/result.h"

namespace patchfuse {

// `what` names the file's role in the I/O error ("the model config (pass --config CONFIG.json)").
Result<nlohmann::json> load_json_object(const std::string& path, const std::string& what);

}  // namespace patchfuse
