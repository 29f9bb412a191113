// The boundary between the gemmlowp backend and its kernel variants. gemmlowp picks its kernel at
// compile time (the NEON dot-product kernel needs +dotprod, the armhf NEON kernel -mfpu=neon), so
// gemmlowp_variant.cc is compiled once per variant with that variant's flags (the list is in
// CMakeLists.txt) and the backend chooses one at run time.
//
// The one-definition rule: every variant instantiates the same gemmlowp templates, and the linker
// would keep one copy of each (possibly the +dotprod one, which faults on a core without it). So
// each variant's copy of gemmlowp lives in a namespace of its own (`#define gemmlowp
// patchfuse_gemmlowp_<variant>` before the include), and this header holds only plain types and
// function pointers: no inline function the variant objects could emit with their flags. A test
// (check_gemmlowp_variants.cmake) reads each variant object's symbols and fails on any definition
// outside its namespace other than its one table.
#pragma once

#include <cstdint>

namespace patchfuse {

struct GemmlowpContext;  // a variant's gemmlowp::GemmContext (its thread pool and allocator)

struct GemmlowpVariant {
  const char* name;    // "neon", "dotprod", ...: the variant, as CMake names it
  const char* (*kernel)();  // gemmlowp's name of the kernel compiled in, e.g. "NEON, 12x8, depth 4, dotprod"
  GemmlowpContext* (*create)(int threads);  // nullptr when out of memory
  void (*destroy)(GemmlowpContext*);
  // acc[n][o] = sum_k rows[n][k] * (weights[o][k] - 128), exactly in int32 (DefaultL8R8BitDepthParams):
  // weights [outputs, k] and rows [n, k] row-major uint8. Returns false when out of memory.
  bool (*gemm)(GemmlowpContext*, const uint8_t* weights, const uint8_t* rows, int outputs, int n, int k, int32_t* acc);
  // task(arg, i) for i in [0, n), n at most the context's threads, on its worker threads.
  void (*parallel_for)(GemmlowpContext*, int n, void (*task)(void* arg, int i), void* arg);
};

}  // namespace patchfuse
