#include "runtime/model/model_file.h"

namespace patchfuse {

Result<ModelFile> open_model_file(const std::string& path) {
  PF_ASSIGN_OR_RETURN(MappedFile file, MappedFile::open(path, MappedFile::Reading::kWhole));
  PF_ASSIGN_OR_RETURN(ModelView view, read_model(file.data(), file.size(), path));
  return ModelFile{std::move(file), std::move(view)};
}

}  // namespace patchfuse
