#include "runtime/session/session.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <new>

#include "runtime/core/checked_math.h"
#include "runtime/frames/gather.h"

namespace patchfuse {

namespace {

// Runs f and adds its wall time to `ms`.
template <class F>
auto timed(double& ms, const F& f) {
  const auto start = std::chrono::steady_clock::now();
  struct AddOnExit {
    double& ms;
    std::chrono::steady_clock::time_point start;
    ~AddOnExit() { ms += std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count(); }
  } add{ms, start};
  return f();
}

Precision native_precision(DType d) {
  switch (d) {
    case DType::kF32: return Precision::kF32;
    case DType::kF16: return Precision::kF16;
    case DType::kBF16: return Precision::kBF16;
  }
  return Precision::kF32;
}

// auto: the first backend available here that computes the requested precision on the requested
// path (int8 on ARM: XNNPACK refuses it, gemmlowp takes it); when none does, the first available,
// so that the error is that backend's reason.
Result<const Backend*> pick_backend(const SessionOptions& o) {
  const std::optional<BackendId>& requested = o.backend;
  if (!requested) {
    const Backend* first = nullptr;
    for (const Backend* b : registered_backends()) {
      if (!b->available(nullptr)) continue;
      if (!o.precision || b->supports(*o.precision, o.fused, nullptr)) return b;
      if (first == nullptr) first = b;
    }
    PF_CHECK(first != nullptr, Code::kInternal, "no backend is available, not even reference");
    return first;
  }
  const Backend* b = find_backend(*requested);
  PF_CHECK(b != nullptr, Code::kUnsupported, "backend ", backend_id_name(*requested),
           " is not built into this library (see PATCHFUSE_WITH_* in CMake)");
  std::string why;
  PF_CHECK(b->available(&why), Code::kUnsupported, "backend ", b->name, " cannot run here: ", why);
  return b;
}

}  // namespace

const char* output_stage_name(OutputStage s) {
  switch (s) {
    case OutputStage::kPatches: return "patches";
    case OutputStage::kEncoderInput: return "encoder-input";
  }
  return "?";
}

Result<std::unique_ptr<Session>> Session::create(const ModuleView& module, const SessionOptions& o) {
  PF_CHECK(o.threads >= 1 && o.threads <= 1024, Code::kInvalidArgument, "threads ", o.threads,
           " must be between 1 and 1024");
  // Both paths run patches; the rules decide which geometries that is valid for.
  Status eligible = check_eligible(*module.family, module.path, module.geometry);
  PF_CHECK(eligible.ok(), Code::kUnsupported, eligible.error().message);

  std::unique_ptr<Session> s(new Session());
  if (o.output_stage == OutputStage::kEncoderInput) {
    PF_CHECK(module.encoder_input.has_value(), Code::kUnsupported, "output stage encoder-input: module ", module.path,
             " stores no encoder input steps (converted by a patchfuse before 0.3: convert the checkpoint again)");
    PF_RETURN_IF_ERROR(encoder_input_available(*module.encoder_input, module.path));
    s->encoder_ = &*module.encoder_input;
  }
  s->module_ = module;
  s->module_.geometry = as_conv3d(module.geometry);
  s->fused_ = o.fused;
  PF_ASSIGN_OR_RETURN(s->backend_, pick_backend(o));
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
  s->threads_ = o.threads;
  if (!o.weights_cache.empty()) s->cache_.emplace(o.weights_cache, s->cache_scope());
  if (s->precision_ == Precision::kInt8) {
    if (b.int8_weight_max(&why) < 127) s->note_ = why;  // which weight width, and why
    PF_CHECK(module.preprocessing.has_value(), Code::kUnsupported, "precision int8 takes frames only and module ",
             module.path, " has no preprocessing (convert the checkpoint with its preprocessor_config.json)");
  }
  // One kernel is packed now, so a missing piece fails here and the session can say which kernel
  // it runs: a model with preprocessing is there for images, so its still-image kernel (folded,
  // and quantized in int8); the pixel_values rows' otherwise. The other paths' kernels are packed
  // on first use (pf_session_prepare, or the first run): packing all three at creation cost an
  // image app 51 ms (f32) for a pixel_values kernel it never ran.
  if (module.preprocessing) {
    PF_RETURN_IF_ERROR(s->frames_kernel(true));
  } else {
    PF_RETURN_IF_ERROR(s->rows_kernel());
  }
  s->detail_ = s->main_kernel().detail();
  s->isa_ = s->main_kernel().isa();
  if (const auto& p = module.preprocessing) {
    // A fixed-size model takes each video frame as an image; the others resize videos as
    // transformers' video processors do (torch semantics, usually).
    const FrameKernels& forms = *s->forms_;
    const char* image = resize_kernel(p->image_semantics, p->resample, forms);
    const char* video =
        p->resize == ResizeVariant::kFixed ? image : resize_kernel(p->video_semantics, p->resample, forms);
    s->frame_kernels_ = cat("resize ", image, std::strcmp(image, video) != 0 ? cat(" (videos ", video, ")") : "",
                            ", planes ", forms.planes.name, ", gather ",
                            s->precision_ == Precision::kInt8 ? "copy" : forms.gather.name);
  }
  return s;
}

Result<std::unique_ptr<Kernel>> Session::create_kernel(const ModuleView& module, const Int8Weights* int8,
                                                       const CacheBlob* packed) const {
  KernelRequest request;
  request.module = &module;
  request.fused = fused_;
  request.precision = precision_;
  request.threads = threads_;
  request.int8 = int8;
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

Result<FrameGrid> Session::frames_grid(size_t t, size_t height, size_t width) const {
  PF_CHECK(module_.preprocessing.has_value(), Code::kUnsupported, "module ", module_.path,
           " has no preprocessing (convert the checkpoint with its preprocessor_config.json), so it cannot take frames");
  return frame_grid(*module_.preprocessing, t, height, width);
}

bool Session::frames_kernel_from(FramesKernel& k, const std::vector<CacheBlob>& blobs) {
  const bool int8 = precision_ == Precision::kInt8;
  const auto out = static_cast<size_t>(module_.geometry.embed_dim), values = out * static_cast<size_t>(k.folded.k);
  const CacheBlob* packed = blob_named(blobs, "packed");
  const CacheBlob* weight = blob_named(blobs, int8 ? "int8_weight" : "weight");
  if (packed == nullptr && (weight == nullptr || weight->size != values * (int8 ? 1 : sizeof(float)))) return false;
  ModuleView& v = k.view;
  if (packed == nullptr) {
    v.weight.data = weight->data;
    v.weight.bytes = weight->size;
  }
  if (int8) {
    auto scale = blob_vector<float>(blob_named(blobs, "int8_scale"), out);
    auto bias = blob_vector<float>(blob_named(blobs, "int8_bias"), out);
    if (!scale || !bias) return false;
    k.int8.k = k.folded.k;
    k.int8.scale = std::move(*scale);
    k.int8.bias = std::move(*bias);
    v.bias.reset();  // int8 kernels take their bias from Int8Weights; the folded one is not kept
    if (packed == nullptr) k.int8.weight.assign(weight->data, weight->data + weight->size);
  } else {
    const CacheBlob* bias = blob_named(blobs, "bias");
    if (bias == nullptr || bias->size != out * sizeof(float)) return false;
    v.bias->data = bias->data;
    v.bias->bytes = bias->size;
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
  k->folded.k = g.in_channels * (still ? 1 : g.kernel[0]) * g.kernel[1] * g.kernel[2];
  ModuleView& v = k->view;
  v.path = module_.path;
  v.family = module_.family;
  v.geometry = g;
  if (still) v.geometry.kernel[0] = v.geometry.stride[0] = 1;
  v.patch_volume = k->folded.k;
  v.dtype = v.source_dtype = DType::kF32;
  v.weight = {module_.weight.name, {g.embed_dim, k->folded.k}, DType::kF32, nullptr, 0};
  v.bias = TensorView{module_.path + ".bias", {g.embed_dim}, DType::kF32, nullptr, 0};
  const bool int8 = precision_ == Precision::kInt8;
  std::string why;
  if (cache_) {
    const auto found = cache_->find(kind, &why);
    if (found && frames_kernel_from(*k, *found)) {
      report_cache(kind, "loaded");
      slot = std::move(k);
      return slot.get();
    }
    if (found) why = "rebuilt: the entry does not fit this kernel";
  }
  k->folded = fold_normalization(module_, p, still);
  v.weight.data = reinterpret_cast<const uint8_t*>(k->folded.weight.data());
  v.weight.bytes = k->folded.weight.size() * sizeof(float);
  v.bias->data = reinterpret_cast<const uint8_t*>(k->folded.bias.data());
  v.bias->bytes = k->folded.bias.size() * sizeof(float);
  if (int8) k->int8 = quantize_int8(k->folded, backend_->int8_weight_max(nullptr));
  PF_ASSIGN_OR_RETURN(k->kernel, create_kernel(v, int8 ? &k->int8 : nullptr));
  if (cache_) {
    // What the kernel was made from, but where the backend's packed bytes replace it.
    std::vector<CacheBlob> blobs;
    const bool packs = k->kernel->packed_weights().first != nullptr;
    if (int8) {
      blobs = {blob_of("int8_scale", k->int8.scale), blob_of("int8_bias", k->int8.bias)};
      if (!packs) blobs.push_back(blob_of("int8_weight", k->int8.weight));
    } else {
      blobs = {blob_of("bias", k->folded.bias)};
      if (!packs) blobs.push_back(blob_of("weight", k->folded.weight));
    }
    store_in_cache(kind, why, std::move(blobs), *k->kernel);
  }
  slot = std::move(k);
  return slot.get();
}

template <class T>
void Session::gather_on_threads(FramesKernel& k, const uint8_t* const* frames, size_t t, size_t row_stride,
                                size_t first_row, const FrameGrid& grid, int64_t begin, int64_t end, T* rows) {
  // One contiguous range of blocks per thread, so each gather call sets up its row planes once.
  const Preprocessing& p = *module_.preprocessing;
  const int64_t parts = std::min<int64_t>(end - begin, k.kernel->threads());
  const bool still = t == 1;
  const int64_t values_per_block = grid.rows() / gather_block_count(grid, p) * k.folded.k;
  timed(profile_.gather_ms, [&] {
    k.kernel->parallelize(static_cast<size_t>(parts), [&](size_t i) {
      const auto part = static_cast<int64_t>(i);
      const int64_t first = begin + (end - begin) * part / parts;
      gather_rows(frames, t, row_stride, first_row, grid, p, module_.geometry.in_channels, still, first,
                  begin + (end - begin) * (part + 1) / parts, rows + (first - begin) * values_per_block, *forms_);
    });
  });
}

Result<const GridTerms*> Session::grid_terms(int64_t h, int64_t w) {
  return terms_.get([&](const GridTerms& t) { return t.h == h && t.w == w; },
                    [&] { return timed(profile_.setup_ms, [&] { return make_grid_terms(*encoder_, h, w); }); });
}

Result<int64_t> Session::output_rows(const FrameGrid& g) const {
  PF_CHECK(g.t >= 1 && g.h >= 1 && g.w >= 1, Code::kInvalidArgument, "grid ", g.t, "x", g.h, "x", g.w,
           ": t, h and w must be at least 1");
  if (!encoder_) return g.rows();
  PF_CHECK(g.h % encoder_->merge_size == 0 && g.w % encoder_->merge_size == 0, Code::kInvalidArgument, "grid ", g.t, "x",
           g.h, "x", g.w, ": h and w must be multiples of the merge size ", encoder_->merge_size);
  return g.t * frame_rows(*encoder_, g.h, g.w);
}

Result<WindowOrder> Session::window_order(const FrameGrid& g) const {
  PF_CHECK(module_.encoder_input.has_value(), Code::kUnsupported, "window order: module ", module_.path,
           " stores no encoder input steps (converted by a patchfuse before 0.3)");
  return patchfuse::window_order(*module_.encoder_input, g.t, g.h, g.w);
}

template <class Run>
Status Session::run_and_finish(Kernel& kernel, const FrameGrid& g, int64_t t, int64_t first, size_t n, float* output,
                               const Run& run) {
  const auto embed = static_cast<size_t>(module_.geometry.embed_dim);
  if (!encoder_) {
    return timed(profile_.kernel_ms, [&] { return run(output + static_cast<size_t>(t * g.h * g.w + first) * embed); });
  }
  PF_ASSIGN_OR_RETURN(const GridTerms* terms, grid_terms(g.h, g.w));
  float* frame_out = output + static_cast<size_t>(t * frame_rows(*encoder_, g.h, g.w)) * embed;
  float* rows = frame_out + static_cast<size_t>(encoder_->class_rows() + first) * embed;
  if (!terms->slot.empty()) rows = window_rows_.data();  // sized by prepare_chunk
  PF_RETURN_IF_ERROR(timed(profile_.kernel_ms, [&] { return run(rows); }));
  const size_t parts = std::min<size_t>(n, static_cast<size_t>(kernel.threads()));
  timed(profile_.encoder_input_ms, [&] {
    kernel.parallelize(parts, [&](size_t i) {
      const size_t begin = n * i / parts, end = n * (i + 1) / parts;
      finish_rows(*encoder_, *terms, first + static_cast<int64_t>(begin), static_cast<int64_t>(end - begin),
                  rows + begin * embed, frame_out);
    });
  });
  return {};
}

Status Session::ensure_prepared(Kernel& kernel, size_t n) {
  const std::pair<const Kernel*, size_t> plan{&kernel, n};
  if (std::find(prepared_.begin(), prepared_.end(), plan) != prepared_.end()) return {};
  const bool f32_rows = &kernel == kernel_.get() || !kernel.takes_bf16();  // the frames gather makes bf16 rows itself
  PF_RETURN_IF_ERROR(timed(profile_.setup_ms, [&] { return kernel.prepare(n, f32_rows); }));
  prepared_.push_back(plan);
  return {};
}

template <class V>
void Session::grow(V& buffer, size_t size) {
  if (buffer.size() < size) timed(profile_.setup_ms, [&] { buffer.resize(size); });
}

Status Session::prepare_chunk(Kernel& kernel, const FrameGrid& g, size_t n) {
  PF_RETURN_IF_ERROR(ensure_prepared(kernel, n));
  if (!encoder_) return {};
  PF_ASSIGN_OR_RETURN(const GridTerms* terms, grid_terms(g.h, g.w));
  if (!terms->slot.empty()) grow(window_rows_, n * static_cast<size_t>(module_.geometry.embed_dim));
  return {};
}

size_t Session::row_value_bytes(const FramesKernel& k) const {
  return precision_ == Precision::kInt8 ? 1 : k.kernel->takes_bf16() ? 2 : sizeof(float);
}

int64_t Session::chunk_blocks(const FramesKernel& k, const FrameGrid& g) const {
  const int64_t blocks = gather_block_count(g, *module_.preprocessing), blocks_per_t = blocks / g.t;
  const size_t block_bytes = static_cast<size_t>(g.rows() / blocks * k.folded.k) * row_value_bytes(k);
  return static_cast<int64_t>(std::clamp<size_t>(kChunkBytes / block_bytes, 1, static_cast<size_t>(blocks_per_t)));
}

size_t Session::band_rows(const FramesKernel& k, const FrameGrid& g) const {
  const Preprocessing& p = *module_.preprocessing;
  return static_cast<size_t>(chunk_blocks(k, g) * p.merge_size * p.patch_size);
}

template <class Gather>
Status Session::gather_and_run(FramesKernel& k, const FrameGrid& g, float* output, const Gather& gather, Pass pass) {
  // Rows in the kernel's own input type: a bf16 kernel gets bf16 rows, with no f32 pass between.
  const int64_t blocks = gather_block_count(g, *module_.preprocessing), blocks_per_t = blocks / g.t;
  const auto rows_per_block = static_cast<size_t>(g.rows() / blocks), row_values = static_cast<size_t>(k.folded.k);
  const auto chunks = [&](auto& buffer, const auto& run) -> Status {
    const int64_t per_chunk = chunk_blocks(k, g);
    grow(buffer, static_cast<size_t>(per_chunk) * rows_per_block * row_values);
    for (int64_t gt = 0; gt < g.t; ++gt) {
      for (int64_t b = gt * blocks_per_t; b < (gt + 1) * blocks_per_t; b += per_chunk) {
        const int64_t e = std::min(b + per_chunk, (gt + 1) * blocks_per_t);
        const size_t n = static_cast<size_t>(e - b) * rows_per_block;
        PF_RETURN_IF_ERROR(prepare_chunk(*k.kernel, g, n));
        if (pass == Pass::kPrepare) continue;
        gather(b, e, buffer.data());
        const auto first = static_cast<int64_t>(static_cast<size_t>(b - gt * blocks_per_t) * rows_per_block);
        PF_RETURN_IF_ERROR(run_and_finish(*k.kernel, g, gt, first, n, output, [&](float* out) { return run(buffer.data(), n, out); }));
      }
    }
    return {};
  };
  if (precision_ == Precision::kInt8) {
    return chunks(rows_u8_, [&](const uint8_t* r, size_t n, float* out) { return k.kernel->run_u8(r, n, out); });
  }
  if (k.kernel->takes_bf16()) {
    return chunks(rows_bf16_, [&](const uint16_t* r, size_t n, float* out) { return k.kernel->run_bf16(r, n, out); });
  }
  return chunks(rows_, [&](const float* r, size_t n, float* out) { return k.kernel->run(r, n, out); });
}

Status Session::run_frames(const uint8_t* const* frames, size_t t, size_t height, size_t width, size_t row_stride,
                           float* output, FrameGrid* grid) {
  PF_CHECK(frames != nullptr && output != nullptr, Code::kInvalidArgument, "run_frames: frames and output must not be null");
  PF_ASSIGN_OR_RETURN(const FrameGrid g, frames_grid(t, height, width));
  const auto channels = static_cast<size_t>(module_.geometry.in_channels);
  PF_CHECK(row_stride >= width * channels, Code::kInvalidArgument, "run_frames: row_stride_bytes ", row_stride,
           " is less than width * channels = ", width * channels);
  for (size_t f = 0; f < t; ++f) PF_CHECK(frames[f] != nullptr, Code::kInvalidArgument, "run_frames: frame ", f, " is null");
  profile_ = {};
  try {
    PF_ASSIGN_OR_RETURN(FramesKernel * k, frames_kernel(t == 1));
    PF_RETURN_IF_ERROR(gather_and_run(*k, g, output, [&](int64_t begin, int64_t end, auto* rows) {
      gather_on_threads(*k, frames, t, row_stride, 0, g, begin, end, rows);
    }, Pass::kRun));
  } catch (const std::bad_alloc&) {
    return make_error(Code::kOutOfMemory, cat("run_frames: out of memory for ", t, " frames of ", height, "x", width));
  }
  if (grid != nullptr) *grid = g;
  return {};
}

namespace {

bool same_spec(const ResizeSpec& a, const ResizeSpec& b) {
  return a.src_h == b.src_h && a.src_w == b.src_w && a.resized_h == b.resized_h && a.resized_w == b.resized_w &&
         a.top == b.top && a.left == b.left && a.out_h == b.out_h && a.out_w == b.out_w && a.filter == b.filter &&
         a.semantics == b.semantics;
}

}  // namespace

Result<const Resizer*> Session::resizer(size_t t, size_t height, size_t width) {
  PF_CHECK(module_.preprocessing.has_value(), Code::kUnsupported, "module ", module_.path,
           " has no preprocessing (convert the checkpoint with its preprocessor_config.json), so it cannot take images");
  PF_CHECK(t >= 1, Code::kInvalidArgument, "images: t = 0; at least one image is needed");
  const Preprocessing& p = *module_.preprocessing;
  PF_ASSIGN_OR_RETURN(const ResizeSpec spec, frame_resize_spec(p, t == 1 ? 0 : static_cast<int64_t>(t), height, width));
  return resizers_.get([&](const Resizer& r) { return same_spec(r.spec(), spec); },
                       [&] { return timed(profile_.setup_ms, [&] { return Resizer::create(spec, *forms_); }); });
}

size_t Session::size_resize_buffers(const Kernel& kernel, const Resizer& r, const ImageView& image, size_t frames,
                                    size_t rows) {
  const size_t parts = std::min<size_t>(r.spec().out_h, static_cast<size_t>(kernel.threads()));
  resize_scratch_.resize(std::max(resize_scratch_.size(), parts));
  for (auto& s : resize_scratch_) grow(s, r.scratch_bytes(image));
  resized_.resize(std::max(resized_.size(), frames));
  for (size_t i = 0; i < frames; ++i) grow(resized_[i], rows * r.spec().out_w * 3);
  return parts;
}

void Session::resize_on_threads(Kernel& kernel, const Resizer& r, const ImageView& image, size_t row_begin, size_t row_end,
                                uint8_t* out) {
  const size_t rows = row_end - row_begin, row_bytes = r.spec().out_w * 3;
  const size_t parts = std::min(size_resize_buffers(kernel, r, image, 0, 0), rows);
  timed(profile_.preprocess_ms, [&] {
    kernel.parallelize(parts, [&](size_t i) {
      const size_t begin = rows * i / parts;
      r.run(image, row_begin + begin, row_begin + rows * (i + 1) / parts, resize_scratch_[i].data(), out + begin * row_bytes);
    });
  });
}

size_t Session::resized_frames(size_t t) const {
  return t == 1 ? 1 : static_cast<size_t>(module_.preprocessing->temporal_patch_size);
}

Result<FrameGrid> Session::images_grid(size_t t, size_t height, size_t width) const {
  PF_CHECK(module_.preprocessing.has_value(), Code::kUnsupported, "module ", module_.path,
           " has no preprocessing (convert the checkpoint with its preprocessor_config.json), so it cannot take images");
  PF_ASSIGN_OR_RETURN(const ResizeSpec spec,
                      frame_resize_spec(*module_.preprocessing, t == 1 ? 0 : static_cast<int64_t>(t), height, width));
  return frames_grid(t, spec.out_h, spec.out_w);
}

Status Session::run_images(const ImageView* images, size_t t, float* output, FrameGrid* grid) {
  PF_CHECK(images != nullptr && output != nullptr, Code::kInvalidArgument, "run_images: images and output must not be null");
  PF_CHECK(t >= 1, Code::kInvalidArgument, "run_images: t = 0; at least one image is needed");
  for (size_t f = 0; f < t; ++f) {
    PF_RETURN_IF_ERROR(check_image(images[f], f == 0 ? "run_images: image 0" : cat("run_images: image ", f).c_str()));
    PF_CHECK(images[f].width == images[0].width && images[f].height == images[0].height &&
                 images[f].format == images[0].format,
             Code::kInvalidArgument, "run_images: image ", f, " is ", images[f].width, "x", images[f].height, " ",
             pixel_format_name(images[f].format), " but image 0 is ", images[0].width, "x", images[0].height, " ",
             pixel_format_name(images[0].format), "; a video's frames share one size and format");
  }
  profile_ = {};
  try {
    PF_ASSIGN_OR_RETURN(const Resizer* r, resizer(t, images[0].height, images[0].width));
    const ResizeSpec& spec = r->spec();
    PF_ASSIGN_OR_RETURN(const FrameGrid g, frames_grid(t, spec.out_h, spec.out_w));
    PF_ASSIGN_OR_RETURN(FramesKernel * k, frames_kernel(t == 1));
    // A chunk's blocks are rows of merge groups of one time step, which read only the band of
    // image rows they cover in that step's temporal_patch_size frames: each chunk resizes just
    // that band of each frame into band-sized buffers and gathers from them. A whole resized 720p
    // frame was 2.8 MB of fresh pages to a cold session; a band is about a third of it.
    const Preprocessing& p = *module_.preprocessing;
    const size_t tps = resized_frames(t);
    size_resize_buffers(*k->kernel, *r, images[0], tps, band_rows(*k, g));
    std::vector<const uint8_t*> frames(t, nullptr);
    const int64_t blocks_per_t = gather_block_count(g, p) / g.t;
    const auto block_rows = static_cast<size_t>(p.merge_size * p.patch_size);
    PF_RETURN_IF_ERROR(gather_and_run(*k, g, output, [&](int64_t begin, int64_t end, auto* rows) {
      const int64_t gt = begin / blocks_per_t;  // a chunk's blocks are of one time step
      const size_t y0 = static_cast<size_t>(begin - gt * blocks_per_t) * block_rows;
      const size_t y1 = static_cast<size_t>(end - gt * blocks_per_t) * block_rows;
      std::fill(frames.begin(), frames.end(), nullptr);
      for (size_t i = 0; i < tps; ++i) {
        const size_t f = std::min(static_cast<size_t>(gt) * tps + i, t - 1);  // an odd count repeats the last
        if (frames[f] != nullptr) continue;
        resize_on_threads(*k->kernel, *r, images[f], y0, y1, resized_[i].data());
        frames[f] = resized_[i].data();
      }
      gather_on_threads(*k, frames.data(), t, spec.out_w * 3, y0, g, begin, end, rows);
    }, Pass::kRun));
    if (grid != nullptr) *grid = g;
  } catch (const std::bad_alloc&) {
    return make_error(Code::kOutOfMemory, cat("run_images: out of memory for ", t, " images of ", images[0].width, "x",
                                              images[0].height));
  }
  return {};
}

Status Session::preprocess(const ImageView& image, size_t t, uint8_t* out, size_t capacity, size_t* height,
                           size_t* width) {
  PF_CHECK(height != nullptr && width != nullptr, Code::kInvalidArgument, "preprocess: height and width must not be null");
  PF_RETURN_IF_ERROR(check_image(image, "preprocess"));
  profile_ = {};
  try {
    PF_ASSIGN_OR_RETURN(const Resizer* r, resizer(t, image.height, image.width));
    const ResizeSpec& spec = r->spec();
    *height = spec.out_h;
    *width = spec.out_w;
    PF_CHECK(out != nullptr && capacity >= spec.out_h * spec.out_w * 3, Code::kInvalidArgument, "preprocess: the ", spec.out_h, "x",
             spec.out_w, " frame takes ", spec.out_h * spec.out_w * 3, " bytes; capacity is ", capacity);
    resize_on_threads(main_kernel(), *r, image, 0, spec.out_h, out);
  } catch (const std::bad_alloc&) {
    return make_error(Code::kOutOfMemory, cat("preprocess: out of memory for a ", image.width, "x", image.height, " image"));
  }
  return {};
}

Status Session::run(const float* input, size_t n, float* output) {
  PF_CHECK(input != nullptr && output != nullptr, Code::kInvalidArgument, "run: input and output must not be null");
  PF_CHECK(precision_ != Precision::kInt8, Code::kUnsupported,
           "run: precision int8 takes frames only (pf_session_run_frames): float pixel_values would need a lossy "
           "quantization of the inputs, while uint8 pixels are exact");
  PF_CHECK(n > 0, Code::kInvalidArgument, "run: N = 0; at least one patch is needed");
  PF_CHECK(!encoder_, Code::kInvalidArgument, "run: output stage encoder-input needs the rows' grid (image_grid_thw) ",
           "for its position terms and row order: use pf_session_run_grid");
  const auto in_count = checked_mul(n, static_cast<uint64_t>(module_.patch_volume));
  const auto out_count = checked_mul(n, static_cast<uint64_t>(module_.geometry.embed_dim));
  PF_CHECK(in_count && out_count && *in_count <= SIZE_MAX / sizeof(float) && *out_count <= SIZE_MAX / sizeof(float),
           Code::kInvalidArgument, "run: N = ", n, " patches of ", module_.patch_volume, " floats overflow the address space");
  const auto* in_begin = reinterpret_cast<const char*>(input);
  const auto* out_begin = reinterpret_cast<const char*>(output);
  const bool overlap = in_begin < out_begin + *out_count * sizeof(float) && out_begin < in_begin + *in_count * sizeof(float);
  PF_CHECK(!overlap, Code::kInvalidArgument, "run: output overlaps input");
  profile_ = {};
  try {
    PF_ASSIGN_OR_RETURN(Kernel * kernel, rows_kernel());
    PF_RETURN_IF_ERROR(ensure_prepared(*kernel, n));
    return timed(profile_.kernel_ms, [&] { return kernel->run(input, n, output); });
  } catch (const std::bad_alloc&) {
    return make_error(Code::kOutOfMemory, cat("run: out of memory for N = ", n));
  }
}

Status Session::run_grid(const float* input, const FrameGrid& g, float* output) {
  PF_CHECK(input != nullptr && output != nullptr, Code::kInvalidArgument, "run_grid: input and output must not be null");
  PF_CHECK(precision_ != Precision::kInt8, Code::kUnsupported,
           "run_grid: precision int8 takes frames only: float pixel_values would need a lossy quantization");
  PF_ASSIGN_OR_RETURN(const int64_t out_rows, output_rows(g));
  if (!encoder_) return run(input, static_cast<size_t>(g.rows()), output);
  PF_CHECK(g.t <= (int64_t{1} << 20) && g.h <= (int64_t{1} << 20) && g.w <= (int64_t{1} << 20), Code::kInvalidArgument,
           "run_grid: grid ", g.t, "x", g.h, "x", g.w, " must have sides of at most 2^20");
  const auto k = static_cast<size_t>(module_.patch_volume);
  PF_CHECK(checked_mul(static_cast<uint64_t>(g.rows()), k).value_or(UINT64_MAX) <= SIZE_MAX / sizeof(float),
           Code::kInvalidArgument, "run_grid: grid ", g.t, "x", g.h, "x", g.w, " overflows the address space");
  const auto* in_begin = reinterpret_cast<const char*>(input);
  const auto* out_begin = reinterpret_cast<const char*>(output);
  const size_t in_bytes = static_cast<size_t>(g.rows()) * k * sizeof(float);
  const size_t out_bytes = static_cast<size_t>(out_rows) * static_cast<size_t>(module_.geometry.embed_dim) * sizeof(float);
  PF_CHECK(!(in_begin < out_begin + out_bytes && out_begin < in_begin + in_bytes), Code::kInvalidArgument,
           "run_grid: output overlaps input");
  profile_ = {};
  try {
    return grid_chunks(input, g, output, Pass::kRun);
  } catch (const std::bad_alloc&) {
    return make_error(Code::kOutOfMemory, cat("run_grid: out of memory for grid ", g.t, "x", g.h, "x", g.w));
  }
}

Status Session::grid_chunks(const float* input, const FrameGrid& g, float* output, Pass pass) {
  PF_ASSIGN_OR_RETURN(Kernel * kernel, rows_kernel());
  const auto k = static_cast<size_t>(module_.patch_volume);
  const auto rows_per_frame = static_cast<size_t>(g.h * g.w);
  // A chunk of about kChunkBytes of input rows at a time, so the epilogue finds the kernel's
  // output rows in cache; whole rows of merge blocks, so window slots stay within a frame.
  const auto block = static_cast<size_t>(encoder_->merge_size * encoder_->merge_size);
  const size_t per_chunk = std::clamp<size_t>(kChunkBytes / (k * sizeof(float)) / block, 1, rows_per_frame / block) * block;
  for (int64_t t = 0; t < g.t; ++t) {
    for (size_t first = 0; first < rows_per_frame; first += per_chunk) {
      const size_t n = std::min(per_chunk, rows_per_frame - first);
      PF_RETURN_IF_ERROR(prepare_chunk(*kernel, g, n));
      if (pass == Pass::kPrepare) continue;
      const float* in = input + (static_cast<size_t>(t) * rows_per_frame + first) * k;
      PF_RETURN_IF_ERROR(run_and_finish(*kernel, g, t, static_cast<int64_t>(first), n, output,
                                        [&](float* out) { return kernel->run(in, n, out); }));
    }
  }
  return {};
}

// The prepare calls do a run's one-time work without running: kernels, tables, buffers (first
// touched as they are sized), each chunk size's plan and the grid terms. The grid terms add to the
// profile, which is put back: the last profile stays the last run's.
Status Session::prepare_rows(const FrameGrid& g) {
  PF_CHECK(precision_ != Precision::kInt8, Code::kUnsupported,
           "prepare: precision int8 takes frames only, so there are no pixel_values rows to prepare");
  PF_RETURN_IF_ERROR(output_rows(g));
  const RunProfile kept = profile_;
  try {
    PF_ASSIGN_OR_RETURN(Kernel * kernel, rows_kernel());
    start_threads(*kernel);
    Status s = encoder_ ? grid_chunks(nullptr, g, nullptr, Pass::kPrepare) : ensure_prepared(*kernel, static_cast<size_t>(g.rows()));
    profile_ = kept;
    return s;
  } catch (const std::bad_alloc&) {
    return make_error(Code::kOutOfMemory, cat("prepare: out of memory for grid ", g.t, "x", g.h, "x", g.w));
  }
}

void Session::start_threads(Kernel& kernel) {
  kernel.parallelize(static_cast<size_t>(kernel.threads()), [](size_t) {});
}

Status Session::prepare_frames(size_t t, size_t height, size_t width) {
  PF_CHECK(t >= 1, Code::kInvalidArgument, "prepare: t = 0; at least one frame is needed");
  PF_ASSIGN_OR_RETURN(const FrameGrid g, frames_grid(t, height, width));
  PF_RETURN_IF_ERROR(output_rows(g));
  const RunProfile kept = profile_;
  try {
    PF_ASSIGN_OR_RETURN(FramesKernel * k, frames_kernel(t == 1));
    start_threads(*k->kernel);
    Status s = gather_and_run(*k, g, nullptr, [](int64_t, int64_t, auto*) {}, Pass::kPrepare);
    profile_ = kept;
    return s;
  } catch (const std::bad_alloc&) {
    return make_error(Code::kOutOfMemory, cat("prepare: out of memory for ", t, " frames of ", height, "x", width));
  }
}

Status Session::prepare_images(PixelFormat format, size_t t, size_t height, size_t width) {
  PF_CHECK(t >= 1, Code::kInvalidArgument, "prepare: t = 0; at least one image is needed");
  PF_CHECK(height >= 1 && width >= 1 && height <= kMaxImageSide && width <= kMaxImageSide, Code::kInvalidArgument,
           "prepare: image size ", height, "x", width, " must be 1..", kMaxImageSide, " per side");
  PF_ASSIGN_OR_RETURN(const FrameGrid g, images_grid(t, height, width));
  PF_RETURN_IF_ERROR(output_rows(g));
  const RunProfile kept = profile_;
  try {
    PF_ASSIGN_OR_RETURN(const Resizer* r, resizer(t, height, width));
    PF_ASSIGN_OR_RETURN(FramesKernel * k, frames_kernel(t == 1));
    start_threads(*k->kernel);
    size_resize_buffers(*k->kernel, *r, packed_image(format, nullptr, width, height), resized_frames(t), band_rows(*k, g));
    Status s = gather_and_run(*k, g, nullptr, [](int64_t, int64_t, auto*) {}, Pass::kPrepare);
    profile_ = kept;
    return s;
  } catch (const std::bad_alloc&) {
    return make_error(Code::kOutOfMemory, cat("prepare: out of memory for ", t, " images of ", height, "x", width));
  }
}

}  // namespace patchfuse
