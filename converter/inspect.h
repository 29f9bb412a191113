// `patchfuse-convert inspect`: what a .pfb holds, as a table or as JSON.
#pragma once

#include <string>

#include "runtime/core/result.h"

namespace patchfuse {

// Verifies the model first; the text ends with a newline.
Result<std::string> inspect_model(const std::string& path, bool as_json);

}  // namespace patchfuse
