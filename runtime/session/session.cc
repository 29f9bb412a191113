// Session: options and creation, the entry points and their checks (session.h). The rooms
// behind them: session_kernels.cc (per-model work), session_sizes.cc (per-size state) and
// session_run.cc (the run paths).
#include "runtime/session/session.h"

#include <cstring>
#include <new>

#include "runtime/core/checked_math.h"
#include "runtime/frames/gather.h"
#include "runtime/session/timed.h"

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
  } else if (b.supports(native, o.fused, &why) && b.outruns_f32(native, &why)) {
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
                            gather_kernel(forms, module.geometry.in_channels, p->patch_size,
                                          s->precision_ == Precision::kInt8));
  }
  return s;
}

Result<FrameGrid> Session::frames_grid(size_t t, size_t height, size_t width) const {
  PF_CHECK(module_.preprocessing.has_value(), Code::kUnsupported, "module ", module_.path,
           " has no preprocessing (convert the checkpoint with its preprocessor_config.json), so it cannot take frames");
  return frame_grid(*module_.preprocessing, t, height, width);
}

Result<int64_t> Session::output_rows(const FrameGrid& g) const {
  // Sides of at most 2^20 keep t * h * w well inside int64 (and every grid a processor makes inside them).
  const auto side = [](int64_t s) { return s >= 1 && s <= (int64_t{1} << 20); };
  PF_CHECK(side(g.t) && side(g.h) && side(g.w), Code::kInvalidArgument, "grid ", g.t, "x", g.h, "x", g.w,
           ": t, h and w must be 1 to 2^20");
  if (!encoder_) return g.rows();
  PF_CHECK(g.h % encoder_->merge_size == 0 && g.w % encoder_->merge_size == 0, Code::kInvalidArgument, "grid ", g.t, "x",
           g.h, "x", g.w, ": h and w must be multiples of the merge size ", encoder_->merge_size);
  return g.t * frame_rows(*encoder_, g.h, g.w);
}

Result<WindowOrder> Session::window_order(const FrameGrid& g) const {
  PF_RETURN_IF_ERROR(window_counts(g));  // the model stores the steps
  return patchfuse::window_order(*module_.encoder_input, g.t, g.h, g.w);
}

Result<WindowCounts> Session::window_counts(const FrameGrid& g) const {
  PF_CHECK(module_.encoder_input.has_value(), Code::kUnsupported, "window order: module ", module_.path,
           " stores no encoder input steps (converted by a patchfuse before 0.3)");
  return patchfuse::window_counts(*module_.encoder_input, g.t, g.h, g.w);
}

Result<std::vector<BlockInputDesc>> Session::block_inputs(const FrameGrid& g) const {
  PF_CHECK(module_.blocks.has_value(), Code::kUnsupported, "block inputs: module ", module_.path,
           " stores no block schedule (converted by a patchfuse before 0.6): convert the checkpoint again");
  return patchfuse::block_inputs(*module_.blocks, *module_.encoder_input, g);
}

Status Session::block_input(const std::string& name, const FrameGrid& g, void* out, size_t capacity) {
  PF_RETURN_IF_ERROR(block_inputs(g));  // the model stores the schedule
  // The name and the buffer before the grid's tables, which can be large.
  PF_RETURN_IF_ERROR(find_block_input(*module_.blocks, *module_.encoder_input, name, g, out, capacity));
  const RunProfile kept = profile_;  // not a run: the last profile stays the last run's
  try {
    Result<const BlockTables*> tables = block_tables(g.h, g.w);
    profile_ = kept;
    if (!tables.ok()) return tables.error();
    return fill_block_input(*module_.blocks, *module_.encoder_input, **tables, name, g, model_dtype(), out, capacity);
  } catch (const std::bad_alloc&) {
    return make_error(Code::kOutOfMemory, cat("block input ", name, ": out of memory for grid ", g.t, "x", g.h, "x", g.w));
  }
}

DType Session::model_dtype() const {
  switch (precision_) {
    case Precision::kBF16: return DType::kBF16;
    case Precision::kF16: return DType::kF16;
    case Precision::kF32:
    case Precision::kInt8: break;  // int8 computes exactly what an f32 model would
  }
  return DType::kF32;
}

Result<FrameGrid> Session::images_grid(size_t t, size_t height, size_t width) const {
  PF_CHECK(module_.preprocessing.has_value(), Code::kUnsupported, "module ", module_.path,
           " has no preprocessing (convert the checkpoint with its preprocessor_config.json), so it cannot take images");
  PF_RETURN_IF_ERROR(check_image_size(width, height, "images"));
  PF_ASSIGN_OR_RETURN(const ResizeSpec spec,
                      frame_resize_spec(*module_.preprocessing, t == 1 ? 0 : static_cast<int64_t>(t), height, width));
  return frames_grid(t, spec.out_h, spec.out_w);
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
  PF_RETURN_IF_ERROR(check_call_rows(n));  // before the overlap check, whose sizes it bounds
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
  if (!encoder_) {
    PF_RETURN_IF_ERROR(check_call_rows(static_cast<uint64_t>(g.rows())));  // before the cast (armhf)
    return run(input, static_cast<size_t>(g.rows()), output);
  }
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

// The prepare calls do a run's one-time work without running: kernels, tables, buffers (first
// touched as they are sized), each chunk size's plan and the grid terms. The grid terms add to the
// profile, which is put back: the last profile stays the last run's.
Status Session::prepare_rows(const FrameGrid& g) {
  PF_CHECK(precision_ != Precision::kInt8, Code::kUnsupported,
           "prepare: precision int8 takes frames only, so there are no pixel_values rows to prepare");
  PF_RETURN_IF_ERROR(prepare_grid(g));
  const RunProfile kept = profile_;
  try {
    PF_ASSIGN_OR_RETURN(Kernel * kernel, rows_kernel());
    start_threads(*kernel);
    if (!encoder_) PF_RETURN_IF_ERROR(check_call_rows(static_cast<uint64_t>(g.rows())));  // before the cast (armhf)
    Status s = encoder_ ? grid_chunks(nullptr, g, nullptr, Pass::kPrepare) : ensure_prepared(*kernel, static_cast<size_t>(g.rows()));
    profile_ = kept;
    return s;
  } catch (const std::bad_alloc&) {
    return make_error(Code::kOutOfMemory, cat("prepare: out of memory for grid ", g.t, "x", g.h, "x", g.w));
  }
}

}  // namespace patchfuse
