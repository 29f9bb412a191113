// The frames path's per-ISA loops (resize passes, plane splits, gather rows) and the one table
// that knows which forms exist (dispatch.cc). Each form lives in frames/kernels/<family>_<form>.cc,
// compiled with its own ISA flags (runtime/CMakeLists.txt), and the session takes the table's row
// for its SIMD level once, at create; nothing asks the CPU per row.
//
// Rules for the ISA files, so that no code built with AVX-512 or dotprod flags can be picked by
// the linker for a caller on a smaller CPU (an inline or template function outside an anonymous
// namespace is a COMDAT copy the linker may keep from any translation unit): they include only
// intrinsics headers, <cstddef>, <cstdint>, <cstring> and headers of this folder; everything but
// the entry points below sits in an anonymous namespace; helpers in shared headers are static or
// in anonymous namespaces too. FrameKernels.OnlyEntryPointsAreGlobal (tests/CMakeLists.txt) runs nm
// on every form's objects and fails on any other global or weak symbol.
#pragma once

#include <cstddef>
#include <cstdint>

#include "runtime/core/cpu_features.h"

namespace patchfuse {

// What the GEMM gets for a pixel: (u8 - 128) / 256, in [-0.5, 0.5). Exact in f32, bf16 and f16
// (at most 8 significant bits, a power-of-two scale), centred so partial sums stay small, and of
// unit scale so the folded weights (W * rescale / std * 256) stay in f16's normal range. Raw
// 0..255 inputs lost up to 30% of max |ref| in XNNPACK's f16 accumulation, and centred pixels with
// weights scaled by 1/255/std (subnormal in f16) still up to 18% (both seen under qemu-aarch64).
constexpr int kPixelCentre = 128;
constexpr double kPixelScale = 1.0 / 256;

// Pillow's fixed point: coefficients with 22 fractional bits (Resample.c's PRECISION_BITS).
constexpr int kPilPrecisionBits = 32 - 8 - 2;
// The most taps the horizontal kernels take (8 coefficients an output); wider windows run the
// wide pass.
constexpr size_t kPilKernelTaps = 8;
// The most taps the wide and vertical passes take: downscales up to 63x bicubic (a 12 MP photo
// to 224 is 18x, 73 taps); wider windows run the Resizer's scalar passes. The bound is the pairs'
// (NEON's fold_halves shifts a sum of hi halves, which must not wrap): 256 * 255 * 2^15 < 2^31.
constexpr size_t kPilMaxTaps = 256;
// The bytes a horizontal kernel may read past a source plane's last pixel: a 64-byte load at any
// pixel (the VBMI forms' windows), or a window's 16-byte chunks from its first pixel (at most
// kPilMaxTaps bytes).
constexpr size_t kPlaneSlack = kPilMaxTaps;

// Pillow's rounding clip of a fixed-point sum to a byte.
static inline uint8_t pil_clip8(int32_t v) {
  v >>= kPilPrecisionBits;
  return static_cast<uint8_t>(v < 0 ? 0 : v > 255 ? 255 : v);
}

// A coefficient as the quads' three signed bytes, k = d[0] + 256 * d[1] + 65536 * d[2] (d[0] and
// d[1] in -128..127, the rest in d[2]): false where d[2] does not fit a byte (|k| near 2^23).
static inline bool pil_digits(int32_t k, int8_t (&d)[3]) {
  for (int i = 0; i < 2; ++i) {
    const int32_t di = ((k + 128) & 255) - 128;
    d[i] = static_cast<int8_t>(di);
    k = (k - di) / 256;
  }
  d[2] = static_cast<int8_t>(k);
  return k >= -128 && k <= 127;
}

// A coefficient as the pairs' two int16 halves, k = 256 * hi + lo (hi signed, lo in 0..255): int16
// multiply-adds of pixels by them are exact for |k| < 2^23 (resize.cc's bound).
struct PilHalves {
  int16_t hi, lo;
};
static inline PilHalves pil_halves(int32_t k) { return {static_cast<int16_t>(k >> 8), static_cast<int16_t>(k & 255)}; }

// The horizontal kernels' tables (built by resize_tables.cc from the Resizer's coefficients), as
// plain pointers: per block of `block` outputs in lanes of 4, in one of two forms.
//  - pairs (AVX2, AVX-512, NEON): per pair of taps the byte shuffle (pshufb, tbl; vpermb with
//    VBMI) that places each output's two pixels as int16, and the pair's coefficients split as
//    k = 256 * hi + lo (hi signed, lo 0..255) so int16 multiply-adds are exact;
//  - quads (NEON with ARMv8.2's dot product, x86's AVX512-VNNI): per group of 4 taps the tbl
//    (vpshufb, vpermb) indices that place each output's 4 pixels in its int32 lane, and the
//    coefficients as three signed bytes, k = d0 + 256 * d1 + 65536 * d2 (pil_digits). vpdpbusd
//    multiplies the pixels as they are (unsigned); sdot, signed only, the pixels less 128, and
//    per output 128 * (its coefficients' sum), the bias, puts the 128 back.
struct TapTablesView {
  size_t block = 8;                      // outputs a block: 8 (AVX2, NEON) or 16 (AVX-512)
  const uint8_t* ok = nullptr;           // per block (the last padded): its windows fit the kernel
  size_t pairs = 0;
  const uint8_t* index = nullptr;        // per block and pair: 4 shuffle bytes an output
  const int16_t* hi = nullptr;           // per block and pair: 2 coefficient halves an output
  const int16_t* lo = nullptr;
  size_t groups = 0;
  const uint8_t* quad_index = nullptr;   // per block and group: 4 tbl indices an output
  const int8_t* digits = nullptr;        // per block, group and digit (d0, d1, d2): 4 bytes an output
  const int32_t* bias = nullptr;         // per output of a block: 128 * its coefficients' sum (sdot)
};

// The wide horizontal kernels' tables (resize_tables.cc's WideTables): windows of 9 to
// kPilMaxTaps taps.
// Outputs come in blocks of 16, the last padded (its extra outputs repeat the last's first pixel
// with zero coefficients); per output its first source pixel, and in one of three forms
// (WidePass):
//  - blocks (VBMI, where every block fits; groups > 0): one output a dword lane, its taps in
//    groups of 4 as TapTablesView's quads, from 2 or 4 windows of 64 bytes, each from its first
//    output's first pixel (outputs 0-7 and 8-15, or 0-3, 4-7, 8-11 and 12-15): per block the 64
//    vpermt2b indices of group 0 (output j's at 4j, counted from its window, 64 added in odd
//    windows; group g's are 4g more), and per block, group and digit the 16 outputs' 64 digit
//    bytes. A block fits where each output's taps end within 64 bytes of its window's start (two
//    windows: 720p or 1080p to 384; four: 1080p to 224);
//  - quads (VNNI, NEON's sdot), each output over its own window in chunks of 16 taps: per block,
//    group q (outputs 4L + q of the block for lanes L = 0..3), chunk and digit (d0, d1, d2:
//    pil_digits) the four outputs' 16 digit bytes, and per output the bias sdot needs
//    (TapTablesView's quads);
//  - pairs (AVX2, NEON), chunks as quads: per output and chunk its 16 coefficients' high halves,
//    then their low halves (k = 256 * hi + lo, as TapTablesView's pairs).
struct WideTablesView {
  size_t chunks = 0;                // quads, pairs: 16 taps each, 1 to kPilMaxTaps / 16
  size_t groups = 0;                // blocks: 4 taps each, 3 to 16 (0: another form)
  size_t windows = 0;               // blocks: 2 or 4 a block
  const int32_t* first = nullptr;   // per output (padded)
  const uint8_t* index = nullptr;   // blocks: per block 64 bytes
  const int8_t* digits = nullptr;   // blocks: per block, group and digit; quads: per block, group, chunk and digit: 64 bytes
  const int16_t* halves = nullptr;  // pairs: per output and chunk: 32 int16
  const int32_t* bias = nullptr;    // quads: per output (padded), 128 * its coefficients' sum
};

// The rows' function types; the entry points below are declared with them, so each signature is
// written once.
// The pil horizontal pass over outputs [c0, c1) of a source row given as R, G, B planes `stride`
// bytes apart (each with kPlaneSlack bytes of slack): first[c] is output c's first source pixel, k8 its
// kPilKernelTaps coefficients (zeros past its tap count). Writes (c1 - c0) RGB pixels to dst.
using PilHorizontal = void(const uint8_t* planes, size_t stride, const TapTablesView& t, const int32_t* first,
                           const int32_t* k8, size_t c0, size_t c1, uint8_t* dst);
// The same on two source rows at once, the second's planes following the first's (from planes +
// 3 * stride on), written to dst0 and dst1: each block's tables serve both.
using PilHorizontal2 = void(const uint8_t* planes, size_t stride, const TapTablesView& t, const int32_t* first,
                            const int32_t* k8, size_t c0, size_t c1, uint8_t* dst0, uint8_t* dst1);
// The same straight from interleaved 3-byte rows, no planes between: `rows` (1 or 2) source rows
// of `width` pixels from src on, `stride` bytes apart, byte `red` of a pixel its red (0: RGB, 2:
// BGR), written to dst[r] as RGB. It reads no byte past a row's 3 * width (a caller's frame has no
// slack), and may prefetch the `rows` rows that follow (the caller's next call). Its tables are
// build_tap_tables' at 3 bytes a pixel.
using PilHorizontalRgb = void(const uint8_t* src, size_t stride, size_t rows, size_t width, size_t red,
                              const TapTablesView& t, const int32_t* first, const int32_t* k8, size_t c0, size_t c1,
                              uint8_t* const* dst);
// Outputs [0, n) of the kept columns over windows of 9 to kPilMaxTaps taps (WideTablesView), the planes as
// for PilHorizontal (kPlaneSlack covers a window's last chunk).
using PilHorizontalWide = void(const uint8_t* planes, size_t stride, const WideTablesView& t, size_t n, uint8_t* dst);
// The same without tables, 8 taps an output, one output at a time: a form's tail, and its blocks
// whose windows do not fit a vector.
using PilHorizontalK8 = void(const uint8_t* planes, size_t stride, const int32_t* first, const int32_t* k8, size_t c0,
                             size_t c1, uint8_t* dst);
// The pil vertical pass: out[x] from rows[0..count)[x] and coefficients k, x < n;
// 1 <= count <= kPilMaxTaps.
using PilVertical = void(const uint8_t* const* rows, const int32_t* k, int32_t count, size_t n, uint8_t* out);
// 3 (rgb) or 4 (rgba, alpha dropped) interleaved bytes a pixel -> bytes 0, 1, 2 to p0, p1, p2.
using Split = void(const uint8_t* src, size_t width, uint8_t* p0, uint8_t* p1, uint8_t* p2);
// One merge row `mh` of a gather block (gather.h): the channel planes of its P image rows per time
// step (`width` bytes a row, 16 bytes of slack), patch size P, merge M, the grid's width in
// patches, channels, time steps, and k values from one row's start to the next (gather_rows' pitch).
struct MergeRow {
  const uint8_t* planes;
  size_t width;
  int64_t P, M, grid_w, channels, tps, mh, k;
};
// Its rows, written from `out` on as f32 or bf16 bits (or, for int8 kernels, the bytes themselves).
template <class T>
using EmitRows = void(const MergeRow& row, T* out);
// The same merge row straight from the image's interleaved RGB rows, with no planes between:
// rows[t * P + y] is time step t's image row y of the merge row (pixel 0 of the row); P <= 16.
struct RgbMergeRow {
  const uint8_t* const* rows;
  int64_t P, M, grid_w, tps, mh, k;
};
template <class T>
using EmitRgbRows = void(const RgbMergeRow& row, T* out);
using PilHorizontalFn = PilHorizontal*;
using PilHorizontal2Fn = PilHorizontal2*;
using PilHorizontalRgbFn = PilHorizontalRgb*;
using PilHorizontalWideFn = PilHorizontalWide*;
using PilVerticalFn = PilVertical*;
using SplitFn = Split*;
using EmitRowsF32Fn = EmitRows<float>*;
using EmitRowsBf16Fn = EmitRows<uint16_t>*;
using EmitRgbRowsF32Fn = EmitRgbRows<float>*;
using EmitRgbRowsBf16Fn = EmitRgbRows<uint16_t>*;
using EmitRgbRowsU8Fn = EmitRgbRows<uint8_t>*;

// A form's pass for windows of 9 to kPilMaxTaps taps and its tables' form (WideTablesView): quads (VNNI's
// vpdpbusd) or pairs, and blocks first where they fit (VBMI: its pass runs quads' tables too).
struct WidePass {
  PilHorizontalWideFn run = nullptr;
  bool quads = false;
  bool blocks = false;
};
// A form's name is the session's (pf_session_info.frame_kernels). The portable resize form has no
// rows: the Resizer's own scalar passes (any tap count, on the interleaved row) are portable.
struct ResizeForm {
  const char* name;
  size_t block;   // TapTablesView.block
  size_t window;  // outputs that share one source window of 4 bytes an output: 4 (a 16-byte lane) or 16 (vpermb's 64)
  bool quads;     // TapTablesView's form: quads (sdot, vpdpbusd) or pairs
  PilHorizontalFn horizontal;
  PilVerticalFn vertical;
  PilHorizontal2Fn horizontal2 = nullptr;  // two rows a call, where the form has it (the Resizer pairs rows)
  WidePass wide = {};                      // windows of 9 to kPilMaxTaps taps, where the form has them
  // From RGB and BGR rows with no plane split, where the form has it and every block fits (the
  // Resizer's choice at create: resize.cc).
  PilHorizontalRgbFn horizontal_rgb = nullptr;
};
struct PlanesForm {
  const char* name;
  SplitFn rgb, rgba;
};
// A gather form writes rows from planes (f32, bf16; int8's are copies), and may write them from
// the interleaved RGB rows themselves (rgb_*, null where the form has none), which saves the plane
// split of every row: the gather takes those for 3 channels and patch sizes up to 16.
struct GatherForm {
  const char* name;
  EmitRowsF32Fn f32;
  EmitRowsBf16Fn bf16;
  EmitRgbRowsF32Fn rgb_f32 = nullptr;
  EmitRgbRowsBf16Fn rgb_bf16 = nullptr;
  EmitRgbRowsU8Fn rgb_u8 = nullptr;
};
struct FrameKernels {
  SimdLevel level;
  ResizeForm resize;
  PlanesForm planes;
  GatherForm gather;
};

// The forms a level runs (dispatch.cc). The caller makes sure the CPU has the level: simd_level()
// (the CPU's, capped by PATCHFUSE_MAX_CPU_ISA) or one below it.
const FrameKernels& frame_kernels(SimdLevel level);
// frame_kernels(simd_level()): what sessions, tools and benches run.
inline const FrameKernels& best_frame_kernels() { return frame_kernels(simd_level()); }

// The entry points, by form. Portable: the oracles, the fallbacks, and the vector forms' tails
// (pil_vertical_from_portable: values [x, n) of the vertical pass). int8 kernels take the pixels
// as they are: their rows are copies, one form everywhere (emit_rows_u8_portable).
PilHorizontalK8 pil_horizontal_k8_portable;
// Outputs [c0, c1) of an interleaved 3-byte row of `width` pixels (PilHorizontalRgb's src and
// red): output c sums `taps` coefficients from k + c * taps over the pixels from first[c] on,
// none past the row (Pillow's windows end within it; their coefficients past a window are zeros).
// The Resizer's scalar pass, and the RGB forms' blocks whose windows do not fit a vector.
void pil_horizontal_rgb_portable(const uint8_t* src, size_t width, size_t red, const int32_t* first, const int32_t* k,
                                 size_t taps, size_t c0, size_t c1, uint8_t* dst);
void pil_vertical_from_portable(const uint8_t* const* rows, const int32_t* k, int32_t count, size_t x, size_t n,
                                uint8_t* out);
Split split_rgb_portable, split_rgba_portable;
EmitRows<float> emit_rows_f32_portable;
EmitRows<uint16_t> emit_rows_bf16_portable;
EmitRows<uint8_t> emit_rows_u8_portable;
// x86-64 (declared everywhere; only dispatch.cc names them, under its architecture's #if).
PilHorizontalK8 pil_horizontal_k8_avx2;
PilHorizontal pil_horizontal_pairs_avx2, pil_horizontal_pairs_avx512, pil_horizontal_quads_avx512_vnni,
    pil_horizontal_quads_avx512_vbmi;
PilHorizontal2 pil_horizontal2_pairs_avx512, pil_horizontal2_quads_avx512_vnni, pil_horizontal2_quads_avx512_vbmi;
PilHorizontalRgb pil_horizontal_rgb_quads_avx512_vbmi;
PilVertical pil_vertical_avx2, pil_vertical_avx512, pil_vertical_avx512_vnni;
PilHorizontalWide pil_horizontal_wide_avx2, pil_horizontal_wide_avx512_vnni, pil_horizontal_wide_avx512_vbmi;
Split split_rgb_avx2, split_rgba_avx2, split_rgb_avx512_vbmi, split_rgba_avx512_vbmi;
EmitRows<float> emit_rows_f32_avx2;
EmitRows<uint16_t> emit_rows_bf16_avx2;
EmitRgbRows<float> emit_rgb_rows_f32_avx512_vbmi;
EmitRgbRows<uint16_t> emit_rgb_rows_bf16_avx512_vbmi;
EmitRgbRows<uint8_t> emit_rgb_rows_u8_avx512_vbmi;
// ARM: aarch64 and armhf; the dot-product form on aarch64 only.
PilHorizontal pil_horizontal_pairs_neon, pil_horizontal_dot_neon_dotprod;
PilHorizontalWide pil_horizontal_wide_neon, pil_horizontal_wide_neon_dotprod;
PilVertical pil_vertical_neon;
Split split_rgb_neon, split_rgba_neon;
EmitRows<float> emit_rows_f32_neon;
EmitRows<uint16_t> emit_rows_bf16_neon;

}  // namespace patchfuse
