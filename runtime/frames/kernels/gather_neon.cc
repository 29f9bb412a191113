// The gather rows with NEON (aarch64; armhf compiles this file with -mfpu=neon and runs it where
// AT_HWCAP reports NEON). One 16-byte load a row: the planes have the slack.
#include <arm_neon.h>

#include "runtime/frames/kernels/gather_rows.h"

namespace patchfuse {
namespace {

// Pixel<float>::of on 8 bytes: a widened pixel v zipped with 0x4700 is the float with bits
// 0x470000vv, 2^15 + v / 256 exactly, and subtracting 2^15 + 1/2 leaves (v - 128) / 256, exact
// (no int -> float conversion or multiply).
static_assert(kPixelCentre == 128 && kPixelScale == 1.0 / 256, "pixels8_neon's constants are these");
inline float32x4x2_t pixels8_neon(uint8x8_t b) {
  const uint16x8x2_t words = vzipq_u16(vmovl_u8(b), vdupq_n_u16(0x4700));
  const float32x4_t offset = vdupq_n_f32(32768.5f);
  return {{vsubq_f32(vreinterpretq_f32_u16(words.val[0]), offset), vsubq_f32(vreinterpretq_f32_u16(words.val[1]), offset)}};
}
inline uint16x4_t bf16x4_neon(float32x4_t v) { return vshrn_n_u32(vreinterpretq_u32_f32(v), 16); }

// 14 or 16 pixels as f32 or bf16.
template <class T, int64_t Pt>
struct NeonRow {
  static void apply(T* dst, const uint8_t* src, int64_t) {
    const uint8x16_t b = vld1q_u8(src);
    const float32x4x2_t lo = pixels8_neon(vget_low_u8(b)), hi = pixels8_neon(vget_high_u8(b));
    const float32x4_t f0 = lo.val[0], f1 = lo.val[1], f2 = hi.val[0], f3 = hi.val[1];
    if constexpr (sizeof(T) == 4) {
      vst1q_f32(dst, f0);
      vst1q_f32(dst + 4, f1);
      vst1q_f32(dst + 8, f2);
      if constexpr (Pt == 16) {
        vst1q_f32(dst + 12, f3);
      } else {
        vst1_f32(dst + 12, vget_low_f32(f3));
      }
    } else {  // bf16: the top halves
      vst1q_u16(dst, vcombine_u16(bf16x4_neon(f0), bf16x4_neon(f1)));
      vst1_u16(dst + 8, bf16x4_neon(f2));
      const uint16x4_t last = bf16x4_neon(f3);
      if constexpr (Pt == 16) {
        vst1_u16(dst + 12, last);
      } else {
        vst1_lane_u16(dst + 12, last, 0);
        vst1_lane_u16(dst + 13, last, 1);
      }
    }
  }
};

}  // namespace

void emit_rows_f32_neon(const MergeRow& r, float* out) { emit_rows_with<NeonRow>(r, out); }
void emit_rows_bf16_neon(const MergeRow& r, uint16_t* out) { emit_rows_with<NeonRow>(r, out); }

}  // namespace patchfuse
