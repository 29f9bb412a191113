#include "runtime/core/cpu_features.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>

#if defined(__arm__) || defined(__aarch64__)
#include <asm/hwcap.h>
#include <sys/auxv.h>
#endif

namespace patchfuse {

namespace {

// The CPU's own level.
SimdLevel cpu_level() {
#if defined(__x86_64__)
  __builtin_cpu_init();
  SimdLevel cpu = SimdLevel::kBaseline;
  if (__builtin_cpu_supports("avx2")) cpu = SimdLevel::kAvx2;
  if (cpu == SimdLevel::kAvx2 && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
      __builtin_cpu_supports("avx512vl")) {
    cpu = __builtin_cpu_supports("avx512vnni") ? SimdLevel::kAvx512Vnni : SimdLevel::kAvx512;
  }
  if (cpu == SimdLevel::kAvx512Vnni && __builtin_cpu_supports("avx512vbmi")) cpu = SimdLevel::kAvx512Vbmi;
  return cpu;
#elif defined(__aarch64__)
  return (getauxval(AT_HWCAP) & HWCAP_ASIMDDP) != 0 ? SimdLevel::kNeonDotprod : SimdLevel::kNeon;
#else
  return (getauxval(AT_HWCAP) & HWCAP_NEON) != 0 ? SimdLevel::kNeon : SimdLevel::kBaseline;
#endif
}

}  // namespace

SimdLevel simd_level() {
  static const SimdLevel level = [] {
    const SimdLevel cpu = cpu_level();
    const char* cap = std::getenv("PATCHFUSE_MAX_CPU_ISA");
    for (const SimdLevel level : kSimdLevels) {  // PATCHFUSE_MAX_CPU_ISA's values: the levels' names
      if (cap != nullptr && std::strcmp(cap, simd_level_name(level)) == 0) return std::min(cpu, level);
    }
    return cpu;
  }();
  return level;
}

const char* simd_level_name(SimdLevel level) {
  switch (level) {
    case SimdLevel::kBaseline: return "baseline";
#if defined(__x86_64__)
    case SimdLevel::kAvx2: return "avx2";
    case SimdLevel::kAvx512: return "avx512";
    case SimdLevel::kAvx512Vnni: return "avx512_vnni";
    case SimdLevel::kAvx512Vbmi: return "avx512_vbmi";
#else
    case SimdLevel::kNeon: return "neon";
    case SimdLevel::kNeonDotprod: return "neon_dotprod";
#endif
  }
  return "?";
}

}  // namespace patchfuse
