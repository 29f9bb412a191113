#include "runtime/frames/weight_transforms.h"

#include <algorithm>
#include <cmath>

namespace patchfuse {

NormalizationFold::NormalizationFold(const ConvWeights& m, const Preprocessing& p, bool still)
    : m_(m),
      still_(still),
      k_(still ? m.channels * m.pixels : m.channels * m.frames * m.pixels),
      scale_(static_cast<size_t>(m.channels)),
      offset_(static_cast<size_t>(m.channels)),
      widened_(static_cast<size_t>(m.channels * m.frames * m.pixels)),
      acc_(static_cast<size_t>(k_)) {
  for (size_t c = 0; c < scale_.size(); ++c) {
    scale_[c] = static_cast<double>(p.rescale_factor) / kPixelScale / p.std[c];
    offset_[c] = (kPixelCentre * static_cast<double>(p.rescale_factor) - p.mean[c]) / p.std[c];
  }
}

float NormalizationFold::channel(int64_t o, float* row) {
  const int64_t frames = m_.frames, pp = m_.pixels;
  // The model's row widened to f32 in one call: a load per element through the dtype switch
  // made folding a 1280 x 1176 bf16 module take 17 ms of a session's creation.
  const size_t row_bytes = widened_.size() * dtype_size(m_.dtype);
  convert_elements(m_.weight + static_cast<size_t>(o) * row_bytes, m_.dtype, reinterpret_cast<uint8_t*>(widened_.data()),
                   DType::kF32, widened_.size());
  double shift = m_.bias ? load_as_f32(m_.bias, m_.bias_dtype, static_cast<size_t>(o)) : 0.0;
  std::fill(acc_.begin(), acc_.end(), 0.0);
  for (int64_t c = 0; c < m_.channels; ++c) {
    for (int64_t t = 0; t < frames; ++t) {
      const float* w = &widened_[static_cast<size_t>((c * frames + t) * pp)];
      double* a = &acc_[static_cast<size_t>(still_ ? c * pp : (c * frames + t) * pp)];
      for (int64_t i = 0; i < pp; ++i) {
        shift += w[i] * offset_[static_cast<size_t>(c)];
        a[i] += w[i] * scale_[static_cast<size_t>(c)];
      }
    }
  }
  for (size_t j = 0; j < acc_.size(); ++j) row[j] = static_cast<float>(acc_[j]);
  return static_cast<float>(shift);
}

FoldedWeights fold_normalization(const ConvWeights& m, const Preprocessing& p, bool still) {
  NormalizationFold fold(m, p, still);
  FoldedWeights f;
  f.k = fold.k();
  f.weight.resize(static_cast<size_t>(m.embed_dim * f.k));
  f.bias.resize(static_cast<size_t>(m.embed_dim));
  for (int64_t o = 0; o < m.embed_dim; ++o) f.bias[static_cast<size_t>(o)] = fold.channel(o, &f.weight[static_cast<size_t>(o * f.k)]);
  return f;
}

namespace {

Int8Weights sized_int8(int64_t k, size_t out) {
  Int8Weights q;
  q.k = k;
  q.weight.resize(out * static_cast<size_t>(k));
  q.scale.resize(out);
  q.bias.resize(out);
  return q;
}

// Round half to even, as std::nearbyint in the default rounding mode, without its libm call per
// weight (x86-64's baseline has no roundsd; 1.6 ms of a Qwen2-VL int8 session's creation):
// adding 1.5 * 2^52 leaves no fraction bits, so the sum rounds v, exactly for |v| < 2^51.
double round_half_even(double v) {
  constexpr double kShifter = 6755399441055744.0;
  return (v + kShifter) - kShifter;
}

// Channel o of `q` from its folded row w (q.k values) and folded bias.
void quantize_channel(const float* w, float bias, int max_q, size_t o, Int8Weights& q) {
  const auto k = static_cast<size_t>(q.k);
  double max_abs = 0;
  for (size_t j = 0; j < k; ++j) max_abs = std::max(max_abs, std::fabs(static_cast<double>(w[j])) * kPixelScale);
  const double scale = max_abs > 0 ? max_abs / max_q : 1.0;
  int8_t* qw = &q.weight[o * k];
  int64_t sum_q = 0;
  for (size_t j = 0; j < k; ++j) {
    const double v = round_half_even(static_cast<double>(w[j]) * kPixelScale / scale);  // |v| <= max_q
    qw[j] = static_cast<int8_t>(std::clamp(v, -static_cast<double>(max_q), static_cast<double>(max_q)));
    sum_q += qw[j];
  }
  q.scale[o] = static_cast<float>(scale);
  q.bias[o] = static_cast<float>(static_cast<double>(bias) / static_cast<double>(q.scale[o]) -
                                 static_cast<double>(kPixelCentre) * static_cast<double>(sum_q));
}

}  // namespace

Int8Weights quantize_int8(const FoldedWeights& f, int max_q) {
  const size_t out = f.bias.size();
  Int8Weights q = sized_int8(f.k, out);
  for (size_t o = 0; o < out; ++o) quantize_channel(&f.weight[o * static_cast<size_t>(f.k)], f.bias[o], max_q, o, q);
  return q;
}

Int8Weights quantize_int8(const ConvWeights& m, const Preprocessing& p, bool still, int max_q) {
  NormalizationFold fold(m, p, still);
  const auto out = static_cast<size_t>(m.embed_dim);
  Int8Weights q = sized_int8(fold.k(), out);
  std::vector<float> row(static_cast<size_t>(fold.k()));
  for (size_t o = 0; o < out; ++o) quantize_channel(row.data(), fold.channel(static_cast<int64_t>(o), row.data()), max_q, o, q);
  return q;
}

}  // namespace patchfuse
