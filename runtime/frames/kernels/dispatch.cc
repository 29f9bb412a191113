// The one table of the frames path's kernel forms: which resize, planes and gather form each SIMD
// level runs (as oneDNN's cpu/*_list.cpp and XNNPACK's configs are the only places that know the
// ISA files). A new form is its files, a row here and a line in runtime/CMakeLists.txt.
#include "runtime/frames/kernels/kernels.h"

namespace patchfuse {
namespace {

constexpr ResizeForm kPortableResize{"portable", 8, 4, false, nullptr, nullptr};
constexpr PlanesForm kPortablePlanes{"portable", split_rgb_portable, split_rgba_portable};
constexpr GatherForm kPortableGather{"portable", emit_rows_f32_portable, emit_rows_bf16_portable};
constexpr FrameKernels kBaseline{SimdLevel::kBaseline, kPortableResize, kPortablePlanes, kPortableGather};

#if defined(__x86_64__)
constexpr PlanesForm kAvx2Planes{"avx2", split_rgb_avx2, split_rgba_avx2};
constexpr GatherForm kAvx2Gather{"avx2", emit_rows_f32_avx2, emit_rows_bf16_avx2};
constexpr FrameKernels kAvx2{
    SimdLevel::kAvx2, {"avx2", 8, 4, false, pil_horizontal_pairs_avx2, pil_vertical_avx2, nullptr, {pil_horizontal_wide_avx2, false}},
    kAvx2Planes, kAvx2Gather};
// AVX-512 adds resize forms (with 32 registers, a horizontal pass on two rows at once), and with
// VBMI a plane split (vpermb); the gather rows from planes are bound by their loads.
constexpr FrameKernels kAvx512{
    SimdLevel::kAvx512,
    {"avx512", 16, 4, false, pil_horizontal_pairs_avx512, pil_vertical_avx512, pil_horizontal2_pairs_avx512,
     {pil_horizontal_wide_avx2, false}},
    kAvx2Planes, kAvx2Gather};
// VNNI's vpdpbusd takes the taps as quads, and windows wider than 8 taps (downscales beyond
// about 2x: a camera frame to SigLIP's 384 or CLIP's 224) one output at a time.
constexpr FrameKernels kAvx512Vnni{
    SimdLevel::kAvx512Vnni,
    {"avx512_vnni", 16, 4, true, pil_horizontal_quads_avx512_vnni, pil_vertical_avx512_vnni,
     pil_horizontal2_quads_avx512_vnni, {pil_horizontal_wide_avx512_vnni, true}},
    kAvx2Planes, kAvx2Gather};
// VBMI changes the horizontal passes' loads (64-byte windows, placed by vpermb and vpermt2b), and
// with them resizes RGB and BGR rows with no plane split where a block's window fits 64 bytes;
// it also splits planes and gathers rows straight from RGB rows (a vpermb a patch row).
constexpr FrameKernels kAvx512Vbmi{
    SimdLevel::kAvx512Vbmi,
    {"avx512_vbmi", 16, 16, true, pil_horizontal_quads_avx512_vbmi, pil_vertical_avx512_vnni,
     pil_horizontal2_quads_avx512_vbmi, {pil_horizontal_wide_avx512_vbmi, true, true},
     pil_horizontal_rgb_quads_avx512_vbmi},
    {"avx512_vbmi", split_rgb_avx512_vbmi, split_rgba_avx512_vbmi},
    {"avx512_vbmi", emit_rows_f32_avx2, emit_rows_bf16_avx2, emit_rgb_rows_f32_avx512_vbmi,
     emit_rgb_rows_bf16_avx512_vbmi, emit_rgb_rows_u8_avx512_vbmi}};
#else
constexpr PlanesForm kNeonPlanes{"neon", split_rgb_neon, split_rgba_neon};
constexpr GatherForm kNeonGather{"neon", emit_rows_f32_neon, emit_rows_bf16_neon};
constexpr FrameKernels kNeon{
    SimdLevel::kNeon, {"neon", 8, 4, false, pil_horizontal_pairs_neon, pil_vertical_neon, nullptr, {pil_horizontal_wide_neon, false}},
    kNeonPlanes, kNeonGather};
#if defined(__aarch64__)
// The dot product changes the horizontal passes only (armhf's kernels stay plain NEON).
constexpr FrameKernels kNeonDotprod{
    SimdLevel::kNeonDotprod,
    {"neon_dotprod", 8, 4, true, pil_horizontal_dot_neon_dotprod, pil_vertical_neon, nullptr,
     {pil_horizontal_wide_neon_dotprod, true}},
    kNeonPlanes, kNeonGather};
#endif
#endif

}  // namespace

const FrameKernels& frame_kernels(SimdLevel level) {
  switch (level) {  // no default: -Wswitch names a level without a row
    case SimdLevel::kBaseline: return kBaseline;
#if defined(__x86_64__)
    case SimdLevel::kAvx2: return kAvx2;
    case SimdLevel::kAvx512: return kAvx512;
    case SimdLevel::kAvx512Vnni: return kAvx512Vnni;
    case SimdLevel::kAvx512Vbmi: return kAvx512Vbmi;
#else
    case SimdLevel::kNeon: return kNeon;
#if defined(__aarch64__)
    case SimdLevel::kNeonDotprod: return kNeonDotprod;
#else
    case SimdLevel::kNeonDotprod: return kNeon;  // not on armhf: simd_level() never says so there
#endif
#endif
  }
  return kBaseline;
}

}  // namespace patchfuse
