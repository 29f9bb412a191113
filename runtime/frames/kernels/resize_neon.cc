// The pil passes with NEON: the same int16 halves of the coefficients as the x86 forms
// (TapTablesView), multiplied by int16 pixels with widening multiply-adds (smlal) into int32, so the
// sums are theirs. aarch64 always; armhf compiles this file with -mfpu=neon and runs it where
// AT_HWCAP reports NEON.
#include "runtime/frames/kernels/resize_neon.h"

namespace patchfuse {
namespace {


// A lane of pil_horizontal_pairs_avx2's tables: per tap pair a tbl and four smlal a channel, each
// output's two products summed once at the end. 12 accumulators, which armhf's 16 registers spill
// a little (priced 3% more there than a channel at a time, against 24% less on the A55; a channel
// and a lane at a time was 32% more on armhf: scripts/arm-cost.sh). Pairs: the table's pair
// count, unrolled.
template <size_t Pairs>
struct PairsLane {
  static constexpr int kShift = kHalvesShift;
  static void sums(const TapTablesView& t, size_t b, size_t lane, const uint8x16_t (&w)[3],
                   int32x4_t (&out)[3]) {
    const uint8_t* idx = &t.index[b * t.pairs * 32 + 16 * lane];
    const int16_t* kh = &t.hi[b * t.pairs * 16 + 8 * lane];
    const int16_t* kl = &t.lo[b * t.pairs * 16 + 8 * lane];
    int32x4_t h[3][2], l[3][2];  // per channel: outputs 0-1 and 2-3 of the lane
    horizontal_pairs_unrolled(w, idx, kh, kl, h, l, std::make_index_sequence<Pairs>{});
    for (size_t ch = 0; ch < 3; ++ch) out[ch] = fold_halves(add_pairs(h[ch][0], h[ch][1]), add_pairs(l[ch][0], l[ch][1]));
  }
};

// acc = the high 4 lanes of a times lane Lane of c (smull2 by element on aarch64).
template <int Lane>
inline int32x4_t mull_high_lane(int16x8_t a, int16x4_t c) {
#if defined(__aarch64__)
  return vmull_high_lane_s16(a, c, Lane);
#else
  return vmull_lane_s16(vget_high_s16(a), c, Lane);
#endif
}

// One tap of the vertical pass on 16 values: the row's bytes widened to int16 and multiplied by
// the tap's coefficient halves, lanes Hi and Hi + 1 of c (smlal by element), into four int32
// vectors per half. The first tap starts the sums (smull), so they need no zeroing.
template <bool First, int Hi>
inline void vertical_tap(const uint8_t* row, int16x4_t c, int32x4_t (&h)[4], int32x4_t (&l)[4]) {
  const uint8x16_t b = vld1q_u8(row);
  const int16x8_t a0 = vreinterpretq_s16_u16(vmovl_u8(vget_low_u8(b)));
  const int16x8_t a1 = vreinterpretq_s16_u16(vmovl_u8(vget_high_u8(b)));
  if constexpr (First) {
    h[0] = vmull_lane_s16(vget_low_s16(a0), c, Hi);
    h[1] = mull_high_lane<Hi>(a0, c);
    h[2] = vmull_lane_s16(vget_low_s16(a1), c, Hi);
    h[3] = mull_high_lane<Hi>(a1, c);
    l[0] = vmull_lane_s16(vget_low_s16(a0), c, Hi + 1);
    l[1] = mull_high_lane<Hi + 1>(a0, c);
    l[2] = vmull_lane_s16(vget_low_s16(a1), c, Hi + 1);
    l[3] = mull_high_lane<Hi + 1>(a1, c);
  } else {
    h[0] = vmlal_lane_s16(h[0], vget_low_s16(a0), c, Hi);
    h[1] = mlal_high_lane<Hi>(h[1], a0, c);
    h[2] = vmlal_lane_s16(h[2], vget_low_s16(a1), c, Hi);
    h[3] = mlal_high_lane<Hi>(h[3], a1, c);
    l[0] = vmlal_lane_s16(l[0], vget_low_s16(a0), c, Hi + 1);
    l[1] = mlal_high_lane<Hi + 1>(l[1], a0, c);
    l[2] = vmlal_lane_s16(l[2], vget_low_s16(a1), c, Hi + 1);
    l[3] = mlal_high_lane<Hi + 1>(l[3], a1, c);
  }
}

inline void store_vertical16(uint8_t* out, const int32x4_t (&h)[4], const int32x4_t (&l)[4]) {
  vst1q_u8(out, vcombine_u8(round_narrow8<kHalvesShift>(fold_halves(h[0], l[0]), fold_halves(h[1], l[1])),
                            round_narrow8<kHalvesShift>(fold_halves(h[2], l[2]), fold_halves(h[3], l[3]))));
}

// Blocks of 16 values a loop iteration of vertical_unrolled: aarch64's 32 registers hold two
// blocks' sums, so an in-order core (the A55) has the second block's work to issue while the
// first's sums finish (llvm-mca, 4 taps: 60 -> 49 cycles per 16 values); armhf's 16 hold one.
#if defined(__aarch64__)
constexpr size_t kVerticalBlocks = 2;
#else
constexpr size_t kVerticalBlocks = 1;
#endif

// The vertical pass for a fixed tap count (sizeof...(I)): the row pointers and coefficient halves
// stay in registers across the row, and the taps are unrolled (by-element lanes are immediates).
// Returns the values done (multiples of 16).
template <size_t... I>
size_t vertical_unrolled(const uint8_t* const* rows, const int16_t* halves, size_t n, uint8_t* out,
                         std::index_sequence<I...>) {
  const uint8_t* const r[] = {rows[I]...};
  int16x4_t c[(sizeof...(I) + 1) / 2];  // (hi, lo) of taps 2j and 2j + 1
  for (size_t j = 0; j < (sizeof...(I) + 1) / 2; ++j) c[j] = vld1_s16(halves + 4 * j);
  size_t x = 0;
  for (; x + 16 * kVerticalBlocks <= n; x += 16 * kVerticalBlocks) {
    int32x4_t h[kVerticalBlocks][4], l[kVerticalBlocks][4];
    for (size_t b = 0; b < kVerticalBlocks; ++b) {
      (vertical_tap<I == 0, 2 * (I % 2)>(r[I] + x + 16 * b, c[I / 2], h[b], l[b]), ...);
    }
    for (size_t b = 0; b < kVerticalBlocks; ++b) store_vertical16(out + x + 16 * b, h[b], l[b]);
  }
  for (; x + 16 <= n; x += 16) {  // aarch64's last 16 values, if any
    int32x4_t h[4], l[4];
    (vertical_tap<I == 0, 2 * (I % 2)>(r[I] + x, c[I / 2], h, l), ...);
    store_vertical16(out + x, h, l);
  }
  return x;
}

// The wide pass's lane of 4 outputs over the pairs (WideTablesView's halves): per output its
// window's 16-tap chunks widened to int16 and multiplied by the halves (smlal) into 4 lanes of high
// and 4 of low sums, which two rounds of pairwise adds gather; then fold_halves, as the pairs pass.
// Chunks: t.chunks as a constant, or 0 (with_pairs).
template <int32_t Chunks>
struct WidePairsLane {
  static constexpr int kShift = kHalvesShift;
  static int32x4_t sums(const uint8_t* p, const WideTablesView& t, size_t x) {
    const size_t chunks = Chunks > 0 ? Chunks : t.chunks;
    int32x4_t h[4], l[4];
    for (size_t o = 0; o < 4; ++o) {
      h[o] = l[o] = vdupq_n_s32(0);
      for (size_t g = 0; g < chunks; ++g) {
        const uint8x16_t px = vld1q_u8(p + t.first[x + o] + 16 * g);
        const int16x8_t a = vreinterpretq_s16_u16(vmovl_u8(vget_low_u8(px)));
        const int16x8_t b = vreinterpretq_s16_u16(vmovl_u8(vget_high_u8(px)));
        const int16_t* k = &t.halves[((x + o) * chunks + g) * 32];
        const int16x8_t h0 = vld1q_s16(k), h1 = vld1q_s16(k + 8), l0 = vld1q_s16(k + 16), l1 = vld1q_s16(k + 24);
        h[o] = mlal_high(vmlal_s16(h[o], vget_low_s16(a), vget_low_s16(h0)), a, h0);
        h[o] = mlal_high(vmlal_s16(h[o], vget_low_s16(b), vget_low_s16(h1)), b, h1);
        l[o] = mlal_high(vmlal_s16(l[o], vget_low_s16(a), vget_low_s16(l0)), a, l0);
        l[o] = mlal_high(vmlal_s16(l[o], vget_low_s16(b), vget_low_s16(l1)), b, l1);
      }
    }
    return fold_halves(add_pairs(add_pairs(h[0], h[1]), add_pairs(h[2], h[3])),
                       add_pairs(add_pairs(l[0], l[1]), add_pairs(l[2], l[3])));
  }
};

}  // namespace

void pil_horizontal_wide_neon(const uint8_t* planes, size_t stride, const WideTablesView& t, size_t n, uint8_t* dst) {
  with_pairs(t.chunks, [&](auto c) { wide_blocks_neon<WidePairsLane<decltype(c)::value>>(planes, stride, t, n, dst); });
}

void pil_horizontal_pairs_neon(const uint8_t* planes, size_t stride, const TapTablesView& t,
                               const int32_t* first, const int32_t* k8, size_t c0, size_t c1,
                               uint8_t* dst) {
  static_assert(kPilKernelTaps == 8, "tables exist for at most 8 taps: 1 to 4 pairs");
  switch (t.pairs) {  // at least 1: every output has a tap
    case 1: return horizontal_blocks_neon<PairsLane<1>>(planes, stride, t, first, k8, c0, c1, dst);
    case 2: return horizontal_blocks_neon<PairsLane<2>>(planes, stride, t, first, k8, c0, c1, dst);
    case 3: return horizontal_blocks_neon<PairsLane<3>>(planes, stride, t, first, k8, c0, c1, dst);
    default: return horizontal_blocks_neon<PairsLane<4>>(planes, stride, t, first, k8, c0, c1, dst);
  }
}


// 16 output values at a time. Tap counts up to 8 (every upscale and downscales below about 2.7x
// with bicubic: camera frames into a VLM's processor) run unrolled, with their coefficients in
// registers (5 taps: 11 instructions a tap instead of 15); longer windows loop over the taps,
// each tap's halves one 8-byte load.
void pil_vertical_neon(const uint8_t* const* rows, const int32_t* k, int32_t count, size_t n,
                       uint8_t* out) {
  int16_t halves[2 * kPilMaxTaps + 2];  // (hi, lo) per tap, and the last load's 2 spare lanes
  for (int32_t i = 0; i < count; ++i) {
    halves[2 * i] = pil_halves(k[i]).hi;
    halves[2 * i + 1] = pil_halves(k[i]).lo;
  }
  halves[2 * count] = halves[2 * count + 1] = 0;
  size_t x = 0;
  switch (count) {
    case 1: x = vertical_unrolled(rows, halves, n, out, std::make_index_sequence<1>{}); break;
    case 2: x = vertical_unrolled(rows, halves, n, out, std::make_index_sequence<2>{}); break;
    case 3: x = vertical_unrolled(rows, halves, n, out, std::make_index_sequence<3>{}); break;
    case 4: x = vertical_unrolled(rows, halves, n, out, std::make_index_sequence<4>{}); break;
    case 5: x = vertical_unrolled(rows, halves, n, out, std::make_index_sequence<5>{}); break;
    case 6: x = vertical_unrolled(rows, halves, n, out, std::make_index_sequence<6>{}); break;
    case 7: x = vertical_unrolled(rows, halves, n, out, std::make_index_sequence<7>{}); break;
    case 8: x = vertical_unrolled(rows, halves, n, out, std::make_index_sequence<8>{}); break;
    default:
      for (; x + 16 <= n; x += 16) {
        int32x4_t h[4], l[4];
        vertical_tap<true, 0>(rows[0] + x, vld1_s16(halves), h, l);
        for (int32_t i = 1; i < count; ++i) vertical_tap<false, 0>(rows[i] + x, vld1_s16(halves + 2 * i), h, l);
        store_vertical16(out + x, h, l);
      }
  }
  pil_vertical_from_portable(rows, k, count, x, n, out);
}

}  // namespace patchfuse
