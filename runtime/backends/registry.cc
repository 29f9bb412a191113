// The only file that names the backends. A backend switched on in CMake adds one definition and
// one line here.
#include "runtime/backends/backend.h"

#include "runtime/backends/reference/reference_backend.h"
#ifdef PATCHFUSE_WITH_ONEDNN
#include "runtime/backends/onednn/onednn_backend.h"
#endif
#ifdef PATCHFUSE_WITH_XNNPACK
#include "runtime/backends/xnnpack/xnnpack_backend.h"
#endif
#ifdef PATCHFUSE_WITH_GEMMLOWP
#include "runtime/backends/gemmlowp/gemmlowp_backend.h"
#endif

namespace patchfuse {

const std::vector<const Backend*>& registered_backends() {
  static const std::vector<const Backend*> list = {
#ifdef PATCHFUSE_WITH_ONEDNN
      &onednn_backend(),  // x86-64 first choice
#endif
#ifdef PATCHFUSE_WITH_XNNPACK
      &xnnpack_backend(),  // ARM first choice (oneDNN is not built there)
#endif
#ifdef PATCHFUSE_WITH_GEMMLOWP
      &gemmlowp_backend(),  // int8 only: ARM's int8 (XNNPACK refuses it)
#endif
      &reference_backend(),
  };
  return list;
}

const Backend* find_backend(BackendId id) {
  for (const Backend* b : registered_backends()) {
    if (b->id == id) return b;
  }
  return nullptr;
}

const char* backend_id_name(BackendId id) {
  switch (id) {
    case BackendId::kReference: return "reference";
    case BackendId::kOneDnn: return "onednn";
    case BackendId::kXnnpack: return "xnnpack";
    case BackendId::kGemmlowp: return "gemmlowp";
  }
  return "?";
}

const char* precision_name(Precision p) {
  switch (p) {
    case Precision::kF32: return "f32";
    case Precision::kBF16: return "bf16";
    case Precision::kF16: return "f16";
    case Precision::kInt8: return "int8";
  }
  return "?";
}

std::vector<float> tensor_as_f32(const TensorView& t) {
  const size_t n = t.bytes / dtype_size(t.dtype);
  std::vector<float> out(n);
  convert_elements(t.data, t.dtype, reinterpret_cast<uint8_t*>(out.data()), DType::kF32, n);
  return out;
}

std::vector<uint16_t> tensor_as_16bit(const TensorView& t, DType to) {
  const size_t n = t.bytes / dtype_size(t.dtype);
  std::vector<uint16_t> out(n);
  convert_elements(t.data, t.dtype, reinterpret_cast<uint8_t*>(out.data()), to, n);
  return out;
}

}  // namespace patchfuse
