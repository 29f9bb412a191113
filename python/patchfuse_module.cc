// patchfuse._patchfuse: the Python module over the C++ code (pybind11 2.10, NumPy 1.x). Nothing
// here re-implements a rule: conversion, inspection and export call the converter library,
// images are decoded by the tools' decoder, and everything on the device side goes through the C
// API (patchfuse.hpp), whose checks and messages the Python errors carry.
//
// Arrays: an input must already be C-contiguous (image rows may be strided) and of the exact
// dtype, and is read in place; anything else raises TypeError/ValueError naming what was
// expected, never a silent copy. Outputs are NumPy-owned arrays allocated before the GIL is
// released, or the caller's `out=` array, written in place. A session serializes its calls with a
// mutex and runs without the GIL, so sessions of two threads run in parallel.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstring>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <vector>

#include "converter/convert.h"
#include "converter/export.h"
#include "converter/fusion_flags.h"
#include "converter/inspect.h"
#include "python/arguments.h"
#include "patchfuse/patchfuse.hpp"
#include "runtime/frames/pixel_formats.h"
#include "tools/image_files.h"
#include "tools/option_names.h"

namespace py = pybind11;

namespace {

using patchfuse::python::cast_arg;
using patchfuse::python::from_grid;
using patchfuse::python::to_grid;

// A failure of the runtime or the converter: patchfuse.Error with the one-line message and status.
struct Failure : std::runtime_error {
  Failure(pf_status s, const std::string& message) : std::runtime_error(message), status(s) {}
  pf_status status;
};

const char* status_name(pf_status s) {
  switch (s) {
    case PF_OK: return "ok";
    case PF_INVALID_ARGUMENT: return "invalid_argument";
    case PF_INVALID_MODEL: return "invalid_model";
    case PF_UNSUPPORTED: return "unsupported";
    case PF_IO_ERROR: return "io_error";
    case PF_OUT_OF_MEMORY: return "out_of_memory";
    case PF_INTERNAL: return "internal";
  }
  return "internal";
}

pf_status to_pf(patchfuse::Code c) {
  switch (c) {
    case patchfuse::Code::kOk: return PF_OK;
    case patchfuse::Code::kInvalidArgument: return PF_INVALID_ARGUMENT;
    case patchfuse::Code::kInvalidModel: return PF_INVALID_MODEL;
    case patchfuse::Code::kUnsupported: return PF_UNSUPPORTED;
    case patchfuse::Code::kIoError: return PF_IO_ERROR;
    case patchfuse::Code::kOutOfMemory: return PF_OUT_OF_MEMORY;
    case patchfuse::Code::kInternal: return PF_INTERNAL;
  }
  return PF_INTERNAL;
}

[[noreturn]] void raise(const patchfuse::Error& e) { throw Failure(to_pf(e.code), e.message); }
template <class T>
T value_of(patchfuse::Expected<T> e) {
  if (!e) throw Failure(e.status(), e.error());
  return std::move(*e);
}

// A name from one of the CLI's spelling tables, or ValueError listing them.
template <class Map>
typename Map::mapped_type lookup(const Map& names, const std::string& name, const char* what) {
  const auto it = names.find(name);
  if (it != names.end()) return it->second;
  std::string known;
  for (const auto& [k, v] : names) known += (known.empty() ? "" : ", ") + k;
  throw py::value_error(std::string(what) + " '" + name + "' is not one of " + known);
}

std::string shape_text(const py::array& a) {
  std::string s = "(";
  for (py::ssize_t i = 0; i < a.ndim(); ++i) s += (i ? ", " : "") + std::to_string(a.shape(i));
  return s + (a.ndim() == 1 ? ",)" : ")");
}

// `a` as `T` exactly (TypeError otherwise) and C-contiguous (ValueError otherwise): no copy.
template <class T>
void require(const py::array& a, const char* name) {
  if (!py::dtype::of<T>().is(a.dtype()) && !a.dtype().equal(py::dtype::of<T>())) {
    throw py::type_error(std::string(name) + ": dtype " + py::str(a.dtype()).cast<std::string>() + " must be " +
                         py::str(py::dtype::of<T>()).cast<std::string>() + " (it is read in place, not converted)");
  }
  if (!(a.flags() & py::array::c_style)) {
    throw py::value_error(std::string(name) + ": the array of shape " + shape_text(a) +
                          " is not C-contiguous; pass np.ascontiguousarray(" + name + ") (it is read in place)");
  }
}

// A float32 output of rows x width: the caller's `out` (checked, written in place) or a new array.
py::array_t<float> output(const py::object& out, int64_t rows, int64_t width) {
  if (out.is_none()) return py::array_t<float>({rows, width});
  if (!py::isinstance<py::array>(out)) throw py::type_error("out: must be a numpy.ndarray of float32");
  py::array a = py::reinterpret_borrow<py::array>(out);
  require<float>(a, "out");
  if (a.ndim() != 2 || a.shape(0) != rows || a.shape(1) != width) {
    throw py::value_error("out: shape " + shape_text(a) + " must be (" + std::to_string(rows) + ", " +
                          std::to_string(width) + ")");
  }
  if (!a.writeable()) throw py::value_error("out: the array is read-only");
  return py::reinterpret_borrow<py::array_t<float>>(out);
}


// A model and the bytes it reads (a mapped file, or a caller's buffer kept alive here).
struct PyModel {
  std::unique_ptr<patchfuse::Model> model;
  py::object keep;  // the buffer a model from memory points into
};

struct PySession {
  std::shared_ptr<PyModel> model;  // a session keeps its model alive
  std::unique_ptr<patchfuse::Session> session;
  pf_module_info module{};
  std::mutex mutex;  // one call at a time, as the C API asks of a session

