// libFuzzer target: a whole .safetensors file (8-byte length, JSON header, data). Every tensor the
// header validation accepts has its bytes read, so an offset check that lets a tensor reach past
// the mapping shows up under AddressSanitizer.
#include "converter/safetensors.h"
#include "tests/fuzz/fuzz_input_file.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = patchfuse::fuzz::write_input("model.safetensors", data, size);
  auto f = patchfuse::SafetensorsFile::open(path);
  if (!f.ok()) return 0;
  volatile uint8_t sink = 0;
  for (const patchfuse::SafetensorsEntry& e : f->entries()) {
    const uint8_t* bytes = f->data(e);
    for (uint64_t i = 0; i < e.end - e.begin; ++i) sink = sink ^ bytes[i];
  }
  (void)f->find("visual.patch_embed.proj.weight");
  return 0;
}
