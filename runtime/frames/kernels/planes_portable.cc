// Interleaved pixels -> one plane per channel in portable C++: the baseline form, the oracle, and
// the vector forms' tails.
#include "runtime/frames/kernels/kernels.h"

namespace patchfuse {
namespace {

template <size_t kBytes>
void split(const uint8_t* __restrict src, size_t width, uint8_t* __restrict p0, uint8_t* __restrict p1,
           uint8_t* __restrict p2) {
  for (size_t x = 0; x < width; ++x) {
    p0[x] = src[kBytes * x];
    p1[x] = src[kBytes * x + 1];
    p2[x] = src[kBytes * x + 2];
  }
}

}  // namespace

void split_rgb_portable(const uint8_t* src, size_t width, uint8_t* p0, uint8_t* p1, uint8_t* p2) {
  split<3>(src, width, p0, p1, p2);
}

void split_rgba_portable(const uint8_t* src, size_t width, uint8_t* p0, uint8_t* p1, uint8_t* p2) {
  split<4>(src, width, p0, p1, p2);
}

}  // namespace patchfuse
