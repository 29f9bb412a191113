// The pil horizontal pass with ARMv8.2's dot product (aarch64 only; compiled with
// -march=armv8.2-a+dotprod): the quads of TapTablesView, on the A55, A76 and later cores.
#include "runtime/frames/kernels/resize_neon.h"

namespace patchfuse {
namespace {

// Three sums of digit products, S0 + 256 * S1 + 65536 * S2 (TapTablesView's quads), ready for Pillow's
// rounded shift, (sum + 2^21) >> 22, without forming the sum: A = S1 + floor(S0 / 256) and
// B = S2 + floor(A / 256) leave sum = 65536 * B + r with 0 <= r < 65536, so the result is
// floor((B + 32) / 64), a rounding shift of B by kDigitsShift. Every step is exact in int32
// (|S0| < 2^31: the tables bound the bias, resize_tables.cc).
constexpr int kDigitsShift = kPilPrecisionBits - 16;
inline int32x4_t fold_digits(int32x4_t s0, int32x4_t s1, int32x4_t s2) {
  return vsraq_n_s32(s2, vsraq_n_s32(s1, s0, 8), 8);
}

// A lane of the quads with ARMv8.2's sdot: per group of 4 taps one tbl places each output's 4
// pixels (less 128: eor) in its int32 lane, and three sdot multiply them by the coefficients'
// three signed bytes: a channel's 4 taps of 4 outputs take a tbl and three sdot where pairs took
// two tbl and eight smlal. The first digit's sums start from the bias, which adds the 128s back.
// Groups: the table's group count (1 or 2), unrolled.
template <size_t Groups>
struct DotLane {
  static constexpr int kShift = kDigitsShift;
  static void sums(const TapTablesView& t, size_t b, size_t lane, const uint8x16_t (&window)[3],
                   int32x4_t (&out)[3]) {
    int8x16_t w[3];
    for (size_t ch = 0; ch < 3; ++ch) w[ch] = vreinterpretq_s8_u8(veorq_u8(window[ch], vdupq_n_u8(0x80)));
    const int32x4_t bias = vld1q_s32(&t.bias[8 * b + 4 * lane]);
    int32x4_t s[3][3];  // per channel, per digit
    for (size_t ch = 0; ch < 3; ++ch) {
      s[ch][0] = bias;
      s[ch][1] = s[ch][2] = vdupq_n_s32(0);
    }
    for (size_t g = 0; g < Groups; ++g) {
      const size_t group = b * Groups + g;
      const uint8x16_t index = vld1q_u8(&t.quad_index[32 * group + 16 * lane]);
      int8x16_t digit[3];
      for (size_t i = 0; i < 3; ++i) digit[i] = vld1q_s8(&t.digits[32 * (3 * group + i) + 16 * lane]);
      for (size_t ch = 0; ch < 3; ++ch) {
        const int8x16_t px = vqtbl1q_s8(w[ch], index);
        for (size_t i = 0; i < 3; ++i) s[ch][i] = vdotq_s32(s[ch][i], px, digit[i]);
      }
    }
    for (size_t ch = 0; ch < 3; ++ch) out[ch] = fold_digits(s[ch][0], s[ch][1], s[ch][2]);
  }
};

// The wide pass's lane of 4 outputs over the quads (WideTablesView): per output its 16-tap chunks
// less 128 (eor) times the three digits (sdot), each digit's four lanes gathered by two rounds of
// pairwise adds, the first digit's sums from the bias; then fold_digits, as DotLane. Three sdot a
// chunk where pairs take eight smlal. Chunks: t.chunks as a constant, or 0 (with_pairs).
template <int32_t Chunks>
struct WideDotLane {
  static constexpr int kShift = kDigitsShift;
  static int32x4_t sums(const uint8_t* p, const WideTablesView& t, size_t x) {
    const size_t chunks = Chunks > 0 ? Chunks : t.chunks;
    int32x4_t s[3][4];  // per digit and output
    for (size_t o = 0; o < 4; ++o) {
      const size_t out = x + o;
      const int8_t* d = &t.digits[(4 * (out / 16) + out % 4) * chunks * 3 * 64 + 16 * (out % 16 / 4)];
      for (size_t i = 0; i < 3; ++i) s[i][o] = vdupq_n_s32(0);
      for (size_t g = 0; g < chunks; ++g) {
        const int8x16_t px = vreinterpretq_s8_u8(veorq_u8(vld1q_u8(p + t.first[out] + 16 * g), vdupq_n_u8(0x80)));
        for (size_t i = 0; i < 3; ++i) s[i][o] = vdotq_s32(s[i][o], px, vld1q_s8(d + (3 * g + i) * 64));
      }
    }
    int32x4_t digit[3];
    for (size_t i = 0; i < 3; ++i) digit[i] = add_pairs(add_pairs(s[i][0], s[i][1]), add_pairs(s[i][2], s[i][3]));
    return fold_digits(vaddq_s32(digit[0], vld1q_s32(&t.bias[x])), digit[1], digit[2]);
  }
};

}  // namespace

void pil_horizontal_wide_neon_dotprod(const uint8_t* planes, size_t stride, const WideTablesView& t, size_t n,
                                      uint8_t* dst) {
  with_pairs(t.chunks, [&](auto c) { wide_blocks_neon<WideDotLane<decltype(c)::value>>(planes, stride, t, n, dst); });
}

void pil_horizontal_dot_neon_dotprod(
    const uint8_t* planes, size_t stride, const TapTablesView& t, const int32_t* first, const int32_t* k8, size_t c0,
    size_t c1, uint8_t* dst) {
  static_assert(kPilKernelTaps == 8, "tables exist for at most 8 taps: 1 or 2 groups");
  if (t.groups == 1) return horizontal_blocks_neon<DotLane<1>>(planes, stride, t, first, k8, c0, c1, dst);
  horizontal_blocks_neon<DotLane<2>>(planes, stride, t, first, k8, c0, c1, dst);
}

}  // namespace patchfuse