  // Runs the C API call `call` (returning a pf_status) under the session's mutex without the GIL
  // (outputs are allocated before); a failure raises patchfuse.Error with its status and message.
  template <class F>
  void locked(F&& call) {
    pf_status status = PF_OK;
    std::string error;
    {
      py::gil_scoped_release release;
      std::lock_guard<std::mutex> lock(mutex);
      status = call(session->get());
      if (status != PF_OK) error = pf_last_error();  // thread-local: read on the thread that failed
    }
    if (status != PF_OK) throw Failure(status, error);
  }
  int64_t rows(const pf_grid& g) const { return value_of(session->output_rows(g)); }
};

// A uint8 image array as a pf_image: H x W x C (C = 3: rgb or bgr, 4: rgba or bgra) or H x W
// (gray8); its rows may be strided (a crop of a larger frame), its pixels within a row not.
pf_image image_view(const py::array& a, const std::string& format_name) {
  if (!py::dtype::of<uint8_t>().equal(a.dtype())) {
    throw py::type_error("image: dtype " + py::str(a.dtype()).cast<std::string>() + " must be uint8");
  }
  const int channels = a.ndim() == 2 ? 1 : a.ndim() == 3 ? static_cast<int>(a.shape(2)) : 0;
  const char* fallback = channels == 1 ? "gray8" : channels == 3 ? "rgb" : channels == 4 ? "rgba" : "";
  const std::string name = format_name.empty() ? fallback : format_name;
  const pf_pixel_format format = lookup(patchfuse::pixel_format_names(), name, "format");
  const int want = format == PF_PIXEL_GRAY8 ? 1 : format == PF_PIXEL_RGB || format == PF_PIXEL_BGR ? 3 : 4;
  if (channels != want || format > PF_PIXEL_GRAY8) {
    throw py::value_error("image: shape " + shape_text(a) + " is not an H x W" + (want == 1 ? "" : " x " + std::to_string(want)) +
                          " " + name + " image (camera planes: Session.run_planes)");
  }
  if ((channels > 1 && (a.strides(2) != 1 || a.strides(1) != channels)) || (channels == 1 && a.strides(1) != 1) ||
      a.strides(0) < a.shape(1) * channels) {
    throw py::value_error("image: each row's pixels must be contiguous (strides " + py::repr(py::cast(
                              std::vector<py::ssize_t>(a.strides(), a.strides() + a.ndim()))).cast<std::string>() + ")");
  }
  pf_image img{};
  img.format = format;
  img.width = a.shape(1);
  img.height = a.shape(0);
  img.planes[0] = static_cast<const uint8_t*>(a.data());
  img.row_stride_bytes[0] = a.strides(0);
  return img;
}

// Camera planes (NV12/NV21: Y, UV; I420: Y, U, V; YUYV or any packed format: one plane), each a
// uint8 array of rows (2-D, rows contiguous, its row stride the array's) or a flat buffer with
// `row_strides`; each must hold what the format's plane spans (runtime/frames/pixel_formats.h).
pf_image planes_view(const std::string& format_name, const std::vector<py::array>& planes, int64_t width, int64_t height,
                     const std::vector<int64_t>& row_strides, int64_t chroma_pixel_stride, const std::string& matrix) {
  pf_image img{};
  img.format = lookup(patchfuse::pixel_format_names(), format_name, "format");
  img.matrix = lookup(patchfuse::color_matrix_names(), matrix, "matrix");
  img.width = width;
  img.height = height;
  img.chroma_pixel_stride = chroma_pixel_stride;
  patchfuse::ImageView v;
  v.format = static_cast<patchfuse::PixelFormat>(img.format);
  v.width = static_cast<size_t>(std::max<int64_t>(width, 0));
  v.height = static_cast<size_t>(std::max<int64_t>(height, 0));
  v.chroma_pixel_stride = static_cast<size_t>(std::max<int64_t>(chroma_pixel_stride, 1));
  const int count = v.width > 0 && v.height > 0 ? patchfuse::plane_count(v) : static_cast<int>(planes.size());
  if (static_cast<int>(planes.size()) != count) {
    throw py::value_error("planes: a " + format_name + " image has " + std::to_string(count) + " plane(s), got " +
                          std::to_string(planes.size()));
  }
  if (!row_strides.empty() && row_strides.size() != planes.size()) {
    throw py::value_error("row_strides: one per plane (" + std::to_string(planes.size()) + "), got " +
                          std::to_string(row_strides.size()));
  }
  for (size_t p = 0; p < planes.size(); ++p) {
    const py::array& a = planes[p];
    const std::string what = "planes[" + std::to_string(p) + "]";
    if (!py::dtype::of<uint8_t>().equal(a.dtype())) throw py::type_error(what + ": dtype must be uint8");
    if (a.ndim() == 2 && a.strides(1) != 1) throw py::value_error(what + ": each row must be contiguous");
    if (a.ndim() == 1 && a.strides(0) != 1) throw py::value_error(what + ": must be contiguous");
    if (a.ndim() != 1 && a.ndim() != 2) throw py::value_error(what + ": must be 1-D (a buffer) or 2-D (rows)");
    img.planes[p] = static_cast<const uint8_t*>(a.data());
    img.row_stride_bytes[p] = !row_strides.empty() ? row_strides[p] : a.ndim() == 2 ? a.strides(0) : 0;
    v.planes[p] = img.planes[p];
    v.row_stride[p] = static_cast<size_t>(std::max<int64_t>(img.row_stride_bytes[p], 0));
  }
  // The runtime checks sizes and strides (one-line messages); then each array must hold its plane.
  for (const patchfuse::Status& ok :
       {patchfuse::check_image_signs(width, height, chroma_pixel_stride, img.row_stride_bytes, "planes"),
        patchfuse::check_image(v, "planes")}) {
    if (!ok.ok()) raise(ok.error());
  }
  for (size_t p = 0; p < planes.size(); ++p) {
    const py::array& a = planes[p];
    const uint64_t need = patchfuse::plane_extent(v, static_cast<int>(p));
    const uint64_t have = a.ndim() == 2 ? static_cast<uint64_t>(a.strides(0)) * static_cast<uint64_t>(a.shape(0) - 1) +
                                              static_cast<uint64_t>(a.shape(1))
                                        : static_cast<uint64_t>(a.shape(0));
    if (a.size() == 0 || have < need) {
      throw py::value_error("planes[" + std::to_string(p) + "]: holds " + std::to_string(a.size() == 0 ? 0 : have) +
                            " bytes; plane " + std::to_string(p) + " of a " + std::to_string(width) + "x" +
                            std::to_string(height) + " " + format_name + " image spans " + std::to_string(need));
    }
  }
  return img;
}

// Runs images of one size into `out` or a new array: one still image (run_image, run_planes) or a
// video's frames (run_video). Returns (output, grid).
py::tuple run_images(PySession& s, const std::vector<pf_image>& views, bool video, const py::object& out) {
  const pf_grid g = value_of(s.session->images_grid(views.size(), views[0].height, views[0].width));
  py::array_t<float> y = output(out, s.rows(g), s.module.embed_dim);
  float* dst = y.mutable_data();
  pf_grid got{};
  s.locked([&](pf_session* h) {
    return video ? pf_session_run_video(h, views.data(), views.size(), dst, &got) : pf_session_run_image(h, views.data(), dst, &got);
  });
  return py::make_tuple(y, from_grid(got));
}

py::dict info_dict(const pf_session_info& i) {
  py::dict d;
  d["backend"] = pf_backend_name(i.backend);
  d["precision"] = patchfuse::precision_text(i.precision);
  d["path"] = i.path == PF_PATH_FUSED ? "fused" : "unfused";
  d["threads"] = i.threads;
  d["output_stage"] = i.output_stage == PF_OUTPUT_ENCODER_INPUT ? "encoder-input" : "patches";
  d["detail"] = i.detail;
  d["note"] = i.note;
  d["isa"] = i.isa;
  d["weights_cache"] = i.weights_cache;
  d["frame_kernels"] = i.frame_kernels;
  return d;
}

py::dict module_dict(const pf_module_info& m) {
  py::dict d;
  d["path"] = m.path;
  d["family"] = m.family;
  d["layout"] = m.layout == PF_LAYOUT_FUSED_LINEAR ? "fused_linear" : "original_conv";
  d["in_channels"] = m.in_channels;
  d["embed_dim"] = m.embed_dim;
  d["patch_volume"] = m.patch_volume;
  d["kernel"] = std::vector<int32_t>(m.kernel, m.kernel + m.spatial_rank);
  d["has_bias"] = m.has_bias != 0;
  d["has_preprocessing"] = m.has_preprocessing != 0;
  d["encoder_input"] = m.encoder_input ? py::object(py::str(m.encoder_input)) : py::object(py::none());
  d["class_rows"] = m.class_rows;
  return d;
}

py::object numpy_of(pf_element_type t, const std::vector<int64_t>& shape) {
  switch (t) {
    case PF_ELEMENT_F32: return py::array_t<float>(shape);
    case PF_ELEMENT_I32: return py::array_t<int32_t>(shape);
    case PF_ELEMENT_I64: return py::array_t<int64_t>(shape);
  }
  throw Failure(PF_INTERNAL, "unknown element type");
}

}  // namespace

