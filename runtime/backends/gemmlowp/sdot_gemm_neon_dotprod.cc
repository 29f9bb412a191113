// The SDOT int8 GEMM (sdot_gemm.h). One tile is 4 rows x 16 outputs: 16 int32x4 sums in registers,
// 4 rows of 16 pixels and 4 vectors of weights (4 outputs x 4 k each) per step of 4 k, 16 SDOT (by
// element) per step. Written out register by register: with arrays of vectors GCC 12 kept the
// pixels on the stack. Built with -mtune=cortex-a76, whose schedule llvm-mca prices best on both
// the A55 and the A76 models (78 and 39 cycles per 64 SDOT, against 156 and 46 tuned for the A55).
#include <arm_neon.h>

#include <cstring>

#include "runtime/backends/gemmlowp/sdot_gemm.h"

namespace patchfuse {
namespace {

constexpr int kRows = 4, kOutputs = 16, kDepth = 16;  // a tile, and the bytes of k per loop step

int round_up(int v, int m) { return (v + m - 1) / m * m; }

// Sums of 4 rows (a[i]: `depth` readable bytes each, depth a multiple of 16) by one block of 16
// outputs, started from `start`, stored to out[i] (nullptr: a row past the end), `count` outputs.
void sdot_tile(const int8_t* b, const uint8_t* const a[kRows], int depth, const int32_t* start,
               int32_t* const out[kRows], int count) {
  const int8x16_t flip = vdupq_n_s8(-128);
  int32x4_t c00 = vld1q_s32(start), c01 = vld1q_s32(start + 4), c02 = vld1q_s32(start + 8), c03 = vld1q_s32(start + 12);
  int32x4_t c10 = c00, c11 = c01, c12 = c02, c13 = c03;
  int32x4_t c20 = c00, c21 = c01, c22 = c02, c23 = c03;
  int32x4_t c30 = c00, c31 = c01, c32 = c02, c33 = c03;
  const uint8_t *a0 = a[0], *a1 = a[1], *a2 = a[2], *a3 = a[3];
  for (int kk = 0; kk < depth; kk += kDepth) {
    const int8x16_t x0 = veorq_s8(vreinterpretq_s8_u8(vld1q_u8(a0 + kk)), flip);
    const int8x16_t x1 = veorq_s8(vreinterpretq_s8_u8(vld1q_u8(a1 + kk)), flip);
    const int8x16_t x2 = veorq_s8(vreinterpretq_s8_u8(vld1q_u8(a2 + kk)), flip);
    const int8x16_t x3 = veorq_s8(vreinterpretq_s8_u8(vld1q_u8(a3 + kk)), flip);
#define PF_SDOT_STEP(L)                                                                                   \
  {                                                                                                       \
    const int8x16_t b0 = vld1q_s8(b), b1 = vld1q_s8(b + 16), b2 = vld1q_s8(b + 32), b3 = vld1q_s8(b + 48); \
    b += 64;                                                                                              \
    c00 = vdotq_laneq_s32(c00, b0, x0, L);                                                                \
    c01 = vdotq_laneq_s32(c01, b1, x0, L);                                                                \
    c02 = vdotq_laneq_s32(c02, b2, x0, L);                                                                \
    c03 = vdotq_laneq_s32(c03, b3, x0, L);                                                                \
    c10 = vdotq_laneq_s32(c10, b0, x1, L);                                                                \
    c11 = vdotq_laneq_s32(c11, b1, x1, L);                                                                \
    c12 = vdotq_laneq_s32(c12, b2, x1, L);                                                                \
    c13 = vdotq_laneq_s32(c13, b3, x1, L);                                                                \
    c20 = vdotq_laneq_s32(c20, b0, x2, L);                                                                \
    c21 = vdotq_laneq_s32(c21, b1, x2, L);                                                                \
    c22 = vdotq_laneq_s32(c22, b2, x2, L);                                                                \
    c23 = vdotq_laneq_s32(c23, b3, x2, L);                                                                \
    c30 = vdotq_laneq_s32(c30, b0, x3, L);                                                                \
    c31 = vdotq_laneq_s32(c31, b1, x3, L);                                                                \
    c32 = vdotq_laneq_s32(c32, b2, x3, L);                                                                \
    c33 = vdotq_laneq_s32(c33, b3, x3, L);                                                                \
  }
    PF_SDOT_STEP(0)
    PF_SDOT_STEP(1)
    PF_SDOT_STEP(2)
    PF_SDOT_STEP(3)
#undef PF_SDOT_STEP
  }
  int32_t* const o0 = out[0];
  int32_t* const o1 = out[1];
  int32_t* const o2 = out[2];
  int32_t* const o3 = out[3];
  if (count == kOutputs && o3 != nullptr) {  // the common case: a whole tile, stored in place
    vst1q_s32(o0, c00), vst1q_s32(o0 + 4, c01), vst1q_s32(o0 + 8, c02), vst1q_s32(o0 + 12, c03);
    vst1q_s32(o1, c10), vst1q_s32(o1 + 4, c11), vst1q_s32(o1 + 8, c12), vst1q_s32(o1 + 12, c13);
    vst1q_s32(o2, c20), vst1q_s32(o2 + 4, c21), vst1q_s32(o2 + 8, c22), vst1q_s32(o2 + 12, c23);
    vst1q_s32(o3, c30), vst1q_s32(o3 + 4, c31), vst1q_s32(o3 + 8, c32), vst1q_s32(o3 + 12, c33);
    return;
  }
  int32_t sums[kRows][kOutputs];
  vst1q_s32(sums[0], c00), vst1q_s32(sums[0] + 4, c01), vst1q_s32(sums[0] + 8, c02), vst1q_s32(sums[0] + 12, c03);
  vst1q_s32(sums[1], c10), vst1q_s32(sums[1] + 4, c11), vst1q_s32(sums[1] + 8, c12), vst1q_s32(sums[1] + 12, c13);
  vst1q_s32(sums[2], c20), vst1q_s32(sums[2] + 4, c21), vst1q_s32(sums[2] + 8, c22), vst1q_s32(sums[2] + 12, c23);
  vst1q_s32(sums[3], c30), vst1q_s32(sums[3] + 4, c31), vst1q_s32(sums[3] + 8, c32), vst1q_s32(sums[3] + 12, c33);
  for (int i = 0; i < kRows; ++i) {
    if (out[i] != nullptr) std::memcpy(out[i], sums[i], sizeof(int32_t) * static_cast<size_t>(count));
  }
}

}  // namespace

size_t sdot_packed_bytes_neon_dotprod(int outputs, int k) {
  return static_cast<size_t>(round_up(outputs, kOutputs)) * static_cast<size_t>(round_up(k, kDepth));
}

void sdot_pack_neon_dotprod(const int8_t* q, int outputs, int k, int8_t* packed, int32_t* start) {
  const int depth = round_up(k, kDepth), blocks = round_up(outputs, kOutputs) / kOutputs;
  std::memset(packed, 0, sdot_packed_bytes_neon_dotprod(outputs, k));
  std::memset(start, 0, sizeof(int32_t) * static_cast<size_t>(blocks * kOutputs));
  for (int o = 0; o < outputs; ++o) {
    int32_t sum = 0;
    int8_t* block = packed + static_cast<size_t>(o / kOutputs) * static_cast<size_t>(depth) * kOutputs;
    for (int j = 0; j < k; ++j) {
      const int8_t w = q[static_cast<size_t>(o) * static_cast<size_t>(k) + static_cast<size_t>(j)];
      block[(j / 4) * (kOutputs * 4) + (o % kOutputs) * 4 + j % 4] = w;
      sum += w;
    }
    start[o] = 128 * sum;
  }
}

void sdot_gemm_neon_dotprod(const int8_t* packed, const int32_t* start, int outputs, int k, const uint8_t* rows, int n,
                            int32_t* acc) {
  const int depth = round_up(k, kDepth);
  for (int r = 0; r < n; r += kRows) {
    const int count = n - r < kRows ? n - r : kRows;
    const uint8_t* a[kRows];  // a partial tile repeats its last row
    for (int i = 0; i < kRows; ++i) a[i] = rows + static_cast<size_t>(r + (i < count ? i : count - 1)) * static_cast<size_t>(k);
    for (int o = 0; o < outputs; o += kOutputs) {
      int32_t* out[kRows];
      for (int i = 0; i < kRows; ++i) out[i] = i < count ? acc + static_cast<size_t>(r + i) * static_cast<size_t>(outputs) + o : nullptr;
      sdot_tile(packed + static_cast<size_t>(o) * static_cast<size_t>(depth), a, depth, start + o, out,
                outputs - o < kOutputs ? outputs - o : kOutputs);
    }
  }
}

}  // namespace patchfuse
