// What the NEON resize forms share (resize_neon.cc, and on aarch64 resize_neon_dotprod.cc): the
// aarch64/armhf shims, the rounding, and the horizontal pass's block driver. Internal linkage
// throughout (kernels.h says why).
#pragma once

#include <arm_neon.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <utility>

#include "runtime/frames/kernels/kernels.h"
#include "runtime/frames/kernels/resize_row_pairs.h"

namespace patchfuse {
namespace {

// The pil passes with NEON: the same int16 halves of the coefficients (TapTablesView), multiplied by
// int16 pixels with widening multiply-adds (smlal) into int32, so the sums are the x86 kernels'.

// tbl over a 16-byte window (indices of 16 and more read 0, as pshufb's 0x80 does); armhf's vtbl
// looks up 8 indices at a time.
inline int16x8_t lookup16(uint8x16_t window, uint8x16_t index) {
#if defined(__aarch64__)
  return vreinterpretq_s16_u8(vqtbl1q_u8(window, index));
#else
  const uint8x8x2_t w = {{vget_low_u8(window), vget_high_u8(window)}};
  return vreinterpretq_s16_u8(vcombine_u8(vtbl2_u8(w, vget_low_u8(index)), vtbl2_u8(w, vget_high_u8(index))));
#endif
}

// Adjacent lanes summed: (a0 + a1, a2 + a3, b0 + b1, b2 + b3).
inline int32x4_t add_pairs(int32x4_t a, int32x4_t b) {
#if defined(__aarch64__)
  return vpaddq_s32(a, b);
#else
  return vcombine_s32(vpadd_s32(vget_low_s32(a), vget_high_s32(a)), vpadd_s32(vget_low_s32(b), vget_high_s32(b)));
#endif
}

// acc + the high 4 lanes of a times lane Lane of c: one smlal2 on aarch64 (GCC moved the high
// half out first for vget_high_s16); armhf's halves are registers already.
template <int Lane>
inline int32x4_t mlal_high_lane(int32x4_t acc, int16x8_t a, int16x4_t c) {
#if defined(__aarch64__)
  return vmlal_high_lane_s16(acc, a, c, Lane);
#else
  return vmlal_lane_s16(acc, vget_high_s16(a), c, Lane);
#endif
}

// acc + the high 4 lanes of a times those of b: smlal2 (GCC moves both high halves out first for
// vget_high_s16 when several products share them).
inline int32x4_t mlal_high(int32x4_t acc, int16x8_t a, int16x8_t b) {
#if defined(__aarch64__)
  return vmlal_high_s16(acc, a, b);
#else
  return vmlal_s16(acc, vget_high_s16(a), vget_high_s16(b));
#endif
}

// 8 sums rounded and shifted right by Shift, saturated to 0..255 (clip8): the rounding shift is
// part of the narrowing to uint16 (sqrshrun), then uqxtn.
template <int Shift>
inline uint8x8_t round_narrow8(int32x4_t s0, int32x4_t s1) {
  return vqmovn_u16(vcombine_u16(vqrshrun_n_s32(s0, Shift), vqrshrun_n_s32(s1, Shift)));
}

// Pillow's rounded shift, (256 * hi + lo + 2^21) >> 22, without forming 256 * hi:
// floor((hi + lo / 256 + 2^13) / 2^14) = floor((hi + floor(lo / 256) + 2^13) / 2^14) for integer
// hi, so ssra adds lo >> 8 to hi (fold_halves) and a rounding shift by kHalvesShift finishes.
constexpr int kHalvesShift = kPilPrecisionBits - 8;
inline int32x4_t fold_halves(int32x4_t hi, int32x4_t lo) { return vsraq_n_s32(hi, lo, 8); }

// The high 4 lanes of a times those of b: smull2 on aarch64.
inline int32x4_t mull_high(int16x8_t a, int16x8_t b) {
#if defined(__aarch64__)
  return vmull_high_s16(a, b);
#else
  return vmull_s16(vget_high_s16(a), vget_high_s16(b));
#endif
}

// One tap pair of a lane of 4 outputs, for the three channels: tbl places each output's two
// pixels as int16 (idx: the pair's shuffle), smlal multiplies them by the halves (kh, kl), leaving
// each output's two products in adjacent lanes. The first pair starts the sums (smull).
template <bool First>
inline void horizontal_pair(const uint8x16_t (&w)[3], const uint8_t* idx, const int16_t* kh,
                            const int16_t* kl, int32x4_t (&h)[3][2], int32x4_t (&l)[3][2]) {
  const uint8x16_t index = vld1q_u8(idx);
  const int16x8_t kh8 = vld1q_s16(kh), kl8 = vld1q_s16(kl);
  for (size_t ch = 0; ch < 3; ++ch) {
    const int16x8_t px = lookup16(w[ch], index);
    if constexpr (First) {
      h[ch][0] = vmull_s16(vget_low_s16(px), vget_low_s16(kh8));
      h[ch][1] = mull_high(px, kh8);
      l[ch][0] = vmull_s16(vget_low_s16(px), vget_low_s16(kl8));
      l[ch][1] = mull_high(px, kl8);
    } else {
      h[ch][0] = vmlal_s16(h[ch][0], vget_low_s16(px), vget_low_s16(kh8));
      h[ch][1] = mlal_high(h[ch][1], px, kh8);
      l[ch][0] = vmlal_s16(l[ch][0], vget_low_s16(px), vget_low_s16(kl8));
      l[ch][1] = mlal_high(l[ch][1], px, kl8);
    }
  }
}

// A lane's pairs, unrolled for a fixed count (sizeof...(I)).
template <size_t... I>
inline void horizontal_pairs_unrolled(const uint8x16_t (&w)[3], const uint8_t* idx, const int16_t* kh,
                                      const int16_t* kl, int32x4_t (&h)[3][2], int32x4_t (&l)[3][2],
                                      std::index_sequence<I...>) {
  (horizontal_pair<I == 0>(w, idx + 32 * I, kh + 16 * I, kl + 16 * I, h, l), ...);
}

// The NEON horizontal kernels' blocks of 8 outputs (TapTablesView.block 8), a lane of 4 at a time
// with its three channels together, so each tap group's lookup and coefficients are loaded once
// for R, G and B: Lane::sums gives the lane's 4 sums per channel from the channels' 16 source
// bytes, to be rounded and shifted by Lane::kShift, and st3 interleaves the block's R, G, B.
// Blocks that do not fit and the tail run the scalar loop.
template <class Lane>
inline void horizontal_blocks_neon(const uint8_t* planes, size_t stride, const TapTablesView& t,
                                   const int32_t* first, const int32_t* k8, size_t c0, size_t c1,
                                   uint8_t* dst) {
  const size_t blocks = (c1 - c0) / 8;
  for (size_t b = 0; b < blocks; ++b) {
    const size_t x = c0 + 8 * b;
    uint8_t* d = dst + (x - c0) * 3;
    if (!t.ok[b]) {
      pil_horizontal_k8_portable(planes, stride, first, k8, x, x + 8, d);
      continue;
    }
    int32x4_t sums[2][3];  // per lane (outputs 0-3, 4-7) and channel
    for (size_t lane = 0; lane < 2; ++lane) {
      uint8x16_t w[3];
      for (size_t ch = 0; ch < 3; ++ch) w[ch] = vld1q_u8(planes + ch * stride + first[x + 4 * lane]);
      Lane::sums(t, b, lane, w, sums[lane]);
    }
    uint8x8x3_t rgb;
    for (size_t ch = 0; ch < 3; ++ch) rgb.val[ch] = round_narrow8<Lane::kShift>(sums[0][ch], sums[1][ch]);
    vst3_u8(d, rgb);
  }
  pil_horizontal_k8_portable(planes, stride, first, k8, c0 + 8 * blocks, c1, dst + 8 * blocks * 3);
}

// The wide passes' blocks of 8 outputs (WideTablesView), a channel and a lane of 4 at a time:
// Lane::sums(p, t, x) gives outputs x .. x + 3's sums from channel plane p, to be rounded and
// shifted by Lane::kShift; st3 interleaves the block's R, G, B (the padded last block's real
// outputs only, through a buffer).
template <class Lane>
inline void wide_blocks_neon(const uint8_t* planes, size_t stride, const WideTablesView& t, size_t n, uint8_t* dst) {
  for (size_t x = 0; x < n; x += 8) {
    uint8x8x3_t rgb;
    for (size_t ch = 0; ch < 3; ++ch) {
      const uint8_t* p = planes + ch * stride;
      rgb.val[ch] = round_narrow8<Lane::kShift>(Lane::sums(p, t, x), Lane::sums(p, t, x + 4));
    }
    if (x + 8 <= n) {
      vst3_u8(dst + 3 * x, rgb);
    } else {
      uint8_t buffer[24];
      vst3_u8(buffer, rgb);
      std::memcpy(dst + 3 * x, buffer, 3 * (n - x));
    }
  }
}

}  // namespace
}  // namespace patchfuse
