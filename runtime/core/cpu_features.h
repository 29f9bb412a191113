// Run-time CPU checks for the hand-vectorized loops (the frames gather, the resize). A plain
// check rather than target_clones: an ifunc resolver runs before ThreadSanitizer is set up and
// crashed the TSan build.
#pragma once

namespace patchfuse {

#if defined(__x86_64__)
inline bool cpu_has_avx2() {
  static const bool avx2 = [] {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx2") != 0;
  }();
  return avx2;
}
#endif

}  // namespace patchfuse
