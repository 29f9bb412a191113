// One gemmlowp kernel variant (see gemmlowp_variant.h). CMake compiles this file once per variant
// with PATCHFUSE_GEMMLOWP_VARIANT=<name> and the variant's flags; nothing else may be included
// here, so that every definition the object holds is in its own namespace.
#include <cstdint>
#include <new>
#include <tuple>
#include <vector>

#include "runtime/backends/gemmlowp/gemmlowp_variant.h"

#define PF_CONCAT_(a, b) a##b
#define PF_CONCAT(a, b) PF_CONCAT_(a, b)
#define PF_STRING_(a) #a
#define PF_STRING(a) PF_STRING_(a)
#define gemmlowp PF_CONCAT(patchfuse_gemmlowp_, PATCHFUSE_GEMMLOWP_VARIANT)
#include <gemmlowp/public/gemmlowp.h>

namespace gemmlowp {  // the variant's own namespace: the macro above renames it

struct Context {
  GemmContext gemm;
};

struct ForTask final : Task {
  void (*fn)(void*, int) = nullptr;
  void* arg = nullptr;
  int i = 0;
  void Run() override { fn(arg, i); }
};

patchfuse::GemmlowpContext* create(int threads) {
  auto* c = new (std::nothrow) Context;
  if (c != nullptr) c->gemm.set_max_num_threads(threads);
  return reinterpret_cast<patchfuse::GemmlowpContext*>(c);
}

void destroy(patchfuse::GemmlowpContext* c) { delete reinterpret_cast<Context*>(c); }

// The weights are the left-hand side ([outputs, k] row-major, offset -128) and the rows the
// right-hand side ([k, n] column-major = [n, k] row-major, offset 0), so the result [outputs, n]
// column-major is [n, outputs] row-major: gemmlowp's (and TFLite's) fully-connected layout.
bool gemm(patchfuse::GemmlowpContext* c, const uint8_t* weights, const uint8_t* rows, int outputs, int n, int k,
          int32_t* acc) {
  const MatrixMap<const uint8_t, MapOrder::RowMajor> lhs(weights, outputs, k);
  const MatrixMap<const uint8_t, MapOrder::ColMajor> rhs(rows, k, n);
  MatrixMap<int32_t, MapOrder::ColMajor> result(acc, outputs, n);
  try {
    GemmWithOutputPipeline<uint8_t, int32_t, DefaultL8R8BitDepthParams>(&reinterpret_cast<Context*>(c)->gemm, lhs, rhs,
                                                                        &result, -128, 0, std::make_tuple());
  } catch (const std::bad_alloc&) {
    return false;
  }
  return true;
}

void parallel_for(patchfuse::GemmlowpContext* c, int n, void (*fn)(void*, int), void* arg) {
  std::vector<ForTask> tasks(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) {
    tasks[static_cast<size_t>(i)].fn = fn;
    tasks[static_cast<size_t>(i)].arg = arg;
    tasks[static_cast<size_t>(i)].i = i;
  }
  reinterpret_cast<Context*>(c)->gemm.workers_pool()->Execute(n, tasks.data());
}

const char* kernel_name() {
  static const DefaultKernel<DefaultL8R8BitDepthParams> kernel;
  return kernel.Name();
}

}  // namespace gemmlowp

namespace patchfuse {

extern const GemmlowpVariant PF_CONCAT(kGemmlowp_, PATCHFUSE_GEMMLOWP_VARIANT);
const GemmlowpVariant PF_CONCAT(kGemmlowp_, PATCHFUSE_GEMMLOWP_VARIANT) = {
    PF_STRING(PATCHFUSE_GEMMLOWP_VARIANT), gemmlowp::kernel_name, gemmlowp::create, gemmlowp::destroy,
    gemmlowp::gemm, gemmlowp::parallel_for};

}  // namespace patchfuse
