// The SIMD level of the frames path's hand-vectorized loops (frames/kernels/: the resize, plane
// splits and gather), read from the CPU once per process. The session takes its kernels' table row
// for this level at create (frames/kernels/kernels.h). A plain check rather than target_clones: an
// ifunc resolver runs before ThreadSanitizer is set up and crashed the TSan build.
//
// PATCHFUSE_MAX_CPU_ISA=<a level's name> (below: baseline|avx2|avx512|avx512_vnni|avx512_vbmi on
// x86-64, baseline|neon|neon_dotprod on ARM) caps what these loops use, read once per process, as
// ONEDNN_MAX_CPU_ISA caps oneDNN; baseline is the portable C++.
// (The tests run every form the CPU has in one process: tests/frame_kernels_test.cc.)
// Another value, or none, leaves them uncapped, as oneDNN does with a value it does not know.
#pragma once

namespace patchfuse {

#if defined(__x86_64__)
// kAvx512: AVX-512 F, BW and VL; kAvx512Vnni: and AVX512-VNNI; kAvx512Vbmi: and AVX512-VBMI too
// (Ice Lake, Sapphire Rapids, Zen 4 and later; Cascade Lake stops at kAvx512Vnni).
enum class SimdLevel { kBaseline = 0, kAvx2 = 1, kAvx512 = 2, kAvx512Vnni = 3, kAvx512Vbmi = 4 };
constexpr SimdLevel kSimdLevels[] = {SimdLevel::kBaseline, SimdLevel::kAvx2, SimdLevel::kAvx512,
                                     SimdLevel::kAvx512Vnni, SimdLevel::kAvx512Vbmi};
#elif defined(__aarch64__) || defined(__arm__)
// kNeon: Advanced SIMD. Always there on aarch64; Debian's armhf baseline (ARMv7 with VFPv3-D16)
// has none, so there it is what the CPU reports at run time (AT_HWCAP).
// kNeonDotprod: and ARMv8.2's dot product (sdot), which the A55, A76 and later cores have;
// aarch64 only (AT_HWCAP's ASIMDDP): armhf's kernels stay plain NEON.
enum class SimdLevel { kBaseline = 0, kNeon = 1, kNeonDotprod = 2 };
#if defined(__aarch64__)
constexpr SimdLevel kSimdLevels[] = {SimdLevel::kBaseline, SimdLevel::kNeon, SimdLevel::kNeonDotprod};
#else
constexpr SimdLevel kSimdLevels[] = {SimdLevel::kBaseline, SimdLevel::kNeon};
#endif
#endif
// kSimdLevels: this architecture's levels, lowest first (the tests walk them).

// The level this process's kernels use: the CPU's, capped by PATCHFUSE_MAX_CPU_ISA (read once).
SimdLevel simd_level();
// "baseline", "avx2", "avx512", "avx512_vnni", "avx512_vbmi", "neon", "neon_dotprod": how the
// session info names a kernel, and PATCHFUSE_MAX_CPU_ISA's values.
const char* simd_level_name(SimdLevel level);

}  // namespace patchfuse
