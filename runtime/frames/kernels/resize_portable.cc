// The pil passes' portable loops that the vector forms fall back on: outputs one at a time, for a
// vector form's tail and for its blocks whose windows do not fit a vector. The interleaved one is
// also the portable resize form's horizontal pass (the Resizer's scalar passes: resize.cc).
#include "runtime/frames/kernels/kernels.h"

namespace patchfuse {

void pil_horizontal_k8_portable(const uint8_t* planes, size_t stride, const int32_t* first, const int32_t* k8, size_t c0,
                                size_t c1, uint8_t* dst) {
  for (size_t c = c0; c < c1; ++c) {
    for (size_t ch = 0; ch < 3; ++ch) {
      const uint8_t* p = planes + ch * stride + first[c];
      int32_t sum = 1 << (kPilPrecisionBits - 1);
      for (size_t i = 0; i < kPilKernelTaps; ++i) sum += p[i] * k8[c * kPilKernelTaps + i];
      dst[(c - c0) * 3 + ch] = pil_clip8(sum);
    }
  }
}

void pil_horizontal_rgb_portable(const uint8_t* src, size_t width, size_t red, const int32_t* first, const int32_t* k,
                                 size_t taps, size_t c0, size_t c1, uint8_t* dst) {
  for (size_t c = c0; c < c1; ++c) {
    const auto x = static_cast<size_t>(first[c]);
    const size_t n = taps < width - x ? taps : width - x;
    const uint8_t* p = src + 3 * x;
    int32_t sum[3] = {1 << (kPilPrecisionBits - 1), 1 << (kPilPrecisionBits - 1), 1 << (kPilPrecisionBits - 1)};
    for (size_t i = 0; i < n; ++i, p += 3) {
      for (size_t ch = 0; ch < 3; ++ch) sum[ch] += p[ch] * k[c * taps + i];
    }
    uint8_t* d = dst + (c - c0) * 3;
    d[0] = pil_clip8(sum[red]);
    d[1] = pil_clip8(sum[1]);
    d[2] = pil_clip8(sum[2 - red]);
  }
}

// Values [x, n) of the vertical pass one at a time: the vector kernels' tail.
void pil_vertical_from_portable(const uint8_t* const* rows, const int32_t* k, int32_t count, size_t x, size_t n, uint8_t* out) {
  for (; x < n; ++x) {
    int32_t sum = 1 << (kPilPrecisionBits - 1);
    for (int32_t i = 0; i < count; ++i) sum += rows[i][x] * k[i];
    out[x] = pil_clip8(sum);
  }
}

}  // namespace patchfuse
