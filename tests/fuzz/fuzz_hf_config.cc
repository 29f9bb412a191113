// libFuzzer target: config.json, through to the conv geometry the converter would use for a
// Qwen2-VL-shaped Conv3d weight [1280, 3, 2, 14, 14] and a SigLIP-shaped Conv2d one
// [1152, 3, 14, 14]: the vision config's location and fields, the cross-check against the weight,
// the architecture table, and the fusion rules on the result.
#include "converter/geometry.h"
#include "converter/hf_config.h"
#include "tests/fuzz/fuzz_input_file.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = patchfuse::fuzz::write_input("config.json", data, size);
  auto config = patchfuse::load_vision_config(path);
  if (!config.ok()) return 0;
  struct Case {
    const char* family;
    const char* module;
    const char* weight;
    std::vector<int64_t> shape;
  };
  const Case cases[] = {
      {"patch_embeddings", "visual.patch_embed", "visual.patch_embed.proj.weight", {1280, 3, 2, 14, 14}},
      {"conv2d_patch_embeddings", "vision_model.embeddings.patch_embedding",
       "vision_model.embeddings.patch_embedding.weight", {1152, 3, 14, 14}},
  };
  for (const Case& c : cases) {
    const patchfuse::FusionFamily* family = patchfuse::find_family(c.family);
    if (family == nullptr) __builtin_trap();
    auto g = patchfuse::resolve_geometry(*family, c.module, c.weight, c.shape, *config, std::nullopt);
    if (g.ok()) (void)patchfuse::check_eligible(*family, c.module, *g);
  }
  return 0;
}
