// Session, per-model work: the kernels of each path (pixel_values rows, still image, video),
// folded, quantized and packed once, from or into the weights cache.
#include "runtime/session/session.h"

#include <cstdio>
#include <cstring>
#include <new>

#include "runtime/session/timed.h"

namespace patchfuse {

Result<std::unique_ptr<Kernel>> Session::create_kernel(const ModuleView& module, const Int8Weights* int8,
                                                       const CacheBlob* packed, const FoldedRows* folded) const {
  KernelRequest request;
  request.module = &module;
  request.fused = fused_;
  request.precision = precision_;
  request.threads = threads_;
  request.int8 = int8;
  request.folded = folded;
  request.gathered_rows = &module != &module_;  // a frames kernel's own module view, not the model's
  if (packed != nullptr) {
    request.packed = packed->data;
    request.packed_size = packed->size;
  }
  try {
    return backend_->create(request);
  } catch (const std::bad_alloc&) {
    return make_error(Code::kOutOfMemory, cat("backend ", backend_->name, ": out of memory packing module ", module.path));
  }
}

namespace {

const CacheBlob* blob_named(const std::vector<CacheBlob>& blobs, const char* name) {
  for (const CacheBlob& b : blobs) {
    if (b.name == name) return &b;
  }
  return nullptr;
}

CacheBlob blob_of(const char* name, const void* data, size_t size) {
  return CacheBlob{name, static_cast<const uint8_t*>(data), size};
}

template <class T>
CacheBlob blob_of(const char* name, const std::vector<T>& v) {
  return blob_of(name, v.data(), v.size() * sizeof(T));
}

// A cached blob of `count` elements of T as a vector, or nullopt when its size says otherwise.
template <class T>
std::optional<std::vector<T>> blob_vector(const CacheBlob* b, size_t count) {
  if (b == nullptr || b->size != count * sizeof(T)) return std::nullopt;
  std::vector<T> v(count);
  std::memcpy(v.data(), b->data, b->size);
  return v;
}

}  // namespace

std::string Session::cache_scope() const {
  const ModuleView& m = module_;
  uint64_t h = content_hash(m.weight.data, m.weight.bytes);
  if (m.bias) h = content_hash(m.bias->data, m.bias->bytes, h);
  if (m.preprocessing) {
    const Preprocessing& p = *m.preprocessing;
    h = content_hash(p.mean.data(), p.mean.size() * sizeof(float), h);
    h = content_hash(p.std.data(), p.std.size() * sizeof(float), h);
    h = content_hash(&p.rescale_factor, sizeof p.rescale_factor, h);
  }
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(h));
  return cat("patchfuse ", PATCHFUSE_VERSION, " | ", backend_->identity(), " | ", precision_name(precision_), " | ",
             fused_ ? "fused" : "unfused", " | threads ", threads_, " | int8 weights to ", backend_->int8_weight_max(nullptr),
             " | module ", m.path, " ", dtype_name(m.weight.dtype), " [", m.geometry.embed_dim, ", ", m.patch_volume,
             "] | weights ", hex);
}

void Session::report_cache(const std::string& kind, const std::string& what) {
  if (!cache_report_.empty()) cache_report_ += "\n";
  cache_report_ += kind + ": " + what;
}

void Session::store_in_cache(const std::string& kind, const std::string& why_missing, std::vector<CacheBlob> blobs,
                             const Kernel& kernel) {
  const auto [packed, size] = kernel.packed_weights();
  if (packed != nullptr) blobs.push_back(blob_of("packed", packed, size));
  if (blobs.empty()) {
    report_cache(kind, cat("nothing to keep (", backend_->name, " packs from the model's own weights)"));
    return;
  }
  const Status stored = cache_->store(kind, blobs);
  report_cache(kind, stored.ok() ? cat("written (", why_missing, ")") : cat("not written (", stored.error().message, ")"));
}

Result<Kernel*> Session::rows_kernel() {
  if (kernel_) return kernel_.get();
  return timed(profile_.setup_ms, [&] { return make_rows_kernel(); });
}

Result<Kernel*> Session::make_rows_kernel() {
  std::string why;
  if (cache_) {
    const auto found = cache_->find("rows", &why);
    const CacheBlob* packed = found ? blob_named(*found, "packed") : nullptr;
    if (packed != nullptr) {
      auto k = create_kernel(module_, nullptr, packed);
      if (k.ok()) {
        kernel_ = std::move(*k);
        report_cache("rows", "loaded");
        return kernel_.get();
      }
      why = "rebuilt: " + k.error().message;
    } else if (found) {
      why = "rebuilt: the entry has no packed weights";
    }
  }
  PF_ASSIGN_OR_RETURN(kernel_, create_kernel(module_));
  if (cache_) store_in_cache("rows", why, {}, *kernel_);
  return kernel_.get();
}

