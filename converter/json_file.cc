#include "converter/json_file.h"

#include <fstream>
#include <sstream>

namespace patchfuse {

Result<nlohmann::json> load_json_object(const std::string& path, const std::string& what) {
  std::ifstream in(path);
  PF_CHECK(in, Code::kIoError, path, ": cannot open ", what);
  std::stringstream text;
  text << in.rdbuf();
  nlohmann::json root = nlohmann::json::parse(text.str(), nullptr, /*allow_exceptions=*/false);
  PF_CHECK(!root.is_discarded() && root.is_object(), Code::kInvalidModel, path, ": not a JSON object");
  return root;
}

}  // namespace patchfuse
