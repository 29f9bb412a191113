// libFuzzer target: a .npy file as patchfuse-run reads its input.
#include "tests/fuzz/fuzz_input_file.h"
#include "cli/npy.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = patchfuse::fuzz::write_input("x.npy", data, size);
  auto a = patchfuse::read_npy(path);
  if (!a.ok()) return 0;
  const std::vector<double> values = a->to_double();
  volatile double sink = values.empty() ? 0.0 : values.back();
  (void)sink;
  return 0;
}
