// The vertical kernels' tap pairs and the pair (quad, chunk) count as a constant, shared by the
// AVX2, AVX-512 and NEON forms (each compiles its own copy: internal linkage, kernels.h says why).
#pragma once

#include <cstddef>
#include <cstdint>

#include "runtime/frames/kernels/kernels.h"

namespace patchfuse {
namespace {

// The vertical kernels' pairs of taps: each pair's two rows (an odd count's last pair repeats its
// row with k = 0) and its coefficients' halves (pil_halves) as the int16 pair (k0, k1) one
// madd multiplies the two rows' interleaved pixels with.
struct RowPairs {
  static constexpr int32_t kMax = kPilMaxTaps / 2;
  int32_t pairs;
  const uint8_t* rows[2 * kMax];
  int32_t hi[kMax], lo[kMax];
  RowPairs(const uint8_t* const* r, const int32_t* k, int32_t count) : pairs((count + 1) / 2) {
    for (int32_t i = 0; i < 2 * pairs; ++i) rows[i] = r[(i < count ? i : count - 1)];
    for (int32_t i = 0; i < pairs; ++i) {
      const PilHalves k0 = pil_halves(k[2 * i]), k1 = pil_halves(2 * i + 1 < count ? k[2 * i + 1] : 0);
      hi[i] = static_cast<int32_t>((uint32_t{static_cast<uint16_t>(k1.hi)} << 16) | static_cast<uint16_t>(k0.hi));
      lo[i] = (k1.lo << 16) | k0.lo;
    }
  }
};

// The kernels' loops over pairs (or quads) of taps, and the wide passes' over chunks of 16 taps,
// run with the count as a constant where it is small, so that they unroll and keep the
// coefficients and accumulators in registers: with_pairs calls f(Pairs<P>{}) for counts P = 1 to 4
// (upscales, and downscales to 1.5x bicubic or 2x bilinear; chunks: windows of up to 64 taps,
// camera frames to 224 or 384 at up to 16x), f(Pairs<0>{}) for any other count, whose loop reads
// it at run time.
template <int32_t P>
struct Pairs {
  static constexpr int32_t value = P;
};
template <class F>
auto with_pairs(size_t pairs, F&& f) {  // what f returns
  switch (pairs) {
    case 1: return f(Pairs<1>{});
    case 2: return f(Pairs<2>{});
    case 3: return f(Pairs<3>{});
    case 4: return f(Pairs<4>{});
    default: return f(Pairs<0>{});
  }
}

}  // namespace
}  // namespace patchfuse
