// Run-time CPU checks for the hand-vectorized loops (the frames gather, the resize). A plain
// check rather than target_clones: an ifunc resolver runs before ThreadSanitizer is set up and
// crashed the TSan build.
//
// PATCHFUSE_MAX_CPU_ISA=baseline|avx2|avx512 (x86-64) or baseline|neon (ARM) caps what these loops
// use, read once per process, as ONEDNN_MAX_CPU_ISA caps oneDNN: the tests run every kernel a
// bigger CPU has (tests/CMakeLists.txt); baseline is the portable C++.
// Another value, or none, leaves them uncapped, as oneDNN does with a value it does not know.
#pragma once

namespace patchfuse {

#if defined(__x86_64__)
// kAvx512: AVX-512 F, BW and VL; kAvx512Vnni: and AVX512-VNNI.
enum class SimdLevel { kBaseline = 0, kAvx2 = 1, kAvx512 = 2, kAvx512Vnni = 3 };
#elif defined(__aarch64__) || defined(__arm__)
// kNeon: Advanced SIMD. Always there on aarch64; Debian's armhf baseline (ARMv7 with VFPv3-D16)
// has none, so there it is what the CPU reports at run time (AT_HWCAP).
// kNeonDotprod: and ARMv8.2's dot product (sdot), which the A55, A76 and later cores have;
// aarch64 only (AT_HWCAP's ASIMDDP): armhf's kernels stay plain NEON.
enum class SimdLevel { kBaseline = 0, kNeon = 1, kNeonDotprod = 2 };
#endif

// The level this process's kernels use: the CPU's, capped by PATCHFUSE_MAX_CPU_ISA (read once).
SimdLevel simd_level();
// "baseline", "avx2", "avx512", "avx512_vnni", "neon", "neon_dotprod": how the session info names
// a kernel.
const char* simd_level_name(SimdLevel level);
// The form this CPU runs of a loop written for AVX2 (x86-64) and NEON (ARM): "avx2", "neon" or
// "portable" (the plane splits, the gather).
const char* avx2_or_neon_form();

#if defined(__x86_64__)
inline bool cpu_has_avx2() { return simd_level() >= SimdLevel::kAvx2; }
inline bool cpu_has_avx512() { return simd_level() >= SimdLevel::kAvx512; }
inline bool cpu_has_avx512_vnni() { return simd_level() >= SimdLevel::kAvx512Vnni; }

// The target attributes of the kernels each level runs.
#define PF_TARGET_AVX2 __attribute__((target("avx2")))
#define PF_TARGET_AVX512 __attribute__((target("avx512f,avx512bw,avx512vl")))
#define PF_TARGET_AVX512_VNNI __attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni")))

// GCC 12's AVX-512 intrinsics initialise their "undefined" vectors from themselves, which its own
// -W(maybe-)uninitialized then reports at every use (GCC bug 105593, fixed in 13). Code using them
// sits between these two.
#if defined(__clang__)
#define PF_AVX512_INTRINSICS_BEGIN
#define PF_AVX512_INTRINSICS_END
#else
#define PF_AVX512_INTRINSICS_BEGIN                           \
  _Pragma("GCC diagnostic push")                            \
  _Pragma("GCC diagnostic ignored \"-Wuninitialized\"") \
  _Pragma("GCC diagnostic ignored \"-Wmaybe-uninitialized\"")
#define PF_AVX512_INTRINSICS_END _Pragma("GCC diagnostic pop")
#endif
#elif defined(__aarch64__) || defined(__arm__)
inline bool cpu_has_neon() { return simd_level() >= SimdLevel::kNeon; }
inline bool cpu_has_neon_dotprod() { return simd_level() >= SimdLevel::kNeonDotprod; }
// armhf compiles its NEON kernels for NEON alone (arm_neon.h allows it per function, as
// immintrin.h does on x86); aarch64 needs nothing.
#if defined(__arm__)
#define PF_TARGET_NEON __attribute__((target("fpu=neon")))
#else
#define PF_TARGET_NEON
// GCC's arm_neon.h gates vdotq_s32 on this architecture string ("+dotprod" alone is refused).
#define PF_TARGET_NEON_DOTPROD __attribute__((target("arch=armv8.2-a+dotprod")))
#endif
#endif

}  // namespace patchfuse
