// Weight transforms that let a backend take uint8 pixels (as (u8 - 128) / 256, preprocessing.h): Hugging Face's
// normalization folded into the weights and bias, and for still images the sum over the
// temporal axis. Both are exact algebra on the model's weights, computed in double and rounded
// to f32 once; a backend then packs the result like any [O, K] f32 weight.
#pragma once

#include <cstdint>
#include <vector>

#include "runtime/core/dtype.h"
#include "runtime/frames/preprocessing.h"

namespace patchfuse {

// A Conv3d's weights as the fold reads them: [embed_dim, channels, frames, kh * kw] in `dtype`,
// and the bias (embed_dim values, or none). The model layer makes it from a module (conv_weights
// in model/model_view.h): the frames layer does not read models.
struct ConvWeights {
  const uint8_t* weight = nullptr;
  DType dtype = DType::kF32;
  const uint8_t* bias = nullptr;  // null: no bias
  DType bias_dtype = DType::kF32;
  int64_t embed_dim = 0, channels = 0, frames = 0, pixels = 0;  // pixels: kh * kw
};

struct FoldedWeights {
  int64_t k = 0;              // row length: C*T*P*P (video) or C*P*P (still image)
  std::vector<float> weight;  // [embed_dim, k], columns in (c, [t,] y, x) order
  std::vector<float> bias;    // [embed_dim]; always present (normalization creates one)
};

// With v = (u8 * rescale - mean[c]) / std[c] as the model's input and q = (u8 - 128) / 256 as what
// the kernel gets, v = q * 256 * rescale / std[c] + (128 * rescale - mean[c]) / std[c], so
//   W'[o,c,t,y,x] = W[o,c,t,y,x] * 256 * rescale / std[c]
//   b'[o]         = b[o] + sum_{c,t,y,x} W[o,c,t,y,x] * (128 * rescale - mean[c]) / std[c]
// `still`: Hugging Face repeats a still image temporal_patch_size times, so
//   W_still[o,c,y,x] = sum_t W'[o,c,t,y,x], and b' is the same.
// The module's geometry must have passed check_preprocessing(p).
FoldedWeights fold_normalization(const ConvWeights& m, const Preprocessing& p, bool still);

// The same fold one output channel at a time, for callers that need another form of the rows
// (quantize_int8 below) and should not hold all of them in f32: 3 MB of fresh pages for a
// Qwen2-VL still kernel, most of an int8 session's creation.
class NormalizationFold {
 public:
  NormalizationFold(const ConvWeights& m, const Preprocessing& p, bool still);
  int64_t k() const { return k_; }
  // Channel o's folded row (k() values, each rounded to f32 once) into `row`; returns b'[o].
  float channel(int64_t o, float* row);

 private:
  ConvWeights m_;
  bool still_;
  int64_t k_;
  std::vector<double> scale_, offset_;  // per input channel
  std::vector<float> widened_;          // the model's row in f32
  std::vector<double> acc_;             // a still image's channel row before rounding
};

// int8 on uint8 frames: the pixels need no quantization, so only the weights lose precision.
// For the raw u8 the kernel then gets, W'' = W' / 256 is quantized symmetrically per output
// channel to `max_q` levels each side (127, or 63 for kernels that add u8 x s8 pairs in int16:
// Backend::int8_weight_max), scale[o] = max_k |W''[o,k]| / max_q, q = round(W'' / scale) in
// [-max_q, max_q], and
//   y[o] = scale[o] * (sum_k q[o,k] * u8_k + bias[o]),   bias[o] = b'[o] / scale[o] - 128 * sum_k q[o,k]
// which is scale * sum_k q * (u8 - 128) + b': the centring cancels exactly in the integers. The
// bias is in the accumulator's units because oneDNN 2.6's int8 kernels (its 1x1 convolution, as
// its matmul) add it before the output scale (dst = scale * (acc + bias), measured). An all-zero
// channel gets scale 1.
struct Int8Weights {
  int64_t k = 0;
  std::vector<int8_t> weight;  // [embed_dim, k]
  std::vector<float> scale;    // [embed_dim]
  std::vector<float> bias;     // [embed_dim], accumulator units
};
Int8Weights quantize_int8(const FoldedWeights& f, int max_q = 127);
// The same from the fold channel by channel: the quantized weights of fold_normalization(m, p,
// still), bit for bit, without its f32 rows.
Int8Weights quantize_int8(const ConvWeights& m, const Preprocessing& p, bool still, int max_q = 127);

// Output o from its exact integer sum: scale * (acc + bias) in double, rounded to f32 once. The
// backends whose sums are exact int32 (reference, gemmlowp) apply this, so they agree bit for bit.
inline float int8_output(const Int8Weights& w, size_t o, int64_t acc) {
  return static_cast<float>(static_cast<double>(w.scale[o]) * (static_cast<double>(acc) + static_cast<double>(w.bias[o])));
}

}  // namespace patchfuse
