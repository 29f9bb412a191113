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
      acc_(static_cast<size_t>(m.pixels)) {
  for (size_t c = 0; c < scale_.size(); ++c) {
    scale_[c] = static_cast<double>(p.rescale_factor) / kPixelScale / p.std[c];
    offset_[c] = (kPixelCentre * static_cast<double>(p.rescale_factor) - p.mean[c]) / p.std[c];
  }
}

namespace {

// The sum of n floats in double over four running sums: one chain of dependent adds per channel
// (the fold's bias, 1176 adds for Qwen2-VL) kept the fold at one add per 4 cycles and stopped the
// compiler vectorizing the row beside it.
double sum_in_double(const float* w, int64_t n) {
  double s[4] = {0, 0, 0, 0};
  int64_t i = 0;
  for (; i + 4 <= n; i += 4) {
    for (int l = 0; l < 4; ++l) s[l] += w[i + l];
  }
  for (; i < n; ++i) s[0] += w[i];
  return (s[0] + s[1]) + (s[2] + s[3]);
}

}  // namespace

float NormalizationFold::channel(int64_t o, float* row) {
  const int64_t frames = m_.frames, pp = m_.pixels;
  // The model's row widened to f32 in one call: a load per element through the dtype switch
  // made folding a 1280 x 1176 bf16 module take 17 ms of a session's creation.
  const size_t row_bytes = widened_.size() * dtype_size(m_.dtype);
  convert_elements(m_.weight + static_cast<size_t>(o) * row_bytes, m_.dtype, reinterpret_cast<uint8_t*>(widened_.data()),
                   DType::kF32, widened_.size());
  double shift = m_.bias ? load_as_f32(m_.bias, m_.bias_dtype, static_cast<size_t>(o)) : 0.0;
  for (int64_t c = 0; c < m_.channels; ++c) {
    const double scale = scale_[static_cast<size_t>(c)];
    const float* w = &widened_[static_cast<size_t>(c * frames * pp)];  // [frames, pp]
    float* r = row + (still_ ? c * pp : c * frames * pp);
    if (still_) {  // the frames' terms summed in double, in frame order, rounded once
      double* a = acc_.data();
      for (int64_t i = 0; i < pp; ++i) a[i] = w[i] * scale;
      for (int64_t t = 1; t < frames; ++t) {
        for (int64_t i = 0; i < pp; ++i) a[i] += w[t * pp + i] * scale;
      }
      for (int64_t i = 0; i < pp; ++i) r[i] = static_cast<float>(a[i]);
    } else {
      for (int64_t i = 0; i < frames * pp; ++i) r[i] = static_cast<float>(w[i] * scale);
    }
    shift += sum_in_double(w, frames * pp) * offset_[static_cast<size_t>(c)];  // b' += offset[c] * sum W[o, c]
  }
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

// Channel o of `q` from its folded row w (q.k values) and folded bias. Written so the compiler
// vectorizes both loops (the maximum over four running ones, the clamp in integers): scalar, they
// took 1.5 ms of a Qwen2-VL int8 session's creation.
void quantize_channel(const float* w, float bias, int max_q, size_t o, Int8Weights& q) {
  const auto k = static_cast<size_t>(q.k);
  float m[4] = {0, 0, 0, 0};
  size_t j = 0;
  for (; j + 4 <= k; j += 4) {
    for (int l = 0; l < 4; ++l) m[l] = std::max(m[l], std::fabs(w[j + l]));
  }
  for (; j < k; ++j) m[0] = std::max(m[0], std::fabs(w[j]));
  // kPixelScale is a power of two, so scaling the largest |w| is scaling each and taking the largest.
  const double max_abs = std::max(std::max(m[0], m[1]), std::max(m[2], m[3])) * kPixelScale;
  const double scale = max_abs > 0 ? max_abs / max_q : 1.0;
  int8_t* qw = &q.weight[o * k];
  int64_t sum_q = 0;
  for (j = 0; j < k; ++j) {
    const auto v = static_cast<int32_t>(round_half_even(static_cast<double>(w[j]) * kPixelScale / scale));  // |v| <= max_q
    qw[j] = static_cast<int8_t>(std::clamp(v, -max_q, max_q));
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
