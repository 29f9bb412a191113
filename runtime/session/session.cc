#include "runtime/session/session.h"

#include <new>

#include "runtime/core/checked_math.h"

namespace patchfuse {

namespace {

Precision native_precision(DType d) {
  switch (d) {
    case DType::kF32: return Precision::kF32;
    case DType::kF16: return Precision::kF16;
    case DType::kBF16: return Precision::kBF16;
  }
  return Precision::kF32;
}

Result<const Backend*> pick_backend(const std::optional<BackendId>& requested) {
  if (!requested) {
    for (const Backend* b : registered_backends()) {
      if (b->available(nullptr)) return b;
    }
    return make_error(Code::kInternal, "no backend is available, not even reference");
  }
  const Backend* b = find_backend(*requested);
  PF_CHECK(b != nullptr, Code::kUnsupported, "backend ", backend_id_name(*requested),
           " is not built into this library (see PATCHFUSE_WITH_* in CMake)");
  std::string why;
  PF_CHECK(b->available(&why), Code::kUnsupported, "backend ", b->name, " cannot run here: ", why);
  return b;
}

}  // namespace

Result<std::unique_ptr<Session>> Session::create(const ModuleView& module, const SessionOptions& o) {
  PF_CHECK(o.threads >= 1 && o.threads <= 1024, Code::kInvalidArgument, "threads ", o.threads,
           " must be between 1 and 1024");
  // Both paths run patches; the rules decide which geometries that is valid for.
  Status eligible = check_eligible(*module.family, module.path, module.geometry);
  PF_CHECK(eligible.ok(), Code::kUnsupported, eligible.error().message);

  std::unique_ptr<Session> s(new Session());
  s->module_ = &module;
  s->fused_ = o.fused;
  PF_ASSIGN_OR_RETURN(s->backend_, pick_backend(o.backend));
  const Backend& b = *s->backend_;
  const Precision native = native_precision(module.dtype);
  std::string why;
  if (o.precision) {
    PF_CHECK(b.supports(*o.precision, o.fused, &why), Code::kUnsupported, "precision ", precision_name(*o.precision),
             " is not available on backend ", b.name, " (", o.fused ? "fused" : "unfused", " path): ", why);
    s->precision_ = *o.precision;
  } else if (b.supports(native, o.fused, &why)) {
    s->precision_ = native;
  } else {
    s->precision_ = Precision::kF32;
    s->note_ = cat("model weights are ", dtype_name(module.dtype), " but ", why, "; computing in f32");
  }
  KernelRequest request;
  request.module = &module;
  request.fused = o.fused;
  request.precision = s->precision_;
  request.threads = o.threads;
  try {
    PF_ASSIGN_OR_RETURN(s->kernel_, b.create(request));
  } catch (const std::bad_alloc&) {
    return make_error(Code::kOutOfMemory, cat("backend ", b.name, ": out of memory packing module ", module.path));
  }
  s->detail_ = s->kernel_->detail();
  s->isa_ = s->kernel_->isa();
  return s;
}

Status Session::run(const float* input, size_t n, float* output) {
  PF_CHECK(input != nullptr && output != nullptr, Code::kInvalidArgument, "run: input and output must not be null");
  PF_CHECK(n > 0, Code::kInvalidArgument, "run: N = 0; at least one patch is needed");
  const auto in_count = checked_mul(n, static_cast<uint64_t>(module_->patch_volume));
  const auto out_count = checked_mul(n, static_cast<uint64_t>(module_->geometry.embed_dim));
  PF_CHECK(in_count && out_count && *in_count <= SIZE_MAX / sizeof(float) && *out_count <= SIZE_MAX / sizeof(float),
           Code::kInvalidArgument, "run: N = ", n, " patches of ", module_->patch_volume, " floats overflow the address space");
  const auto* in_begin = reinterpret_cast<const char*>(input);
  const auto* out_begin = reinterpret_cast<const char*>(output);
  const bool overlap = in_begin < out_begin + *out_count * sizeof(float) && out_begin < in_begin + *in_count * sizeof(float);
  PF_CHECK(!overlap, Code::kInvalidArgument, "run: output overlaps input");
  try {
    return kernel_->run(input, n, output);
  } catch (const std::bad_alloc&) {
    return make_error(Code::kOutOfMemory, cat("run: out of memory for N = ", n));
  }
}

}  // namespace patchfuse
