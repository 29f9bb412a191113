// patchfuse-run --block-inputs DIR: what the vision encoder's blocks take for a grid, written as
// DIR/<name>.npy (transformers' names and dtypes) and DIR/manifest.json (the grid, each tensor's
// file, dtype and shape, the config values used and the block schedule).
#pragma once

#include <string>

#include "patchfuse/patchfuse.hpp"

namespace patchfuse {

// Every block input is computed before any file is written; each file is written atomically and
// the manifest last. Returns "" or the error message.
std::string write_block_inputs(Session& session, const pf_grid& grid, const std::string& dir, const std::string& model_path,
                               const pf_module_info& module);

}  // namespace patchfuse
