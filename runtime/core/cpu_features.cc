#include "runtime/core/cpu_features.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <utility>

namespace patchfuse {

#if defined(__x86_64__)
SimdLevel simd_level() {
  static const SimdLevel level = [] {
    __builtin_cpu_init();
    SimdLevel cpu = SimdLevel::kBaseline;
    if (__builtin_cpu_supports("avx2")) cpu = SimdLevel::kAvx2;
    if (cpu == SimdLevel::kAvx2 && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
        __builtin_cpu_supports("avx512vl")) {
      cpu = __builtin_cpu_supports("avx512vnni") ? SimdLevel::kAvx512Vnni : SimdLevel::kAvx512;
    }
    const char* cap = std::getenv("PATCHFUSE_MAX_CPU_ISA");
    const std::pair<const char*, SimdLevel> caps[] = {
        {"baseline", SimdLevel::kBaseline}, {"avx2", SimdLevel::kAvx2}, {"avx512", SimdLevel::kAvx512}};
    for (const auto& [name, level] : caps) {
      if (cap != nullptr && std::strcmp(cap, name) == 0) return std::min(cpu, level);
    }
    return cpu;
  }();
  return level;
}
#endif

}  // namespace patchfuse
