// A .pfb file mapped read-only and verified: the zero-copy way to open a model from a path.
#pragma once

#include <string>

#include "runtime/core/mapped_file.h"
#include "runtime/model/model_view.h"

namespace patchfuse {

struct ModelFile {
  MappedFile file;  // owns the mapping that `view` points into (moving it keeps the address)
  ModelView view;
};

Result<ModelFile> open_model_file(const std::string& path);

}  // namespace patchfuse