bool Session::frames_kernel_from(FramesKernel& k, ModuleView& v, const std::vector<CacheBlob>& blobs) {
  const bool int8 = precision_ == Precision::kInt8;
  const auto out = static_cast<size_t>(module_.geometry.embed_dim), values = out * static_cast<size_t>(k.k);
  const CacheBlob* packed = blob_named(blobs, "packed");
  const CacheBlob* weight = blob_named(blobs, int8 ? "int8_weight" : "weight");
  if (packed == nullptr && (weight == nullptr || weight->size != values * (int8 ? 1 : sizeof(float)))) return false;
  if (int8) {
    auto scale = blob_vector<float>(blob_named(blobs, "int8_scale"), out);
    auto bias = blob_vector<float>(blob_named(blobs, "int8_bias"), out);
    if (!scale || !bias) return false;
    k.int8.k = k.k;
    k.int8.scale = std::move(*scale);
    k.int8.bias = std::move(*bias);
    if (packed == nullptr) k.int8.weight.assign(weight->data, weight->data + weight->size);
  } else {
    const CacheBlob* bias = blob_named(blobs, "bias");
    if (bias == nullptr || bias->size != out * sizeof(float)) return false;
    v.bias->data = bias->data;
    v.bias->bytes = bias->size;
    if (packed == nullptr) {
      v.weight.data = weight->data;
      v.weight.bytes = weight->size;
    }
  }
  auto kernel = create_kernel(v, int8 ? &k.int8 : nullptr, packed);
  if (!kernel.ok()) return false;
  k.kernel = std::move(*kernel);
  return true;
}

Result<Session::FramesKernel*> Session::frames_kernel(bool still) {
  std::unique_ptr<FramesKernel>& slot = still ? still_ : video_;
  if (slot) return slot.get();
  return timed(profile_.setup_ms, [&] { return make_frames_kernel(still); });
}

Result<Session::FramesKernel*> Session::make_frames_kernel(bool still) {
  std::unique_ptr<FramesKernel>& slot = still ? still_ : video_;
  const Preprocessing& p = *module_.preprocessing;
  const char* kind = still ? "still" : "video";
  auto k = std::make_unique<FramesKernel>();
  const ConvGeometry& g = module_.geometry;
  k->k = g.in_channels * (still ? 1 : g.kernel[0]) * g.kernel[1] * g.kernel[2];
  const bool int8 = precision_ == Precision::kInt8;
  // The kernel's module: the shapes of the folded [O, k] f32 weights and bias, whose values come
  // from the cache's entry, the fold (KernelRequest::folded) or, in int8, k->int8.
  ModuleView v;
  v.path = module_.path;
  v.family = module_.family;
  v.geometry = g;
  if (still) v.geometry.kernel[0] = v.geometry.stride[0] = 1;
  v.patch_volume = k->k;
  v.dtype = v.source_dtype = DType::kF32;
  v.weight = {module_.weight.name, {g.embed_dim, k->k}, DType::kF32, nullptr, 0};
  if (!int8) v.bias = TensorView{module_.path + ".bias", {g.embed_dim}, DType::kF32, nullptr, 0};
  std::string why;
  if (cache_) {
    const auto found = cache_->find(kind, &why);
    if (found && frames_kernel_from(*k, v, *found)) {
      report_cache(kind, "loaded");
      slot = std::move(k);
      return slot.get();
    }
    if (found) why = "rebuilt: the entry does not fit this kernel";
  }
  if (int8) {
    k->int8 = quantize_int8(conv_weights(module_), p, still, backend_->int8_weight_max(nullptr));
    PF_ASSIGN_OR_RETURN(k->kernel, create_kernel(v, &k->int8));
    if (cache_) {  // the backend's packed bytes, where it has them, replace the int8 weights
      std::vector<CacheBlob> blobs{blob_of("int8_scale", k->int8.scale), blob_of("int8_bias", k->int8.bias)};
      if (k->kernel->packed_weights().first == nullptr) blobs.push_back(blob_of("int8_weight", k->int8.weight));
      store_in_cache(kind, why, std::move(blobs), *k->kernel);
    }
  } else {
    // The backend asks the fold for its rows a block at a time (FoldedRows); their biases are kept
    // for the cache.
    NormalizationFold fold(conv_weights(module_), p, still);
    std::vector<float> bias(static_cast<size_t>(g.embed_dim));
    const int64_t row = k->k;
    const FoldedRows rows = [&](int64_t first, int64_t count, float* weight, float* b) {
      for (int64_t i = 0; i < count; ++i) b[i] = bias[static_cast<size_t>(first + i)] = fold.channel(first + i, weight + i * row);
    };
    PF_ASSIGN_OR_RETURN(k->kernel, create_kernel(v, nullptr, nullptr, &rows));
    if (cache_) {
      // Where the backend cannot give its packed bytes back, the file keeps the folded weights,
      // folded again for it (once: later sessions load them).
      std::vector<CacheBlob> blobs{blob_of("bias", bias)};
      FoldedWeights folded;
      if (k->kernel->packed_weights().first == nullptr) {
        folded = fold_normalization(conv_weights(module_), p, still);
        blobs.push_back(blob_of("weight", folded.weight));
      }
      store_in_cache(kind, why, std::move(blobs), *k->kernel);
    }
  }
  slot = std::move(k);
  return slot.get();
}

}  // namespace patchfuse
