#include "tests/support/model_builder.h"

#include <cmath>
#include <random>

#include "converter/model_writer.h"

namespace patchfuse::testing {

std::vector<float> random_floats(size_t count, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<float> v(count);
  // Generated from raw 32-bit draws so the values do not depend on the standard library.
  for (float& f : v) f = static_cast<float>(static_cast<double>(rng()) / 2147483648.0 - 1.0);
  return v;
}

std::vector<uint8_t> make_model(const TestModule& spec, uint32_t seed) {
  ModuleRecord m;
  m.path = "visual.patch_embed";
  m.family = find_family("patch_embeddings");
  m.class_name = "PatchEmbed";
  m.layout = spec.layout;
  m.geometry.kernel = spec.kernel;
  m.geometry.stride = spec.stride.empty() ? spec.kernel : spec.stride;
  m.geometry.padding = spec.padding.empty() ? std::vector<int64_t>(spec.kernel.size(), 0) : spec.padding;
  m.geometry.dilation = spec.dilation.empty() ? std::vector<int64_t>(spec.kernel.size(), 1) : spec.dilation;
  m.geometry.groups = spec.groups;
  m.geometry.in_channels = spec.in_channels;
  m.geometry.embed_dim = spec.embed_dim;
  m.dtype = m.source_dtype = spec.dtype;
  const bool fused = spec.layout == Layout::kFusedLinear;
  const FusionFamily& f = *m.family;
  m.weight.name = fused ? fused_weight_name(f, m.path) : conv_weight_name(f, m.path);
  m.weight.shape = fused ? fused_weight_shape(m.geometry) : conv_weight_shape(m.geometry);
  m.weight.dtype = spec.dtype;
  const size_t k = static_cast<size_t>(*patch_volume(m.geometry));
  auto to_bytes = [&](const std::vector<float>& v) {
    std::vector<uint8_t> out(v.size() * dtype_size(spec.dtype));
    convert_elements(reinterpret_cast<const uint8_t*>(v.data()), DType::kF32, out.data(), spec.dtype, v.size());
    return out;
  };
  // Weights scaled like a trained patch embedding (~1/sqrt(K)) so outputs are O(1).
  std::vector<float> w = random_floats(static_cast<size_t>(spec.embed_dim) * k, seed);
  for (float& x : w) x /= std::sqrt(static_cast<float>(k));
  m.weight.bytes = to_bytes(w);
  if (spec.bias) {
    m.bias = TensorRecord{fused ? fused_bias_name(f, m.path) : conv_bias_name(f, m.path), {spec.embed_dim}, spec.dtype,
                          to_bytes(random_floats(static_cast<size_t>(spec.embed_dim), seed + 1))};
  }
  if (spec.preprocessing) {
    Preprocessing p;
    p.mean = {0.48145466f, 0.4578275f, 0.40821073f};
    p.std = {0.26862954f, 0.26130258f, 0.27577711f};
    p.patch_size = spec.kernel[1];
    p.temporal_patch_size = spec.kernel[0];
    p.merge_size = 2;
    p.min_pixels = 56 * 56;
    p.max_pixels = 28 * 28 * 1280;
    m.preprocessing = p;
  }
  return build_model("qwen2_vl", validate_fusion_config(default_fusion_config()).value(), {m});
}

Oracle oracle(const ModuleView& m, const float* x, size_t n) {
  const size_t k = static_cast<size_t>(m.patch_volume), out = static_cast<size_t>(m.geometry.embed_dim);
  std::vector<double> w(out * k);
  for (size_t i = 0; i < w.size(); ++i) w[i] = load_as_f32(m.weight.data, m.dtype, i);
  Oracle r{std::vector<double>(n * out), std::vector<double>(n * out)};
  for (size_t i = 0; i < n; ++i) {
    for (size_t o = 0; o < out; ++o) {
      double acc = m.bias ? load_as_f32(m.bias->data, m.dtype, o) : 0.0;
      double mag = std::fabs(acc);
      for (size_t j = 0; j < k; ++j) {
        const double t = static_cast<double>(x[i * k + j]) * w[o * k + j];
        acc += t;
        mag += std::fabs(t);
      }
      r.y[i * out + o] = acc;
      r.abs_sum[i * out + o] = mag;
    }
  }
  return r;
}

}  // namespace patchfuse::testing
