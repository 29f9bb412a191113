// A Hugging Face checkpoint: config.json plus one safetensors file or an index with shards.
// Shards are opened lazily, so converting touches only the index, the headers of the shards that
// hold patch embeddings, and those tensors' bytes.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "converter/model_writer.h"
#include "converter/safetensors.h"
#include "runtime/core/result.h"

namespace patchfuse {

struct CheckpointTensor {
  const SafetensorsEntry* entry;
  const uint8_t* data;
  const std::string* file;  // the shard it came from, for messages
};

class Checkpoint {
 public:
  // `input`: a folder (config.json + model.safetensors, or model.safetensors.index.json + shards),
  // a .safetensors file, or a *.safetensors.index.json file. `config_override` replaces the
  // config.json found beside the weights when non-empty.
  static Result<Checkpoint> open(const std::string& input, const std::string& config_override);

  const std::string& config_path() const { return config_path_; }
  // Every tensor name in the checkpoint, sorted.
  std::vector<std::string> tensor_names() const;
  bool has(const std::string& name) const { return location_.count(name) != 0; }
  Result<CheckpointTensor> tensor(const std::string& name);
  // Every file the checkpoint is made of (the output must not be one of them).
  std::vector<std::string> files() const;

 private:
  Result<SafetensorsFile*> shard(const std::string& file);

  std::string config_path_;
  std::string index_path_;                      // empty for a single file
  std::map<std::string, std::string> location_;  // tensor name -> file path
  std::map<std::string, std::unique_ptr<SafetensorsFile>> open_;
};

// Reads one checkpoint tensor as `to` (nullopt: its own dtype) under a new name and shape of the
// same element count; notes when the conversion changed any value.
Result<TensorRecord> read_tensor(Checkpoint& ckpt, const std::string& name, const std::string& new_name,
                                 std::vector<int64_t> new_shape, std::optional<DType> to,
                                 std::vector<std::string>& notes);

}  // namespace patchfuse
