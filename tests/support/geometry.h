// Eligible conv geometries for tests that need one without a checkpoint.
#pragma once

#include "runtime/rules/fusion_rules.h"

namespace patchfuse::testing {

// nn.Conv2d(in_channels, embed_dim, kernel_size=(kh, kw), stride=(kh, kw)): padding 0, dilation 1.
inline ConvGeometry conv2d_geometry(int64_t kh, int64_t kw, int64_t in_channels, int64_t embed_dim) {
  ConvGeometry g;
  g.kernel = g.stride = {kh, kw};
  g.padding = {0, 0};
  g.dilation = {1, 1};
  g.in_channels = in_channels;
  g.embed_dim = embed_dim;
  return g;
}

}  // namespace patchfuse::testing
