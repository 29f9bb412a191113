// patchfuse-run: runs one module of a .pfb on a .npy input and writes a .npy output (DESIGN.md §4).
// Exit status: 0 success, 1 failure (bad input, I/O, unsupported), 2 usage error.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <functional>
#include <sstream>

#include "patchfuse/patchfuse.hpp"
#include "cli/command_line.h"
#include "runtime/core/output_file.h"
#include "tools/block_inputs_dir.h"
#include "tools/image_files.h"
#include "tools/output_diff.h"
#include "cli/npy.h"
#include "tools/option_names.h"

namespace {

int fail(const std::string& message) {
  std::fprintf(stderr, "patchfuse-run: error: %s\n", message.c_str());
  return 1;
}

// What one run needs: its grid (image_grid_thw, once known) and how to compute it on a session.
struct Job {
  pf_grid grid{};
  std::function<std::string(patchfuse::Session&, float*)> run;
};

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"patchfuse-run: run a patch embedding of a .pfb model on .npy patches or on images"};
  std::string model_path, input_path, image_path, yuv_path, output_path, module, backend = "auto", precision = "auto";
  std::string format = "nv12", size, matrix = "bt601_full", write_resized, output_stage = "patches", grid_text;
  std::string weights_cache, block_inputs_dir;
  std::vector<std::string> frame_paths;
  int threads = 1;
  bool no_fuse = false, compare = false, no_exif = false;
  uint64_t max_pixels = patchfuse::kDefaultMaxPixels;
  app.add_option("MODEL", model_path, "Model .pfb")->required();
  auto* input_opt = app.add_option("--input", input_path, "float32 .npy, [N, C*kt*kh*kw] or [N, C, (kt,) kh, kw] (patch rows)");
  auto* image_opt = app.add_option("--image", image_path, "A still image of any size (JPEG, PNG, WebP, GIF, BMP, PPM/PGM), decoded as Pillow "
                                                          "decodes it and preprocessed as Hugging Face does");
  auto* frames_opt = app.add_option("--frames", frame_paths, "Video frames, comma-separated image files of one size")->delimiter(',');
  auto* yuv_opt = app.add_option("--yuv", yuv_path, "A raw camera frame (packed planes), with --format and --size");
  app.add_option("--format", format, "--yuv pixel format: nv12|nv21|i420|yuyv|rgb|bgr|rgba|bgra|gray8")
      ->check(CLI::IsMember(patchfuse::keys_of(patchfuse::pixel_format_names())));
  auto* size_opt = app.add_option("--size", size, "--yuv frame size WxH, e.g. 1920x1080");
  app.add_option("--matrix", matrix, "--yuv colour matrix: bt601_full (default, as the C API's: JFIF, Android camera2) | "
                                     "bt601_limited | bt709_limited (video decoders, webcams)")
      ->check(CLI::IsMember(patchfuse::keys_of(patchfuse::color_matrix_names())));
  app.add_flag("--no-exif", no_exif, "Do not apply the EXIF orientation (Hugging Face's load_image applies it)");
  app.add_option("--max-pixels", max_pixels, "Refuse images with more pixels (default 178956970, Pillow's bomb limit)")
      ->check(CLI::PositiveNumber);
  app.add_option("--write-resized", write_resized, "Also write the processor's resized RGB frame (the first one) as a PNG");
  yuv_opt->needs(size_opt);
  input_opt->excludes(image_opt)->excludes(frames_opt)->excludes(yuv_opt);
  image_opt->excludes(frames_opt)->excludes(yuv_opt);
  frames_opt->excludes(yuv_opt);
  app.add_option("--output", output_path, "Output .npy, float32 [N, embed_dim] (needed with an input)");
  app.add_option("--block-inputs", block_inputs_dir,
                 "Also write what the vision encoder's blocks take for the grid (rotary cos/sin, cu_seqlens, the window "
                 "schedule, ...) as DIR/<name>.npy and DIR/manifest.json; with --grid alone, no input is needed");
  app.add_option("--backend", backend, "auto|reference|onednn|xnnpack|gemmlowp")->check(CLI::IsMember(patchfuse::keys_of(patchfuse::backend_names())));
  app.add_option("--threads", threads, "Threads")->check(CLI::Range(1, 1024));
  app.add_option("--output-stage", output_stage,
                 "patches (the conv's output) | encoder-input (the vision encoder's first block input, as Hugging Face "
                 "computes it: position terms, class row, window order, first norm)")
      ->check(CLI::IsMember(patchfuse::keys_of(patchfuse::output_stage_names())));
  app.add_option("--grid", grid_text, "With --input: the rows' image_grid_thw TxHxW (Conv2d: T images of HxW patches); "
                                      "needed for --output-stage encoder-input. Alone: the grid of --block-inputs");
  app.add_option("--precision", precision, "auto|f32|bf16|f16|int8 (int8: images and frames only)")->check(CLI::IsMember(patchfuse::keys_of(patchfuse::precision_names())));
  app.add_option("--module", module, "Module path when the model has several");
  app.add_option("--weights-cache", weights_cache, "Packed-weights cache file: mapped instead of folding and packing when "
                                                   "it matches this model, library and CPU, written when it does not");
  app.add_flag("--no-fuse", no_fuse, "Run the original convolution instead of the fused GEMM");
  app.add_flag("--compare-reference", compare, "Also run the reference backend and print the difference");
  if (auto code = patchfuse::parse_command_line(app, argc, argv, "patchfuse-run")) return *code;
  const bool has_input = !(input_path.empty() && image_path.empty() && frame_paths.empty() && yuv_path.empty());
  const bool grid_only = !has_input && !block_inputs_dir.empty();  // block inputs for --grid, nothing to run
  if (!has_input && !grid_only) {
    std::fprintf(stderr, "patchfuse-run: usage error: one of --input, --image, --frames or --yuv is required, or "
                         "--block-inputs DIR with --grid TxHxW (see --help)\n");
    return 2;
  }
  if (has_input == output_path.empty()) {
    std::fprintf(stderr, "patchfuse-run: usage error: %s\n",
                 has_input ? "--output FILE.npy is required with an input" : "--output goes with an input, and there is none");
    return 2;
  }
  pf_grid given_grid{};
  if (!grid_text.empty() && ((!grid_only && input_path.empty()) || !patchfuse::parse_grid(grid_text, given_grid))) {
    std::fprintf(stderr, "patchfuse-run: usage error: --grid '%s' must be TxHxW of positive integers and goes with --input "
                         "or with --block-inputs alone\n",
                 grid_text.c_str());
    return 2;
  }
  if (grid_only && grid_text.empty()) {
    std::fprintf(stderr, "patchfuse-run: usage error: --block-inputs without an input needs --grid TxHxW\n");
    return 2;
  }
  const pf_output_stage stage = patchfuse::output_stage_names().at(output_stage);
  if (stage == PF_OUTPUT_ENCODER_INPUT && !input_path.empty() && grid_text.empty()) {
    std::fprintf(stderr, "patchfuse-run: usage error: --output-stage encoder-input with --input needs --grid TxHxW (the "
                         "position terms and row order depend on the grid)\n");
    return 2;
  }
  size_t yuv_w = 0, yuv_h = 0;
  if (!yuv_path.empty()) {
    if (!patchfuse::parse_size(size, yuv_w, yuv_h)) {
      std::fprintf(stderr, "patchfuse-run: usage error: --size '%s' must be WxH, e.g. 1920x1080\n", size.c_str());
      return 2;
    }
  }

  // An output over an input would replace the user's data with ours (the converter refuses the same).
  std::vector<std::string> inputs = {model_path, input_path, image_path, yuv_path};
  inputs.insert(inputs.end(), frame_paths.begin(), frame_paths.end());
  for (const std::string& out : {output_path, write_resized}) {
    if (const patchfuse::Status s = patchfuse::check_not_an_input(out, inputs); !s.ok()) return fail(s.error().message);
  }

  auto model = patchfuse::Model::open_file(model_path);
  if (!model) return fail(model.error());
  size_t index = 0;
  if (!module.empty()) {
    auto found = model->find_module(module);
    if (!found) return fail(model_path + ": " + found.error());
    index = *found;
  } else if (model->module_count() > 1) {
    std::string paths;
    for (size_t i = 0; i < model->module_count(); ++i) paths += (i ? ", " : "") + std::string(model->module(i).path);
    return fail(model_path + ": the model has " + std::to_string(model->module_count()) +
                " modules; choose one with --module (" + paths + ")");
  }
  const pf_module_info info = model->module(index);

  if (grid_only) {
    pf_session_options o = patchfuse::default_options();
    o.backend = PF_BACKEND_REFERENCE;  // nothing runs: no weights to pack beyond the reference's
    o.precision = precision == "auto" ? PF_PRECISION_F32 : patchfuse::precision_names().at(precision);
    auto session = patchfuse::Session::create(*model, index, o);
    if (!session) return fail(model_path + ": module " + info.path + ": " + session.error());
    const std::string err = patchfuse::write_block_inputs(*session, given_grid, block_inputs_dir, model_path, info);
    if (!err.empty()) return fail(model_path + ": module " + info.path + ": " + err);
    std::printf("wrote %s/: the block inputs of grid %s and manifest.json\n", block_inputs_dir.c_str(), grid_text.c_str());
    return 0;
  }

  Job job;
  patchfuse::NpyArray x;
  std::vector<patchfuse::Image> images;
  std::vector<pf_image> views;
  if (!input_path.empty()) {
    auto read = patchfuse::read_npy(input_path);
    if (!read.ok()) return fail(read.error().message);
    x = std::move(read).value();
    if (x.descr != "<f4") return fail(input_path + ": dtype '" + x.descr + "' must be float32 ('<f4')");
    // Rows may also come as the conv's input patches: [N, C, (kt,) kh, kw].
    std::vector<int64_t> conv_row = {info.in_channels};
    conv_row.insert(conv_row.end(), info.kernel, info.kernel + info.spatial_rank);
    const bool flat = x.shape.size() == 2 && x.shape[1] == info.patch_volume;
    const bool conv_shaped = x.shape.size() == 1 + conv_row.size() &&
                             std::vector<int64_t>(x.shape.begin() + 1, x.shape.end()) == conv_row;
    if (!(flat || conv_shaped) || x.shape[0] == 0) {
      std::string shape, conv;
      for (int64_t d : x.shape) shape += (shape.empty() ? "" : ", ") + std::to_string(d);
      for (int64_t d : conv_row) conv += ", " + std::to_string(d);
      return fail(input_path + ": shape (" + shape + ") must be [N, " + std::to_string(info.patch_volume) + "] or [N" +
                  conv + "] with N >= 1 for module " + info.path);
    }
    job.grid = grid_text.empty() ? pf_grid{1, 1, x.shape[0]} : given_grid;
    if (job.grid.t * job.grid.h * job.grid.w != x.shape[0]) {
      return fail(input_path + ": " + std::to_string(x.shape[0]) + " rows, but --grid " + grid_text + " has " +
                  std::to_string(job.grid.t * job.grid.h * job.grid.w));
    }
    const float* input = reinterpret_cast<const float*>(x.bytes.data());
    job.run = [&job, input](patchfuse::Session& s, float* out) { return s.run_grid(input, job.grid, out); };
  } else {
    // Images: decoded here, resized and cropped by the runtime as the model's processor does.
    if (!image_path.empty()) frame_paths = {image_path};
    if (!yuv_path.empty()) {
      auto raw = patchfuse::read_raw_image(yuv_path, patchfuse::pixel_format_names().at(format), yuv_w, yuv_h);
      if (!raw) return fail(raw.error());
      images.push_back(std::move(*raw));
    }
    patchfuse::DecodeOptions decode;
    decode.exif = !no_exif;
    decode.max_pixels = max_pixels;
    for (const std::string& file : frame_paths) {
      auto img = patchfuse::decode_image(file, decode);
      if (!img) return fail(img.error());
      if (!images.empty() && (img->width != images[0].width || img->height != images[0].height)) {
        return fail(file + ": frame size " + std::to_string(img->width) + "x" + std::to_string(img->height) +
                    " (width x height) differs from the first frame's " + std::to_string(images[0].width) + "x" +
                    std::to_string(images[0].height));
      }
      if (img->orientation != 1) std::printf("%s: EXIF orientation %d applied\n", file.c_str(), img->orientation);
      images.push_back(std::move(*img));
    }
    for (const patchfuse::Image& img : images) {
      views.push_back(img.view());
      views.back().matrix = patchfuse::color_matrix_names().at(matrix);
    }
    job.run = [&views](patchfuse::Session& s, float* out) { return s.run_video(views.data(), views.size(), out); };
    if (!yuv_path.empty() && format != "rgb" && format != "bgr" && format != "rgba" && format != "bgra" && format != "gray8") {
      std::printf("colour matrix %s (--matrix)\n", matrix.c_str());
    }
  }

  pf_session_options o = patchfuse::default_options();
  o.backend = patchfuse::backend_names().at(backend);
  o.threads = threads;
  o.precision = patchfuse::precision_names().at(precision);
  o.path = no_fuse ? PF_PATH_UNFUSED : PF_PATH_FUSED;
  o.output_stage = stage;
  o.weights_cache = weights_cache.empty() ? nullptr : weights_cache.c_str();
  auto session = patchfuse::Session::create(*model, index, o);
  if (!session) return fail(model_path + ": module " + info.path + ": " + session.error());
  if (!views.empty()) {
    // The processor's size is all the message needs; the frame is resized here only to be
    // written (the run resizes it again, a band at a time).
    const auto h = static_cast<int64_t>(images[0].height), w = static_cast<int64_t>(images[0].width);
    auto size = views.size() == 1 ? model->frame_size(index, h, w) : model->video_frame_size(index, views.size(), h, w);
    if (!size) return fail(model_path + ": module " + info.path + ": " + size.error());
    const auto [rh, rw] = *size;
    std::printf("%zu frame%s of %zux%zu (width x height)%s\n", views.size(), views.size() == 1 ? "" : "s",
                images[0].width, images[0].height,
                images[0].height == static_cast<size_t>(rh) && images[0].width == static_cast<size_t>(rw)
                    ? " (the processor's size)"
                    : (" -> the processor's " + std::to_string(rw) + "x" + std::to_string(rh) + " (resized by the runtime)").c_str());
    if (!write_resized.empty()) {
      int64_t ph = 0, pw = 0;
      auto resized = session->preprocess(views[0], views.size(), &ph, &pw);
      if (!resized) return fail(model_path + ": module " + info.path + ": " + resized.error());
      const std::string err = patchfuse::write_png(write_resized, resized->data(), static_cast<size_t>(rw), static_cast<size_t>(rh));
      if (!err.empty()) return fail(err);
      std::printf("wrote %s: the processor's %lldx%lld RGB frame (width x height)\n", write_resized.c_str(),
                  static_cast<long long>(rw), static_cast<long long>(rh));
    }
    auto grid = session->images_grid(views.size(), static_cast<int64_t>(images[0].height), static_cast<int64_t>(images[0].width));
    if (!grid) return fail(model_path + ": module " + info.path + ": " + grid.error());
    job.grid = *grid;
    std::printf("image_grid_thw [%lld, %lld, %lld]: %lld patches%s\n", static_cast<long long>(grid->t),
                static_cast<long long>(grid->h), static_cast<long long>(grid->w),
                static_cast<long long>(grid->t * grid->h * grid->w),
                info.spatial_rank == 2     ? " (Conv2d: one image per frame, patches in raster order)"
                : views.size() == 1 ? " (still image: weights summed over time, K = C*P*P)"
                                         : "");
  }
  auto rows = session->output_rows(job.grid);
  if (!rows) return fail(model_path + ": module " + info.path + ": " + rows.error());
  // The size is known: everything its first run would do once is done here (pf_session_prepare).
  const auto p0 = std::chrono::steady_clock::now();
  const std::string prepared = session->prepare(patchfuse::input_shape(views, job.grid));
  if (!prepared.empty()) return fail(model_path + ": module " + info.path + ": " + prepared);
  const double prepare_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - p0).count();
  if (stage == PF_OUTPUT_ENCODER_INPUT) std::printf("encoder input: %s\n", info.encoder_input);
  const auto out_rows = static_cast<size_t>(*rows);
  std::vector<float> y(out_rows * static_cast<size_t>(info.embed_dim));
  const auto t0 = std::chrono::steady_clock::now();
  const std::string err = job.run(*session, y.data());
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  if (!err.empty()) return fail(err);
  patchfuse::Status written = patchfuse::write_npy_f32(output_path, {*rows, info.embed_dim}, y.data());
  if (!written.ok()) return fail(written.error().message);

  const pf_session_info si = session->info();
  std::printf("%s: module %s, backend %s [%s%s%s], precision %s, %s path, %d thread%s\n", model_path.c_str(), info.path,
              pf_backend_name(si.backend), si.detail, si.isa[0] ? ", isa " : "", si.isa, patchfuse::precision_text(si.precision),
              no_fuse ? "unfused" : "fused", si.threads, si.threads == 1 ? "" : "s");
  if (si.note[0] != '\0') std::printf("note: %s\n", si.note);
  if (si.frame_kernels[0] != '\0') std::printf("frame kernels: %s\n", si.frame_kernels);
  std::stringstream lines(si.weights_cache);
  for (std::string line; std::getline(lines, line);) std::printf("weights cache: %s\n", line.c_str());
  std::printf("wrote %s: float32 [%zu, %d] (%s) in %.3f ms (first run, after %.3f ms of pf_session_prepare)\n",
              output_path.c_str(), out_rows, info.embed_dim, output_stage.c_str(), ms, prepare_ms);
  if (!block_inputs_dir.empty()) {
    const std::string berr = patchfuse::write_block_inputs(*session, job.grid, block_inputs_dir, model_path, info);
    if (!berr.empty()) return fail(model_path + ": module " + info.path + ": " + berr);
    std::printf("wrote %s/: the block inputs of grid [%lld, %lld, %lld] and manifest.json\n", block_inputs_dir.c_str(),
                static_cast<long long>(job.grid.t), static_cast<long long>(job.grid.h), static_cast<long long>(job.grid.w));
  }
  if (compare) {
    pf_session_options r = patchfuse::default_options();
    r.backend = PF_BACKEND_REFERENCE;
    r.path = o.path;
    r.output_stage = stage;
    auto ref = patchfuse::Session::create(*model, index, r);
    if (!ref) return fail("reference session: " + ref.error());
    std::vector<float> yr(y.size());
    const std::string rerr = job.run(*ref, yr.data());
    if (!rerr.empty()) return fail(rerr);
    const patchfuse::OutputDiff d = patchfuse::output_diff(y, yr);
    std::printf("vs reference backend (f32): max |diff| %.3g = %.3g of max |ref| %.3g\n", d.max_diff, d.relative(),
                d.max_ref);
  }
  return 0;
}
