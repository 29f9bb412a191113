#include "runtime/frames/weight_transforms.h"

namespace patchfuse {

FoldedWeights fold_normalization(const ModuleView& m, const Preprocessing& p, bool still) {
  const int64_t out = m.geometry.embed_dim, channels = m.geometry.in_channels;
  const int64_t frames = m.geometry.kernel[0], pp = m.geometry.kernel[1] * m.geometry.kernel[2];
  const int64_t k_in = channels * frames * pp;
  FoldedWeights f;
  f.k = still ? channels * pp : k_in;
  f.weight.resize(static_cast<size_t>(out * f.k));
  f.bias.resize(static_cast<size_t>(out));
  std::vector<double> acc(static_cast<size_t>(f.k));
  for (int64_t o = 0; o < out; ++o) {
    double shift = m.bias ? load_as_f32(m.bias->data, m.bias->dtype, static_cast<size_t>(o)) : 0.0;
    std::fill(acc.begin(), acc.end(), 0.0);
    for (int64_t c = 0; c < channels; ++c) {
      const double scale = static_cast<double>(p.rescale_factor) / kPixelScale / p.std[static_cast<size_t>(c)];
      const double offset =
          (kPixelCentre * static_cast<double>(p.rescale_factor) - p.mean[static_cast<size_t>(c)]) / p.std[static_cast<size_t>(c)];
      for (int64_t t = 0; t < frames; ++t) {
        for (int64_t i = 0; i < pp; ++i) {
          const size_t src = static_cast<size_t>(o * k_in + (c * frames + t) * pp + i);
          const double w = load_as_f32(m.weight.data, m.weight.dtype, src);
          shift += w * offset;
          acc[static_cast<size_t>(still ? c * pp + i : (c * frames + t) * pp + i)] += w * scale;
        }
      }
    }
    for (int64_t j = 0; j < f.k; ++j) f.weight[static_cast<size_t>(o * f.k + j)] = static_cast<float>(acc[static_cast<size_t>(j)]);
    f.bias[static_cast<size_t>(o)] = static_cast<float>(shift);
  }
  return f;
}

}  // namespace patchfuse
