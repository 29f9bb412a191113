// Interleaved pixels -> planes with NEON: ld3/ld4 de-interleave by themselves, 16 pixels at a time.
#include <arm_neon.h>

#include "runtime/frames/kernels/kernels.h"

namespace patchfuse {
namespace {

template <size_t kBytes>
void split(const uint8_t* src, size_t width, uint8_t* p0, uint8_t* p1, uint8_t* p2, SplitFn tail) {
  size_t x = 0;
  for (; x + 16 <= width; x += 16) {
    uint8x16_t v[3];
    if constexpr (kBytes == 3) {
      const uint8x16x3_t px = vld3q_u8(src + 3 * x);
      v[0] = px.val[0], v[1] = px.val[1], v[2] = px.val[2];
    } else {
      const uint8x16x4_t px = vld4q_u8(src + 4 * x);
      v[0] = px.val[0], v[1] = px.val[1], v[2] = px.val[2];
    }
    vst1q_u8(p0 + x, v[0]);
    vst1q_u8(p1 + x, v[1]);
    vst1q_u8(p2 + x, v[2]);
  }
  tail(src + kBytes * x, width - x, p0 + x, p1 + x, p2 + x);
}

}  // namespace

void split_rgb_neon(const uint8_t* src, size_t width, uint8_t* p0, uint8_t* p1, uint8_t* p2) {
  split<3>(src, width, p0, p1, p2, split_rgb_portable);
}

void split_rgba_neon(const uint8_t* src, size_t width, uint8_t* p0, uint8_t* p1, uint8_t* p2) {
  split<4>(src, width, p0, p1, p2, split_rgba_portable);
}

}  // namespace patchfuse
