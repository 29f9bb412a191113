// libFuzzer target: model.safetensors.index.json of a sharded checkpoint. The folder around it is
// fixed (a config.json and one real shard, model-00001-of-00001.safetensors); the index decides
// which tensors live where, and every tensor it lists is looked up, opening its shard lazily.
#include <cstring>

#include "converter/checkpoint.h"
#include "converter/safetensors.h"
#include "tests/fuzz/fuzz_input_file.h"

namespace {

// A one-tensor shard and a config, written once per process.
void write_fixed_files() {
  static const bool done = [] {
    const std::vector<uint8_t> weight(4 * 3 * 2 * 2 * 2 * 2, 1);
    patchfuse::TensorToWrite t;
    t.name = "visual.patch_embed.proj.weight";
    t.dtype = patchfuse::DType::kBF16;
    t.shape = {4, 3, 2, 2, 2};
    t.data = weight.data();
    t.bytes = weight.size();
    const std::vector<uint8_t> shard = patchfuse::serialize_safetensors({t}, {});
    patchfuse::fuzz::write_input("model-00001-of-00001.safetensors", shard.data(), shard.size());
    const char config[] = R"({"model_type": "qwen2_vl", "vision_config": {"patch_size": 2, "temporal_patch_size": 2, "in_channels": 3}})";
    patchfuse::fuzz::write_input("config.json", reinterpret_cast<const uint8_t*>(config), std::strlen(config));
    return true;
  }();
  (void)done;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  write_fixed_files();
  patchfuse::fuzz::write_input("model.safetensors.index.json", data, size);
  auto c = patchfuse::Checkpoint::open(patchfuse::fuzz::scratch_dir(), "");
  if (!c.ok()) return 0;
  for (const std::string& name : c->tensor_names()) {
    auto t = c->tensor(name);
    if (t.ok()) {
      volatile uint8_t sink = t->data[0];
      (void)sink;
    }
  }
  (void)c->files();
  return 0;
}
