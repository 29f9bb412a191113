// The vertical kernels' tap pairs, shared by the AVX2 and AVX-512 forms (each compiles its own
// copy: internal linkage, kernels.h says why).
#pragma once

#include <cstddef>
#include <cstdint>

namespace patchfuse {
namespace {

// The vertical kernels' pairs of taps: each pair's two rows (an odd count's last pair repeats its
// row with k = 0) and its coefficients' halves (see TapTablesView) as the int16 pair (k0, k1) one
// madd multiplies the two rows' interleaved pixels with.
struct RowPairs {
  static constexpr int32_t kMax = 32;  // the kernels take up to 64 taps
  int32_t pairs;
  const uint8_t* rows[2 * kMax];
  int32_t hi[kMax], lo[kMax];
  RowPairs(const uint8_t* const* r, const int32_t* k, int32_t count) : pairs((count + 1) / 2) {
    for (int32_t i = 0; i < 2 * pairs; ++i) rows[i] = r[(i < count ? i : count - 1)];
    for (int32_t i = 0; i < pairs; ++i) {
      const int32_t k0 = k[2 * i], k1 = 2 * i + 1 < count ? k[2 * i + 1] : 0;
      hi[i] = static_cast<int32_t>((static_cast<uint32_t>(k1 >> 8) << 16) | static_cast<uint16_t>(k0 >> 8));
      lo[i] = ((k1 & 255) << 16) | (k0 & 255);
    }
  }
};

// 16 output values at a time, two rows (taps) at a time: the rows' bytes widened to int16 and

}  // namespace
}  // namespace patchfuse
