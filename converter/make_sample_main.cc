// patchfuse-make-sample: writes a small checkpoint shaped like a known architecture, so the quick
// start and the tests need no download.
#include <cstdio>

#include "converter/sample_checkpoint.h"
#include "cli/command_line.h"

using namespace patchfuse;

int main(int argc, char** argv) {
  CLI::App app{"patchfuse-make-sample: write a random, seeded checkpoint shaped like a real VLM"};
  std::string dir, model_type = "qwen2_vl", dtype = "bf16";
  SampleSpec spec;
  app.add_option("DIR", dir, "Output folder")->required();
  app.add_option("--model-type", model_type, "Architecture to imitate: " + known_model_types());
  app.add_option("--dtype", dtype, "Weight dtype")->check(CLI::IsMember({"f32", "f16", "bf16"}));
  app.add_option("--shards", spec.shards, "Number of safetensors shards (1 = no index)")->check(CLI::Range(1, 9));
  app.add_option("--seed", spec.seed, "Random seed");
  app.add_option("--patches", spec.patches, "Rows of pixel_values.npy (0: none)")->check(CLI::Range(0, 1 << 20));
  app.add_option("--embed-dim", spec.embed_dim, "Conv output width (default: the architecture's)")
      ->check(CLI::PositiveNumber);
  if (auto code = patchfuse::parse_command_line(app, argc, argv, "patchfuse-make-sample")) return *code;
  spec.arch = find_architecture(model_type);
  if (spec.arch == nullptr) {
    std::fprintf(stderr, "patchfuse-make-sample: usage error: --model-type '%s' is not one of %s\n",
                 model_type.c_str(), known_model_types().c_str());
    return 2;
  }
  spec.dtype = dtype == "f32" ? DType::kF32 : dtype == "f16" ? DType::kF16 : DType::kBF16;
  Status s = write_sample_checkpoint(dir, spec);
  if (!s.ok()) {
    std::fprintf(stderr, "patchfuse-make-sample: error: %s\n", s.error().message.c_str());
    return 1;
  }
  std::printf("wrote %s checkpoint (%s, %d shard%s) to %s\n", model_type.c_str(), dtype_name(spec.dtype), spec.shards,
              spec.shards == 1 ? "" : "s", dir.c_str());
  return 0;
}
