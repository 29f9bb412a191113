// The C ABI over the C++ runtime. Every entry point catches everything: no exception crosses
// this file, and each failure leaves its message in the calling thread's pf_last_error().
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <exception>
#include <new>
#include <optional>

#include "patchfuse/patchfuse.h"
#include "runtime/api/c_api_internal.h"

namespace patchfuse::capi {

namespace {
thread_local std::string last_error;
}  // namespace

static pf_status to_status(Code code) {
  switch (code) {
    case Code::kOk: return PF_OK;
    case Code::kInvalidArgument: return PF_INVALID_ARGUMENT;
    case Code::kInvalidModel: return PF_INVALID_MODEL;
    case Code::kUnsupported: return PF_UNSUPPORTED;
    case Code::kIoError: return PF_IO_ERROR;
    case Code::kOutOfMemory: return PF_OUT_OF_MEMORY;
    case Code::kInternal: return PF_INTERNAL;
  }
  return PF_INTERNAL;
}

pf_status fail(const Error& e) {
  last_error = e.message;
  return to_status(e.code);
}

pf_status fail(pf_status s, std::string message) {
  last_error = std::move(message);
  return s;
}

}  // namespace patchfuse::capi

namespace {

using namespace patchfuse;
using namespace patchfuse::capi;

pf_status finish_model(std::unique_ptr<pf_model> m, pf_model** out) {
  for (const ModuleView& mod : m->view.modules) {
    m->families.emplace_back(mod.family->name);
    m->encoder_inputs.push_back(mod.encoder_input ? mod.encoder_input->describe() : std::string());
  }
  *out = m.release();
  return PF_OK;
}

std::optional<BackendId> to_backend(pf_backend b) {
  switch (b) {
    case PF_BACKEND_AUTO: return std::nullopt;
    case PF_BACKEND_REFERENCE: return BackendId::kReference;
    case PF_BACKEND_ONEDNN: return BackendId::kOneDnn;
    case PF_BACKEND_XNNPACK: return BackendId::kXnnpack;
    case PF_BACKEND_GEMMLOWP: return BackendId::kGemmlowp;
  }
  return std::nullopt;
}

pf_backend from_backend(BackendId b) {
  switch (b) {
    case BackendId::kReference: return PF_BACKEND_REFERENCE;
    case BackendId::kOneDnn: return PF_BACKEND_ONEDNN;
    case BackendId::kXnnpack: return PF_BACKEND_XNNPACK;
    case BackendId::kGemmlowp: return PF_BACKEND_GEMMLOWP;
  }
  return PF_BACKEND_REFERENCE;
}

// The checks a C caller's image needs before it is a view (check_image does the rest).
Result<ImageView> to_view(const char* fn, const pf_image* image) {
  PF_CHECK(image != nullptr, Code::kInvalidArgument, fn, ": image must not be null");
  PF_RETURN_IF_ERROR(check_image_signs(image->width, image->height, image->chroma_pixel_stride, image->row_stride_bytes, fn));
  PF_CHECK(static_cast<uint32_t>(image->format) <= PF_PIXEL_YUYV && static_cast<uint32_t>(image->matrix) <= PF_COLOR_BT709_LIMITED,
           Code::kInvalidArgument, fn, ": pixel format ", static_cast<int>(image->format), " or colour matrix ",
           static_cast<int>(image->matrix), " is not one of pf_pixel_format / pf_color_matrix");
  ImageView v;
  v.format = static_cast<PixelFormat>(image->format);
  v.matrix = static_cast<ColorMatrix>(image->matrix);
  v.width = static_cast<size_t>(std::min<int64_t>(image->width, INT32_MAX));
  v.height = static_cast<size_t>(std::min<int64_t>(image->height, INT32_MAX));
  v.chroma_pixel_stride = image->chroma_pixel_stride == 0 ? 1 : static_cast<size_t>(image->chroma_pixel_stride);
  for (int p = 0; p < 3; ++p) {
    v.planes[p] = image->planes[p];
    v.row_stride[p] = static_cast<size_t>(image->row_stride_bytes[p]);
  }
  PF_RETURN_IF_ERROR(check_image(v, fn));
  return v;
}

pf_precision from_precision(Precision p) {
  switch (p) {
    case Precision::kF32: return PF_PRECISION_F32;
    case Precision::kBF16: return PF_PRECISION_BF16;
    case Precision::kF16: return PF_PRECISION_F16;
    case Precision::kInt8: return PF_PRECISION_INT8;
  }
  return PF_PRECISION_F32;
}

// pf_model_frame_size and pf_model_video_frame_size: the checks they share around `target`.
template <typename Target>
pf_status frame_size(const char* fn, const pf_model* model, size_t module_index, int64_t* height_out,
                     int64_t* width_out, Target target) {
  return guarded(fn, [&] {
    if (model == nullptr || height_out == nullptr || width_out == nullptr) {
      return fail(PF_INVALID_ARGUMENT, cat(fn, ": null argument"));
    }
    if (module_index >= model->view.modules.size()) {
      return fail(PF_INVALID_ARGUMENT, cat(fn, ": module index ", module_index, " is out of range"));
    }
    const ModuleView& m = model->view.modules[module_index];
    if (!m.preprocessing) {
      return fail(PF_UNSUPPORTED, cat("module ", m.path, " has no preprocessing (convert the checkpoint with its "
                                      "preprocessor_config.json)"));
    }
    Result<std::pair<int64_t, int64_t>> size = target(*m.preprocessing);
    if (!size.ok()) return fail(size.error());
    *height_out = size->first;
    *width_out = size->second;
    return PF_OK;
  });
}

}  // namespace

