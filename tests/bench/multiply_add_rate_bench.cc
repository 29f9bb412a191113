// The core's peak multiply-add rate per precision, the ceiling a GEMM kernel is read against:
// 14 independent zmm accumulators (more than any of these instructions' latency times its issue
// rate), fed from registers, so nothing but the instruction's own throughput limits the loop.
// It shows why `auto` computes a bf16 model in f32 on Intel's AVX512-BF16 without AMX: there
// vdpbf16ps did 43 multiply-adds a ns against the FMA's 88 (docs/performance.md).
#include <benchmark/benchmark.h>

#include <cstdint>

namespace {

// 14 accumulators, zmm0-13, times zmm14 and zmm15 (registers 0-15 only, which every x86-64
// compiler knows by name).
#define PF_FOURTEEN(op)                                                                                  \
  op " %%zmm14, %%zmm15, %%zmm0\n" op " %%zmm14, %%zmm15, %%zmm1\n" op " %%zmm14, %%zmm15, %%zmm2\n"       \
  op " %%zmm14, %%zmm15, %%zmm3\n" op " %%zmm14, %%zmm15, %%zmm4\n" op " %%zmm14, %%zmm15, %%zmm5\n"       \
  op " %%zmm14, %%zmm15, %%zmm6\n" op " %%zmm14, %%zmm15, %%zmm7\n" op " %%zmm14, %%zmm15, %%zmm8\n"       \
  op " %%zmm14, %%zmm15, %%zmm9\n" op " %%zmm14, %%zmm15, %%zmm10\n" op " %%zmm14, %%zmm15, %%zmm11\n"     \
  op " %%zmm14, %%zmm15, %%zmm12\n" op " %%zmm14, %%zmm15, %%zmm13\n"
#define PF_ZERO                                                                                            \
  "vpxord %%zmm0, %%zmm0, %%zmm0\n vmovdqa64 %%zmm0, %%zmm1\n vmovdqa64 %%zmm0, %%zmm2\n"                  \
  "vmovdqa64 %%zmm0, %%zmm3\n vmovdqa64 %%zmm0, %%zmm4\n vmovdqa64 %%zmm0, %%zmm5\n"                       \
  "vmovdqa64 %%zmm0, %%zmm6\n vmovdqa64 %%zmm0, %%zmm7\n vmovdqa64 %%zmm0, %%zmm8\n"                       \
  "vmovdqa64 %%zmm0, %%zmm9\n vmovdqa64 %%zmm0, %%zmm10\n vmovdqa64 %%zmm0, %%zmm11\n"                     \
  "vmovdqa64 %%zmm0, %%zmm12\n vmovdqa64 %%zmm0, %%zmm13\n vmovdqa64 %%zmm0, %%zmm14\n"                    \
  "vmovdqa64 %%zmm0, %%zmm15\n"
// `loops` times 14 of one instruction, every register zeroed first (zeros: no denormal can slow
// a unit down).
#define PF_LOOP(name, op)                                                                                  \
  void name(int64_t loops) {                                                                               \
    asm volatile(PF_ZERO "1:\n" PF_FOURTEEN(op) "dec %0\n jnz 1b\n"                                        \
                 : "+r"(loops)                                                                             \
                 :                                                                                         \
                 : "cc", "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", "xmm9",      \
                   "xmm10", "xmm11", "xmm12", "xmm13", "xmm14", "xmm15");                                  \
  }

PF_LOOP(fma_f32, "vfmadd231ps")
PF_LOOP(dot_bf16, "vdpbf16ps")
PF_LOOP(dot_u8s8, "vpdpbusd")

// An instruction's multiply-adds: 16 f32 lanes (vfmadd231ps), 16 lanes of 2 bf16 pairs
// (vdpbf16ps), 16 lanes of 4 u8 x s8 pairs (vpdpbusd).
void MultiplyAddRate(benchmark::State& state, bool available, void (*loop)(int64_t), int macs) {
  if (!available) {
    state.SkipWithError("this CPU lacks the instruction");
    return;
  }
  constexpr int64_t kLoops = 1 << 16;
  for (auto _ : state) loop(kLoops);
  state.counters["multiply-adds"] =
      benchmark::Counter(static_cast<double>(state.iterations()) * kLoops * 14 * macs, benchmark::Counter::kIsRate);
}

bool avx512() {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx512f");
}

BENCHMARK_CAPTURE(MultiplyAddRate, f32_fma_zmm, avx512(), fma_f32, 16);
BENCHMARK_CAPTURE(MultiplyAddRate, bf16_vdpbf16ps_zmm, avx512() && __builtin_cpu_supports("avx512bf16"), dot_bf16, 32);
BENCHMARK_CAPTURE(MultiplyAddRate, u8s8_vpdpbusd_zmm, avx512() && __builtin_cpu_supports("avx512vnni"), dot_u8s8, 64);

}  // namespace