PYBIND11_MODULE(_patchfuse, m) {
  m.doc() = "patchfuse: Hugging Face patch embeddings as GEMMs on the device (see help(patchfuse))";
  m.attr("__version__") = PATCHFUSE_VERSION;
  static py::exception<Failure> error(m, "Error", PyExc_RuntimeError);
  error.doc() = "A runtime or converter failure: the C API's one-line message; .status names its pf_status.";
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const Failure& e) {
      py::object instance = py::reinterpret_borrow<py::object>(error.ptr())(e.what());
      instance.attr("status") = status_name(e.status);
      PyErr_SetObject(error.ptr(), instance.ptr());
    }
  });

  m.def(
      "convert",
      [](const std::string& src, const std::string& out, const std::vector<std::string>& fusion, const std::string& dtype,
         const std::string& config, const std::string& preprocessor, const std::string& video_preprocessor,
         const std::string& resize, const std::string& video_resize, const std::string& geometry, bool strict) {
        patchfuse::ConvertOptions o;
        o.strict = strict;
        o.input = src;
        o.output = out;
        o.config = config;
        o.preprocessor = preprocessor;
        o.video_preprocessor = video_preprocessor;
        o.fusion = patchfuse::parse_fusion_flags(fusion);
        if (dtype == "f32") o.dtype = patchfuse::DType::kF32;
        if (dtype == "f16") o.dtype = patchfuse::DType::kF16;
        if (dtype == "bf16") o.dtype = patchfuse::DType::kBF16;
        if (dtype != "keep" && !o.dtype) throw py::value_error("dtype '" + dtype + "' is not one of keep, f32, f16, bf16");
        for (auto [text, field] : {std::pair{&resize, &o.image_resize}, std::pair{&video_resize, &o.video_resize}}) {
          if (text->empty()) continue;
          if (*text != "pil" && *text != "torch") throw py::value_error("resize '" + *text + "' is not one of pil, torch");
          *field = *text == "torch" ? patchfuse::ResizeSemantics::kTorch : patchfuse::ResizeSemantics::kPil;
        }
        if (!geometry.empty()) {
          auto g = patchfuse::parse_geometry_override(geometry);
          if (!g.ok()) throw py::value_error(g.error().message);
          o.geometry = g.value();
        }
        patchfuse::Result<patchfuse::ConvertReport> r = [&] {
          py::gil_scoped_release release;
          return patchfuse::convert_checkpoint(o);
        }();
        if (!r.ok()) raise(r.error());
        py::dict report;
        report["output"] = out;
        report["written"] = r->written;
        report["notes"] = r->notes;
        report["gaps"] = r->gaps;
        return report;
      },
      py::arg("src"), py::arg("out"), py::kw_only(), py::arg("fusion") = std::vector<std::string>{},
      py::arg("dtype") = "keep", py::arg("config") = "", py::arg("preprocessor") = "", py::arg("video_preprocessor") = "",
      py::arg("resize") = "", py::arg("video_resize") = "", py::arg("geometry") = "", py::arg("strict") = false,
      R"doc(Convert a Hugging Face checkpoint (folder, .safetensors or shard index) to a .pfb, as `patchfuse-convert convert`.

src: the checkpoint. out: the .pfb to write (atomically; nothing on failure).
fusion: the CLI's --fusion entries, e.g. ["conv2d_patch_embeddings"] (default: patch_embeddings).
dtype: "keep" (the checkpoint's), "f32", "f16" or "bf16". config, preprocessor, video_preprocessor:
files to use instead of those beside the weights. resize, video_resize: "pil" or "torch".
geometry: the CLI's --geometry override. strict: refuse what would be a note that a capability is
missing (--strict). Returns {"output", "written", "notes", "gaps"} (gaps: the notes that mean a
capability is missing); raises
patchfuse.Error with the converter's one-line message.)doc");
  m.def(
      "inspect",
      [](const std::string& path) {
        patchfuse::Result<std::string> r = patchfuse::inspect_model(path, true);
        if (!r.ok()) raise(r.error());
        return py::module_::import("json").attr("loads")(r.value());
      },
      py::arg("path"), R"doc(Verify the .pfb at path and return what `patchfuse-convert inspect --json` prints, as Python objects.)doc");
  m.def(
      "export",
      [](const std::string& pfb, const std::string& out) {
        patchfuse::Result<std::vector<std::string>> r = patchfuse::export_model(pfb, out);
        if (!r.ok()) raise(r.error());
        return r.value();
      },
      py::arg("pfb"), py::arg("out"),
      R"doc(Write the original-layout safetensors of the .pfb at pfb to out, bit-exactly; returns the tensors written.)doc");
  m.def(
      "load_image",
      [](const std::string& path, bool exif, uint64_t max_pixels) {
        patchfuse::DecodeOptions d;
        d.exif = exif;
        d.max_pixels = max_pixels;
        patchfuse::Image img = value_of(patchfuse::decode_image(path, d));
        py::array_t<uint8_t> out({static_cast<py::ssize_t>(img.height), static_cast<py::ssize_t>(img.width), py::ssize_t{3}});
        std::memcpy(out.mutable_data(), img.bytes.data(), img.bytes.size());
        return out;
      },
      py::arg("path"), py::kw_only(), py::arg("exif") = true, py::arg("max_pixels") = patchfuse::kDefaultMaxPixels,
      R"doc(Decode the image file at path (JPEG, PNG, WebP, GIF, BMP, PPM/PGM) as Pillow's load_image + convert("RGB") does.

exif: apply the EXIF orientation (default True). max_pixels: refuse larger images (Pillow's bomb
limit, 178956970). Returns an H x W x 3 uint8 array.)doc");

  py::class_<PyModel, std::shared_ptr<PyModel>>(m, "Model", R"doc(A .pfb model, verified and opened zero-copy.

Model(source): source is a path (str or os.PathLike; the file is mapped) or a bytes-like buffer
(bytes, bytearray, memoryview, a uint8 ndarray), read in place and kept alive by the model.)doc")
      .def(py::init([](const py::object& source) {
             auto pm = std::make_shared<PyModel>();
             if (py::isinstance<py::str>(source) || py::hasattr(source, "__fspath__")) {
               const std::string path = py::module_::import("os").attr("fspath")(source).cast<std::string>();
               pm->model = std::make_unique<patchfuse::Model>(value_of(patchfuse::Model::open_file(path)));
               return pm;
             }
             py::buffer_info b = py::buffer(source).request();  // bytes, bytearray, memoryview, ndarray
             if (b.ndim != 1 || b.itemsize != 1 || b.strides[0] != 1) {
               throw py::value_error("Model: a buffer must be contiguous bytes");
             }
             pm->keep = source;
             pm->model = std::make_unique<patchfuse::Model>(
                 value_of(patchfuse::Model::open_memory(b.ptr, static_cast<size_t>(b.size))));
             return pm;
           }),
           py::arg("source"))
      .def_property_readonly(
          "module_count", [](const PyModel& pm) { return pm.model->module_count(); }, "How many modules the model holds.")
      .def_property_readonly(
          "modules",
          [](const PyModel& pm) {
            py::list l;
            for (size_t i = 0; i < pm.model->module_count(); ++i) l.append(module_dict(pm.model->module(i)));
            return l;
          },
          "Each module's path, family, layout, sizes, preprocessing and encoder-input steps, as dicts.");

  py::class_<PySession>(m, "Session", R"doc(One module of a Model on one backend, precision and output stage.

Session(model, module=0, *, backend="auto", precision="auto", threads=1, output_stage="patches",
path="fused", weights_cache=None): module is an index or a module path; backend is auto,
reference, onednn, xnnpack or gemmlowp; precision auto, f32, bf16, f16 or int8 (frames only);
output_stage "patches" (the conv's output) or "encoder-input" (block 0's input); path "fused" or
"unfused"; weights_cache a file for the packed weights. The session keeps its model alive. Calls
run without the GIL; one session serializes its calls (use one session per thread for parallelism).)doc")
      .def(py::init([](std::shared_ptr<PyModel> model, const py::object& module, const std::string& backend,
                       const std::string& precision, int threads, const std::string& output_stage, const std::string& path,
                       const py::object& weights_cache) {
             auto s = std::make_unique<PySession>();
             s->model = std::move(model);
             size_t index = 0;
             if (py::isinstance<py::str>(module)) {
               index = value_of(s->model->model->find_module(module.cast<std::string>()));
             } else {
               index = cast_arg<size_t>(module, "module", "an index >= 0 or a module path");
             }
             pf_session_options o = patchfuse::default_options();
             o.backend = lookup(patchfuse::backend_names(), backend, "backend");
             o.precision = lookup(patchfuse::precision_names(), precision, "precision");
             o.threads = threads;
             o.output_stage = lookup(patchfuse::output_stage_names(), output_stage, "output_stage");
             if (path != "fused" && path != "unfused") throw py::value_error("path '" + path + "' is not one of fused, unfused");
             o.path = path == "fused" ? PF_PATH_FUSED : PF_PATH_UNFUSED;
             const std::string cache =
                 weights_cache.is_none() ? std::string() : py::module_::import("os").attr("fspath")(weights_cache).cast<std::string>();
             o.weights_cache = weights_cache.is_none() ? nullptr : cache.c_str();
             {
               py::gil_scoped_release release;  // creation packs the weights
               auto created = patchfuse::Session::create(*s->model->model, index, o);
               if (!created) throw Failure(created.status(), created.error());
               s->session = std::make_unique<patchfuse::Session>(std::move(*created));
             }
             s->module = s->model->model->module(index);
             return s;
           }),
           py::arg("model"), py::arg("module") = 0, py::kw_only(), py::arg("backend") = "auto", py::arg("precision") = "auto",
           py::arg("threads") = 1, py::arg("output_stage") = "patches", py::arg("path") = "fused",
           py::arg("weights_cache") = py::none())
      .def_property_readonly(
          "info", [](PySession& s) { return info_dict(s.session->info()); },
          "What the session runs: backend, precision, path, threads, output stage, kernel detail, ISA, frame kernels.")
      .def_property_readonly(
          "module", [](PySession& s) { return module_dict(s.module); }, "The module the session runs, as Model.modules gives it.")
      .def_property_readonly(
          "last_profile",
          [](PySession& s) {
            const pf_run_profile p = s.session->last_profile();
            py::dict d;
            d["preprocess_ms"] = p.preprocess_ms;
            d["gather_ms"] = p.gather_ms;
            d["kernel_ms"] = p.kernel_ms;
            d["encoder_input_ms"] = p.encoder_input_ms;
            d["setup_ms"] = p.setup_ms;
            return d;
          },
          "Where the last run spent its time, per stage, in milliseconds (pf_run_profile).")
      .def(
          "prepare",
          [](PySession& s, const py::object& grid, const py::object& image, size_t frames, const std::string& format) {
            pf_input_shape shape{};
            if (!grid.is_none()) {
              shape.kind = PF_INPUT_PIXEL_VALUES;
              shape.grid = to_grid(grid);
            } else if (!image.is_none()) {
              const auto hw = cast_arg<std::pair<int64_t, int64_t>>(image, "image", "(height, width) of ints");
              shape.kind = PF_INPUT_IMAGES;
              shape.t = frames;
              shape.height = hw.first;
              shape.width = hw.second;
              shape.format = lookup(patchfuse::pixel_format_names(), format, "format");
            } else {
              throw py::value_error("prepare: give grid=(t, h, w) for pixel_values or image=(height, width)");
            }
            s.locked([&](pf_session* h) { return pf_session_prepare(h, &shape); });
          },
          py::kw_only(), py::arg("grid") = py::none(), py::arg("image") = py::none(), py::arg("frames") = 1,
          py::arg("format") = "rgb",
          R"doc(Do ahead of time what the first run of a size does once (pf_session_prepare): grid=(t, h, w) for pixel_values rows, or image=(height, width) with frames (1: a still image) and format.)doc")
      .def(
          "run",
          [](PySession& s, const py::array& pixel_values, const py::object& grid, const py::object& out) {
            require<float>(pixel_values, "pixel_values");
            if (pixel_values.ndim() != 2 || pixel_values.shape(1) != s.module.patch_volume || pixel_values.shape(0) == 0) {
              throw py::value_error("pixel_values: shape " + shape_text(pixel_values) + " must be (N, " +
                                    std::to_string(s.module.patch_volume) + ") with N >= 1");
            }
            const pf_grid g = grid.is_none() ? pf_grid{1, 1, pixel_values.shape(0)} : to_grid(grid);
            if (g.t * g.h * g.w != pixel_values.shape(0)) {
              throw py::value_error("pixel_values: " + std::to_string(pixel_values.shape(0)) + " rows, but grid " +
                                    py::repr(grid).cast<std::string>() + " has " + std::to_string(g.t * g.h * g.w));
            }
            py::array_t<float> y = output(out, s.rows(g), s.module.embed_dim);
            const auto* x = static_cast<const float*>(pixel_values.data());
            float* dst = y.mutable_data();
            s.locked([&](pf_session* h) { return pf_session_run_grid(h, x, &g, dst); });
            return y;
          },
          py::arg("pixel_values"), py::kw_only(), py::arg("grid") = py::none(), py::arg("out") = py::none(),
          R"doc(Embed pixel_values (float32 [N, patch_volume], C-contiguous, read in place). grid=(t, h, w) gives the rows' image_grid_thw (needed for the encoder-input stage). out: a float32 [rows, embed_dim] array to write into (returned). Returns the output array.)doc")
      .def(
          "run_image",
          [](PySession& s, const py::array& image, const std::string& format, const py::object& out) {
            return run_images(s, {image_view(image, format)}, false, out);
          },
          py::arg("image"), py::kw_only(), py::arg("format") = "", py::arg("out") = py::none(),
          R"doc(Embed a still image of any size: a uint8 H x W x 3 (rgb; format="bgr"), H x W x 4 (rgba/bgra) or H x W (gray8) array; rows may be strided (a crop). Resized and normalized as the model's Hugging Face processor does. Returns (output, grid).)doc")
      .def(
          "run_planes",
          [](PySession& s, const std::string& format, const std::vector<py::array>& planes, int64_t width, int64_t height,
             const std::vector<int64_t>& row_strides, int64_t chroma_pixel_stride, const std::string& matrix,
             const py::object& out) {
            return run_images(s, {planes_view(format, planes, width, height, row_strides, chroma_pixel_stride, matrix)}, false,
                              out);
          },
          py::arg("format"), py::arg("planes"), py::arg("width"), py::arg("height"), py::kw_only(),
          py::arg("row_strides") = std::vector<int64_t>{}, py::arg("chroma_pixel_stride") = 1,
          py::arg("matrix") = "bt601_full", py::arg("out") = py::none(),
          R"doc(Embed a camera frame given as planes: format nv12/nv21 (Y, UV), i420 (Y, U, V; chroma_pixel_stride 1 or 2), yuyv or a packed RGB format (one plane). Each plane is a uint8 2-D array of rows (its row stride is the array's) or a flat buffer with row_strides; matrix is bt601_full (default, as the C API and patchfuse-run: JFIF, Android camera2), bt601_limited or bt709_limited (video decoders, webcams). Returns (output, grid).)doc")
      .def(
          "run_video",
          [](PySession& s, const std::vector<py::array>& frames, const std::string& format, const py::object& out) {
            if (frames.empty()) throw py::value_error("frames: at least one frame is needed");
            std::vector<pf_image> views;
            for (const py::array& f : frames) views.push_back(image_view(f, format));
            return run_images(s, views, true, out);
          },
          py::arg("frames"), py::kw_only(), py::arg("format") = "", py::arg("out") = py::none(),
          R"doc(Embed video frames (a list of same-size uint8 images as run_image takes), sized by the video processor's rule. Returns (output, grid).)doc")
      .def(
          "window_index",
          [](PySession& s, const py::object& grid) {
            const auto o = value_of(s.session->window_order(to_grid(grid)));
            return py::make_tuple(py::array_t<int64_t>(o.window_index.size(), o.window_index.data()),
                                  py::array_t<int64_t>(o.reverse_index.size(), o.reverse_index.data()),
                                  py::array_t<int64_t>(o.cu_window_seqlens.size(), o.cu_window_seqlens.data()));
          },
          py::arg("grid"),
          R"doc(Qwen2.5-VL's window order for grid=(t, h, w): (window_index, reverse_index, cu_window_seqlens) as int64 arrays.)doc")
      .def(
          "block_inputs",
          [](PySession& s, const py::object& grid) {
            const pf_grid g = to_grid(grid);
            py::dict d;
            for (const pf_block_input_info& b : value_of(s.session->block_inputs(g))) {
              py::array a = numpy_of(b.type, std::vector<int64_t>(b.shape, b.shape + b.rank));
              void* dst = a.mutable_data();
              s.locked([&](pf_session* h) { return pf_session_block_input(h, b.name, &g, dst, b.bytes); });
              d[b.name] = a;
            }
            return d;
          },
          py::arg("grid"),
          R"doc(What the vision encoder's blocks take for grid=(t, h, w) besides the hidden states (rotary_cos, rotary_sin, cu_seqlens, the window schedule, ...), as {name: array} in transformers' dtypes.)doc")
      .def_property_readonly(
          "block_schedule",
          [](PySession& s) {
            const pf_block_schedule b = value_of(s.session->block_schedule());
            py::dict d;
            d["depth"] = b.depth;
            d["num_heads"] = b.num_heads;
            d["head_dim"] = b.head_dim;
            d["rope_theta"] = b.rope_theta;
            d["rotary"] = b.rotary;
            d["description"] = b.description;
            return d;
          },
          "The blocks' schedule: depth, num_heads, head_dim, rope_theta, rotary kind, and in words.");
}
