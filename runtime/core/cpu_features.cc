#include "runtime/core/cpu_features.h"

#include <cstdlib>
#include <cstring>

namespace patchfuse {

#if defined(__x86_64__)
SimdLevel simd_level() {
  static const SimdLevel level = [] {
    __builtin_cpu_init();
    SimdLevel cpu = SimdLevel::kBaseline;
    if (__builtin_cpu_supports("avx2")) cpu = SimdLevel::kAvx2;
    if (cpu == SimdLevel::kAvx2 && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
        __builtin_cpu_supports("avx512vl")) {
      cpu = SimdLevel::kAvx512;
    }
    const char* cap = std::getenv("PATCHFUSE_MAX_CPU_ISA");
    if (cap != nullptr && std::strcmp(cap, "baseline") == 0) return SimdLevel::kBaseline;
    if (cap != nullptr && std::strcmp(cap, "avx2") == 0 && cpu > SimdLevel::kAvx2) return SimdLevel::kAvx2;
    return cpu;
  }();
  return level;
}
#endif

}  // namespace patchfuse
