// Weight transforms that let a backend take uint8 pixels (as (u8 - 128) / 256, preprocessing.h): Hugging Face's
// normalization folded into the weights and bias, and for still images the sum over the
// temporal axis. Both are exact algebra on the model's weights, computed in double and rounded
// to f32 once; a backend then packs the result like any [O, K] f32 weight.
#pragma once

#include <cstdint>
#include <vector>

#include "runtime/frames/preprocessing.h"
#include "runtime/model/model_view.h"

namespace patchfuse {

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
FoldedWeights fold_normalization(const ModuleView& m, const Preprocessing& p, bool still);

}  // namespace patchfuse
