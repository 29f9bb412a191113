#include "converter/json_file.h"

#include "runtime/core/mapped_file.h"

namespace patchfuse {

Result<nlohmann::json> load_json_object(const std::string& path, const std::string& what) {
  // A regular file, as every input (MappedFile): a directory, FIFO or /dev/zero is refused by name
  // instead of read as bad JSON or without end.
  Result<MappedFile> file = MappedFile::open(path, MappedFile::Reading::kWhole);
  if (!file.ok()) {
    const std::string& m = file.error().message;  // "PATH: why"
    const std::string why = m.compare(0, path.size() + 2, path + ": ") == 0 ? m.substr(path.size() + 2) : m;
    return make_error(Code::kIoError, cat(path, ": cannot read ", what, ": ", why));
  }
  nlohmann::json root = nlohmann::json::parse(file->data(), file->data() + file->size(), nullptr,
                                              /*allow_exceptions=*/false);
  PF_CHECK(!root.is_discarded() && root.is_object(), Code::kInvalidModel, path, ": not a JSON object");
  return root;
}

}  // namespace patchfuse
