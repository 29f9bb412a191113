// The only file that names the backends. A backend switched on in CMake adds one definition and
// one line here.
#include "runtime/backends/backend.h"

#include <algorithm>
#include <type_traits>

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


template <class T>
std::vector<T> request_weights(const KernelRequest& r, DType to, std::vector<T>* bias) {
  static_assert(std::is_same_v<T, float> || std::is_same_v<T, uint16_t>);
  const ModuleView& m = *r.module;
  const auto out = static_cast<size_t>(m.geometry.embed_dim), k = static_cast<size_t>(m.patch_volume);
  std::vector<T> w(out * k);
  auto bytes = [](T* p) { return reinterpret_cast<uint8_t*>(p); };
  if (r.folded == nullptr) {
    convert_elements(m.weight.data, m.weight.dtype, bytes(w.data()), to, w.size());
    bias->clear();
    if (m.bias) {
      bias->resize(out);
      convert_elements(m.bias->data, m.bias->dtype, bytes(bias->data()), to, out);
    }
    return w;
  }
  bias->resize(out);
  if constexpr (std::is_same_v<T, float>) {
    (*r.folded)(0, static_cast<int64_t>(out), w.data(), bias->data());
  } else {  // a block of f32 rows at a time, narrowed into place
    std::vector<float> rows(static_cast<size_t>(kFoldedBlock) * k), b(static_cast<size_t>(kFoldedBlock));
    for (size_t o = 0; o < out; o += static_cast<size_t>(kFoldedBlock)) {
      const size_t n = std::min(out - o, static_cast<size_t>(kFoldedBlock));
      (*r.folded)(static_cast<int64_t>(o), static_cast<int64_t>(n), rows.data(), b.data());
      convert_elements(reinterpret_cast<const uint8_t*>(rows.data()), DType::kF32, bytes(&w[o * k]), to, n * k);
      convert_elements(reinterpret_cast<const uint8_t*>(b.data()), DType::kF32, bytes(&(*bias)[o]), to, n);
    }
  }
  return w;
}
template std::vector<float> request_weights(const KernelRequest&, DType, std::vector<float>*);
template std::vector<uint16_t> request_weights(const KernelRequest&, DType, std::vector<uint16_t>*);

}  // namespace patchfuse
