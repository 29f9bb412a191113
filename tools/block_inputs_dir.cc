#include "tools/block_inputs_dir.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <nlohmann/json.hpp>
#include <vector>

#include "cli/npy.h"
#include "runtime/core/output_file.h"

namespace patchfuse {

namespace {

const char* npy_descr(pf_element_type t) {
  switch (t) {
    case PF_ELEMENT_F32: return "<f4";
    case PF_ELEMENT_I32: return "<i4";
    case PF_ELEMENT_I64: return "<i8";
  }
  return "?";
}

const char* dtype_text(pf_element_type t) {
  switch (t) {
    case PF_ELEMENT_F32: return "float32";
    case PF_ELEMENT_I32: return "int32";
    case PF_ELEMENT_I64: return "int64";
  }
  return "?";
}

}  // namespace

std::string write_block_inputs(Session& session, const pf_grid& grid, const std::string& dir, const std::string& model_path,
                               const pf_module_info& module) {
  auto schedule = session.block_schedule();
  if (!schedule) return schedule.error();
  auto infos = session.block_inputs(grid);
  if (!infos) return infos.error();
  std::vector<std::vector<uint8_t>> data;
  for (const pf_block_input_info& b : *infos) {
    data.emplace_back(b.bytes);
    const std::string err = session.block_input(b.name, grid, data.back().data(), b.bytes);
    if (!err.empty()) return err;
  }
  if (::mkdir(dir.c_str(), 0777) != 0 && errno != EEXIST) return dir + ": cannot create: " + std::strerror(errno);
  nlohmann::ordered_json tensors = nlohmann::ordered_json::array();
  for (size_t i = 0; i < infos->size(); ++i) {
    const pf_block_input_info& b = (*infos)[i];
    const std::vector<int64_t> shape(b.shape, b.shape + b.rank);
    const std::string file = std::string(b.name) + ".npy";
    const Status s = write_npy(dir + "/" + file, npy_descr(b.type), shape, data[i].data());
    if (!s.ok()) return s.error().message;
    tensors.push_back({{"name", b.name}, {"file", file}, {"dtype", dtype_text(b.type)}, {"shape", shape}});
  }
  const nlohmann::ordered_json manifest = {
      {"model", model_path},
      {"module", module.path},
      {"grid", {grid.t, grid.h, grid.w}},
      {"tensors", tensors},
      {"config", {{"depth", schedule->depth}, {"num_heads", schedule->num_heads}, {"head_dim", schedule->head_dim},
                  {"rotary", schedule->rotary}, {"rope_theta", schedule->rope_theta}}},
      {"schedule", schedule->description}};
  const std::string text = manifest.dump(2) + "\n";
  const Status s = write_file_atomically(dir + "/manifest.json", std::vector<uint8_t>(text.begin(), text.end()));
  return s.ok() ? std::string() : s.error().message;
}

}  // namespace patchfuse