extern "C" {

const char* pf_last_error(void) { return last_error.c_str(); }

const char* pf_status_name(pf_status status) {
  switch (status) {
    case PF_OK: return "ok";
    case PF_INVALID_ARGUMENT: return "invalid argument";
    case PF_INVALID_MODEL: return "invalid model";
    case PF_UNSUPPORTED: return "unsupported";
    case PF_IO_ERROR: return "I/O error";
    case PF_OUT_OF_MEMORY: return "out of memory";
    case PF_INTERNAL: return "internal error";
  }
  return "unknown status";
}

const char* pf_backend_name(pf_backend backend) {
  if (backend == PF_BACKEND_AUTO) return "auto";
  const std::optional<BackendId> id = to_backend(backend);
  return id ? backend_id_name(*id) : "unknown";
}

int pf_backend_available(pf_backend backend) {
  try {
    if (backend == PF_BACKEND_AUTO) return 1;
    const std::optional<BackendId> id = to_backend(backend);
    const Backend* b = id ? find_backend(*id) : nullptr;
    return b != nullptr && b->available(nullptr) ? 1 : 0;
  } catch (...) {
    return 0;
  }
}

const char* pf_version(void) { return PATCHFUSE_VERSION; }

pf_status pf_model_open_file(const char* path, pf_model** out) {
  return guarded("pf_model_open_file", [&] {
    if (path == nullptr || out == nullptr) return fail(PF_INVALID_ARGUMENT, "pf_model_open_file: path and out must not be null");
    *out = nullptr;
    Result<ModelFile> f = open_model_file(path);
    if (!f.ok()) return fail(f.error());
    auto m = std::make_unique<pf_model>();
    m->file.emplace(std::move(f->file));
    m->view = std::move(f->view);
    return finish_model(std::move(m), out);
  });
}

pf_status pf_model_open_memory(const void* data, size_t size, pf_model** out) {
  return guarded("pf_model_open_memory", [&] {
    if (data == nullptr || out == nullptr) return fail(PF_INVALID_ARGUMENT, "pf_model_open_memory: data and out must not be null");
    *out = nullptr;
    Result<ModelView> v = read_model(static_cast<const uint8_t*>(data), size, "model in memory");
    if (!v.ok()) return fail(v.error());
    auto m = std::make_unique<pf_model>();
    m->view = std::move(v).value();
    return finish_model(std::move(m), out);
  });
}

void pf_model_release(pf_model* model) { delete model; }

pf_status pf_model_module_count(const pf_model* model, size_t* out) {
  if (model == nullptr || out == nullptr) return fail(PF_INVALID_ARGUMENT, "pf_model_module_count: null argument");
  *out = model->view.modules.size();
  return PF_OK;
}

pf_status pf_model_get_module(const pf_model* model, size_t index, pf_module_info* out) {
  if (model == nullptr || out == nullptr) return fail(PF_INVALID_ARGUMENT, "pf_model_get_module: null argument");
  if (index >= model->view.modules.size()) {
    return fail(PF_INVALID_ARGUMENT, cat("pf_model_get_module: index ", index, " is out of range (the model has ",
                                         model->view.modules.size(), " modules)"));
  }
  const ModuleView& m = model->view.modules[index];
  const ConvGeometry& g = m.geometry;
  pf_module_info i{};
  i.path = m.path.c_str();
  i.family = model->families[index].c_str();
  i.layout = m.layout == Layout::kFusedLinear ? PF_LAYOUT_FUSED_LINEAR : PF_LAYOUT_ORIGINAL_CONV;
  i.dtype = static_cast<pf_dtype>(m.dtype);
  i.spatial_rank = static_cast<int32_t>(g.kernel.size());
  for (size_t d = 0; d < g.kernel.size() && d < 3; ++d) {
    i.kernel[d] = static_cast<int32_t>(g.kernel[d]);
    i.stride[d] = static_cast<int32_t>(g.stride[d]);
    i.padding[d] = static_cast<int32_t>(g.padding[d]);
    i.dilation[d] = static_cast<int32_t>(g.dilation[d]);
  }
  i.groups = static_cast<int32_t>(g.groups);
  i.in_channels = static_cast<int32_t>(g.in_channels);
  i.embed_dim = static_cast<int32_t>(g.embed_dim);
  i.patch_volume = m.patch_volume;
  i.has_bias = m.bias.has_value() ? 1 : 0;
  i.eligible = eligibility_violations(g).empty() ? 1 : 0;
  i.has_preprocessing = m.preprocessing.has_value() ? 1 : 0;
  i.encoder_input = m.encoder_input ? model->encoder_inputs[index].c_str() : nullptr;
  i.class_rows = m.encoder_input ? static_cast<int32_t>(m.encoder_input->class_rows()) : 0;
  *out = i;
  return PF_OK;
}

pf_status pf_model_find_module(const pf_model* model, const char* path, size_t* index_out) {
  if (model == nullptr || path == nullptr || index_out == nullptr) {
    return fail(PF_INVALID_ARGUMENT, "pf_model_find_module: null argument");
  }
  return guarded("pf_model_find_module", [&] {
    std::string known;
    for (size_t i = 0; i < model->view.modules.size(); ++i) {
      if (model->view.modules[i].path == path) {
        *index_out = i;
        return PF_OK;
      }
      known += (i ? ", " : "") + model->view.modules[i].path;
    }
    return fail(PF_INVALID_ARGUMENT, cat("no module '", path, "' in the model (it has: ", known, ")"));
  });
}

void pf_session_options_init(pf_session_options* options) {
  if (options == nullptr) return;
  options->backend = PF_BACKEND_AUTO;
  options->threads = 1;
  options->precision = PF_PRECISION_AUTO;
  options->path = PF_PATH_FUSED;
  options->output_stage = PF_OUTPUT_PATCHES;
  options->weights_cache = nullptr;
}

pf_status pf_session_create(const pf_model* model, size_t module_index, const pf_session_options* options,
                            pf_session** out) {
  return guarded("pf_session_create", [&] {
    if (model == nullptr || out == nullptr) return fail(PF_INVALID_ARGUMENT, "pf_session_create: model and out must not be null");
    *out = nullptr;
    if (module_index >= model->view.modules.size()) {
      return fail(PF_INVALID_ARGUMENT, cat("pf_session_create: module index ", module_index,
                                           " is out of range (the model has ", model->view.modules.size(), ")"));
    }
    pf_session_options o;
    pf_session_options_init(&o);
    if (options != nullptr) o = *options;
    SessionOptions so;
    if (o.backend < PF_BACKEND_AUTO || o.backend > PF_BACKEND_GEMMLOWP) {
      return fail(PF_INVALID_ARGUMENT, cat("pf_session_create: backend value ", static_cast<int>(o.backend), " is not a pf_backend"));
    }
    so.backend = to_backend(o.backend);
    so.threads = o.threads;
    switch (o.precision) {
      case PF_PRECISION_AUTO: break;
      case PF_PRECISION_F32: so.precision = Precision::kF32; break;
      case PF_PRECISION_BF16: so.precision = Precision::kBF16; break;
      case PF_PRECISION_F16: so.precision = Precision::kF16; break;
      case PF_PRECISION_INT8: so.precision = Precision::kInt8; break;
      default:
        return fail(PF_INVALID_ARGUMENT, cat("pf_session_create: precision value ", static_cast<int>(o.precision),
                                             " is not a pf_precision"));
    }
    if (o.path != PF_PATH_FUSED && o.path != PF_PATH_UNFUSED) {
      return fail(PF_INVALID_ARGUMENT, cat("pf_session_create: path value ", static_cast<int>(o.path), " is not a pf_path"));
    }
    so.fused = o.path == PF_PATH_FUSED;
    if (o.output_stage != PF_OUTPUT_PATCHES && o.output_stage != PF_OUTPUT_ENCODER_INPUT) {
      return fail(PF_INVALID_ARGUMENT, cat("pf_session_create: output_stage value ", static_cast<int>(o.output_stage),
                                           " is not a pf_output_stage"));
    }
    so.output_stage = o.output_stage == PF_OUTPUT_ENCODER_INPUT ? OutputStage::kEncoderInput : OutputStage::kPatches;
    if (o.weights_cache != nullptr) {
      so.weights_cache = o.weights_cache;
      if (so.weights_cache.empty()) return fail(PF_INVALID_ARGUMENT, "pf_session_create: weights_cache is \"\" (NULL for none)");
    }
    Result<std::unique_ptr<Session>> s = Session::create(model->view.modules[module_index], so);
    if (!s.ok()) return fail(s.error());
    const ModuleView& m = model->view.modules[module_index];
    *out = new pf_session{std::move(s).value(), &m, m.blocks ? m.blocks->schedule(*m.encoder_input) : std::string()};
    return PF_OK;
  });
}

pf_status pf_session_run(pf_session* session, const float* input, size_t n, float* output) {
  if (session == nullptr) return fail(PF_INVALID_ARGUMENT, "pf_session_run: session must not be null");
  return guarded("pf_session_run", [&] {
    Status s = session->session->run(input, n, output);
    return s.ok() ? PF_OK : fail(s.error());
  });
}

pf_status pf_session_prepare(pf_session* session, const pf_input_shape* shape) {
  if (session == nullptr || shape == nullptr) return fail(PF_INVALID_ARGUMENT, "pf_session_prepare: session and shape must not be null");
  return guarded("pf_session_prepare", [&] {
    Session& s = *session->session;
    const bool sized = shape->height >= 1 && shape->width >= 1;
    const auto h = static_cast<size_t>(std::max<int64_t>(shape->height, 0)), w = static_cast<size_t>(std::max<int64_t>(shape->width, 0));
    Status st;
    switch (shape->kind) {
      case PF_INPUT_PIXEL_VALUES: st = s.prepare_rows(FrameGrid{shape->grid.t, shape->grid.h, shape->grid.w}); break;
      case PF_INPUT_FRAMES:
      case PF_INPUT_IMAGES:
        if (!sized) {
          return fail(PF_INVALID_ARGUMENT, cat("pf_session_prepare: frame size ", shape->height, "x", shape->width,
                                               " must be positive"));
        }
        if (shape->kind == PF_INPUT_FRAMES) {
          st = s.prepare_frames(shape->t, h, w);
        } else if (static_cast<uint32_t>(shape->format) > PF_PIXEL_YUYV) {
          return fail(PF_INVALID_ARGUMENT, cat("pf_session_prepare: pixel format ", static_cast<int>(shape->format),
                                               " is not a pf_pixel_format"));
        } else {
          st = s.prepare_images(static_cast<PixelFormat>(shape->format), shape->t, h, w);
        }
        break;
      default:
        return fail(PF_INVALID_ARGUMENT, cat("pf_session_prepare: kind ", static_cast<int>(shape->kind), " is not a pf_input_kind"));
    }
    return st.ok() ? PF_OK : fail(st.error());
  });
}

pf_status pf_session_run_grid(pf_session* session, const float* input, const pf_grid* grid, float* output) {
  if (session == nullptr || grid == nullptr) return fail(PF_INVALID_ARGUMENT, "pf_session_run_grid: session and grid must not be null");
  return guarded("pf_session_run_grid", [&] {
    Status s = session->session->run_grid(input, FrameGrid{grid->t, grid->h, grid->w}, output);
    return s.ok() ? PF_OK : fail(s.error());
  });
}

pf_status pf_session_output_rows(const pf_session* session, const pf_grid* grid, int64_t* rows_out) {
  if (session == nullptr || grid == nullptr || rows_out == nullptr) {
    return fail(PF_INVALID_ARGUMENT, "pf_session_output_rows: null argument");
  }
  return guarded("pf_session_output_rows", [&] {
    Result<int64_t> rows = session->session->output_rows(FrameGrid{grid->t, grid->h, grid->w});
    if (!rows.ok()) return fail(rows.error());
    *rows_out = *rows;
    return PF_OK;
  });
}

pf_status pf_session_get_info(const pf_session* session, pf_session_info* out) {
  if (session == nullptr || out == nullptr) return fail(PF_INVALID_ARGUMENT, "pf_session_get_info: null argument");
  const Session& s = *session->session;
  out->backend = from_backend(s.backend().id);
  out->precision = from_precision(s.precision());
  out->path = s.fused() ? PF_PATH_FUSED : PF_PATH_UNFUSED;
  out->threads = s.threads();
  out->output_stage = s.output_stage() == OutputStage::kEncoderInput ? PF_OUTPUT_ENCODER_INPUT : PF_OUTPUT_PATCHES;
  out->detail = s.detail().c_str();
  out->note = s.note().c_str();
  out->isa = s.isa().c_str();
  out->weights_cache = s.weights_cache_report().c_str();
  out->frame_kernels = s.frame_kernels().c_str();
  return PF_OK;
}

pf_status pf_session_last_profile(const pf_session* session, pf_run_profile* out) {
  if (session == nullptr || out == nullptr) return fail(PF_INVALID_ARGUMENT, "pf_session_last_profile: null argument");
  const RunProfile& p = session->session->last_profile();
  *out = {p.preprocess_ms, p.gather_ms, p.kernel_ms, p.encoder_input_ms, p.setup_ms};
  return PF_OK;
}

pf_status pf_model_frame_size(const pf_model* model, size_t module_index, int64_t height, int64_t width,
                               int64_t* height_out, int64_t* width_out) {
  return frame_size("pf_model_frame_size", model, module_index, height_out, width_out,
                    [&](const Preprocessing& p) { return resize_target(p, height, width); });
}

pf_status pf_model_video_frame_size(const pf_model* model, size_t module_index, size_t frames, int64_t height,
                                     int64_t width, int64_t* height_out, int64_t* width_out) {
  return frame_size("pf_model_video_frame_size", model, module_index, height_out, width_out, [&](const Preprocessing& p) {
    return video_resize_target(p, static_cast<int64_t>(std::min<uint64_t>(frames, INT64_MAX)), height, width);
  });
}

pf_status pf_session_frames_grid(const pf_session* session, size_t t, size_t height, size_t width, pf_grid* grid_out) {
  if (session == nullptr || grid_out == nullptr) return fail(PF_INVALID_ARGUMENT, "pf_session_frames_grid: null argument");
  return guarded("pf_session_frames_grid", [&] {
    Result<FrameGrid> g = session->session->frames_grid(t, height, width);
    if (!g.ok()) return fail(g.error());
    *grid_out = pf_grid{g->t, g->h, g->w};
    return PF_OK;
  });
}

pf_status pf_session_run_frames(pf_session* session, const uint8_t* const* frames, size_t t, size_t height,
                                size_t width, size_t row_stride_bytes, float* output, pf_grid* grid_out) {
  if (session == nullptr) return fail(PF_INVALID_ARGUMENT, "pf_session_run_frames: session must not be null");
  return guarded("pf_session_run_frames", [&] {
    FrameGrid g;
    Status s = session->session->run_frames(frames, t, height, width, row_stride_bytes, output, &g);
    if (!s.ok()) return fail(s.error());
    if (grid_out != nullptr) *grid_out = pf_grid{g.t, g.h, g.w};
    return PF_OK;
  });
}

pf_status pf_image_packed(pf_image* image, pf_pixel_format format, const uint8_t* data, int64_t width, int64_t height) {
  if (image == nullptr || data == nullptr) return fail(PF_INVALID_ARGUMENT, "pf_image_packed: null argument");
  if (static_cast<uint32_t>(format) > PF_PIXEL_YUYV || width < 1 || height < 1 || width > 32768 || height > 32768) {
    return fail(PF_INVALID_ARGUMENT, cat("pf_image_packed: format ", static_cast<int>(format), " and size ", width, "x",
                                         height, " must be a pf_pixel_format and 1..32768 per side"));
  }
  const ImageView v = packed_image(static_cast<PixelFormat>(format), data, static_cast<size_t>(width), static_cast<size_t>(height));
  *image = pf_image{};
  image->format = format;
  image->width = width;
  image->height = height;
  for (int p = 0; p < 3; ++p) {
    image->planes[p] = v.planes[p];
    image->row_stride_bytes[p] = static_cast<int64_t>(v.row_stride[p]);
  }
  return PF_OK;
}

pf_status pf_session_images_grid(const pf_session* session, size_t t, int64_t height, int64_t width, pf_grid* grid_out) {
  if (session == nullptr || grid_out == nullptr) return fail(PF_INVALID_ARGUMENT, "pf_session_images_grid: null argument");
  if (height < 1 || width < 1) {
    return fail(PF_INVALID_ARGUMENT, cat("pf_session_images_grid: image size ", height, "x", width, " must be positive"));
  }
  return guarded("pf_session_images_grid", [&] {
    Result<FrameGrid> g = session->session->images_grid(t, static_cast<size_t>(height), static_cast<size_t>(width));
    if (!g.ok()) return fail(g.error());
    *grid_out = pf_grid{g->t, g->h, g->w};
    return PF_OK;
  });
}

pf_status pf_session_run_video(pf_session* session, const pf_image* frames, size_t t, float* output, pf_grid* grid_out) {
  if (session == nullptr || frames == nullptr) return fail(PF_INVALID_ARGUMENT, "pf_session_run_video: null argument");
  return guarded("pf_session_run_video", [&] {
    std::vector<ImageView> views;
    for (size_t f = 0; f < t; ++f) {
      Result<ImageView> v = to_view(cat("pf_session_run_video: frame ", f).c_str(), &frames[f]);
      if (!v.ok()) return fail(v.error());
      views.push_back(*v);
    }
    FrameGrid g;
    Status s = session->session->run_images(views.data(), t, output, &g);
    if (!s.ok()) return fail(s.error());
    if (grid_out != nullptr) *grid_out = pf_grid{g.t, g.h, g.w};
    return PF_OK;
  });
}

pf_status pf_session_run_image(pf_session* session, const pf_image* image, float* output, pf_grid* grid_out) {
  if (image == nullptr) return fail(PF_INVALID_ARGUMENT, "pf_session_run_image: image must not be null");
  return pf_session_run_video(session, image, 1, output, grid_out);
}

pf_status pf_session_preprocess(pf_session* session, const pf_image* image, size_t t, uint8_t* rgb_out,
                                size_t capacity_bytes, int64_t* height_out, int64_t* width_out) {
  if (session == nullptr || height_out == nullptr || width_out == nullptr) {
    return fail(PF_INVALID_ARGUMENT, "pf_session_preprocess: null argument");
  }
  return guarded("pf_session_preprocess", [&] {
    Result<ImageView> v = to_view("pf_session_preprocess", image);
    if (!v.ok()) return fail(v.error());
    size_t h = 0, w = 0;
    Status s = session->session->preprocess(*v, t, rgb_out, capacity_bytes, &h, &w);
    *height_out = static_cast<int64_t>(h);
    *width_out = static_cast<int64_t>(w);
    return s.ok() ? PF_OK : fail(s.error());
  });
}

void pf_session_release(pf_session* session) { delete session; }

}  // extern "C"
