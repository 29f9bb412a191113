// The overhead benchmarks' shared model and inputs (bench_models.h).
#include "tests/bench/bench_models.h"

#include "converter/model_writer.h"
#include "patchfuse/patchfuse.hpp"

namespace bench {
namespace {

// `preprocessed`: with Qwen2-VL's image preprocessing, so the frames path can run.
patchfuse::ModuleRecord module_record(bool preprocessed) {
  patchfuse::ModuleRecord m;
  m.path = "visual.patch_embed";
  m.family = patchfuse::find_family("patch_embeddings");
  m.geometry.kernel = m.geometry.stride = {2, 14, 14};
  m.geometry.padding = {0, 0, 0};
  m.geometry.dilation = {1, 1, 1};
  m.geometry.in_channels = 3;
  m.geometry.embed_dim = kOut;
  m.weight = {"visual.patch_embed.linear_proj.weight", {kOut, kK}, patchfuse::DType::kF32,
              std::vector<uint8_t>(reinterpret_cast<const uint8_t*>(weights().data()),
                                   reinterpret_cast<const uint8_t*>(weights().data() + weights().size()))};
  if (preprocessed) m.preprocessing = preprocessing();
  return m;
}

std::vector<uint8_t> build(bool preprocessed) {
  return patchfuse::build_model("qwen2_vl", patchfuse::validate_fusion_config(patchfuse::default_fusion_config()).value(),
                                {module_record(preprocessed)});
}

}  // namespace

std::vector<float> values(size_t n, uint32_t seed) {
  std::vector<float> v(n);
  uint32_t s = seed;
  for (float& x : v) {
    s = s * 1664525u + 1013904223u;
    x = static_cast<float>(s >> 8) / 16777216.0f - 0.5f;
  }
  return v;
}

const std::vector<float>& weights() {  // [kOut, kK]
  static const std::vector<float> w = values(static_cast<size_t>(kOut * kK), 1);
  return w;
}

std::vector<uint8_t> random_bytes(size_t n, uint32_t seed) {
  std::vector<uint8_t> v(n);
  uint32_t s = seed;
  for (uint8_t& x : v) x = static_cast<uint8_t>((s = s * 1664525u + 1013904223u) >> 24);
  return v;
}

patchfuse::Preprocessing preprocessing() {
  patchfuse::Preprocessing p;
  p.mean = {0.48145466f, 0.4578275f, 0.40821073f};
  p.std = {0.26862954f, 0.26130258f, 0.27577711f};
  p.min_pixels = 3136;
  p.max_pixels = 28 * 28 * 1280;  // Qwen2-VL's default: 1920x1080 -> 728x1316
  return p;
}

const std::vector<uint8_t>& model_bytes() {
  static const std::vector<uint8_t> bytes = build(false);
  return bytes;
}

const std::vector<uint8_t>& frames_model_bytes() {
  static const std::vector<uint8_t> bytes = build(true);
  return bytes;
}

bool bf16_available() {
  return static_cast<bool>(open_session(model_bytes(), PF_BACKEND_ONEDNN, PF_PRECISION_BF16,
                                        patchfuse::default_options().threads));
}

patchfuse::Expected<patchfuse::Session> open_session(const std::vector<uint8_t>& bytes, pf_backend backend,
                                                     pf_precision precision, int threads) {
  static patchfuse::Model plain = std::move(*patchfuse::Model::open_memory(model_bytes().data(), model_bytes().size()));
  static patchfuse::Model frames =
      std::move(*patchfuse::Model::open_memory(frames_model_bytes().data(), frames_model_bytes().size()));
  pf_session_options o = patchfuse::default_options();
  o.backend = backend;
  o.precision = precision;
  o.threads = threads;
  return patchfuse::Session::create(&bytes == &frames_model_bytes() ? frames : plain, 0, o);
}

}  // namespace bench
