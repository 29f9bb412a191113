// patchfuse-run: runs one module of a .pfb on a .npy input and writes a .npy output (DESIGN.md §4).
// Exit status: 0 success, 1 failure (bad input, I/O, unsupported), 2 usage error.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <functional>

#include "patchfuse/patchfuse.hpp"
#include "cli/command_line.h"
#include "tools/image_frames.h"
#include "tools/output_diff.h"
#include "cli/npy.h"
#include "tools/option_names.h"

namespace {

int fail(const std::string& message) {
  std::fprintf(stderr, "patchfuse-run: error: %s\n", message.c_str());
  return 1;
}

// What one run needs: the rows it produces and how to compute them on a session.
struct Job {
  size_t rows = 0;
  std::function<std::string(patchfuse::Session&, float*)> run;
};

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"patchfuse-run: run a patch embedding of a .pfb model on .npy patches or on images"};
  std::string model_path, input_path, image_path, output_path, module, backend = "auto", precision = "auto";
  std::vector<std::string> frame_paths;
  int threads = 1;
  bool no_fuse = false, compare = false;
  app.add_option("MODEL", model_path, "Model .pfb")->required();
  auto* input_opt = app.add_option("--input", input_path, "float32 .npy, [N, C*kt*kh*kw] or [N, C, (kt,) kh, kw] (patch rows)");
  auto* image_opt = app.add_option("--image", image_path, "A still image (PNG, JPEG, PPM, BMP, ...), preprocessed as Hugging Face does");
  auto* frames_opt = app.add_option("--frames", frame_paths, "Video frames, comma-separated image files of one size")->delimiter(',');
  input_opt->excludes(image_opt)->excludes(frames_opt);
  image_opt->excludes(frames_opt);
  app.add_option("--output", output_path, "Output .npy, float32 [N, embed_dim]")->required();
  app.add_option("--backend", backend, "auto|reference|onednn|xnnpack")->check(CLI::IsMember(patchfuse::keys_of(patchfuse::backend_names())));
  app.add_option("--threads", threads, "Threads")->check(CLI::Range(1, 1024));
  app.add_option("--precision", precision, "auto|f32|bf16|f16")->check(CLI::IsMember(patchfuse::keys_of(patchfuse::precision_names())));
  app.add_option("--module", module, "Module path when the model has several");
  app.add_flag("--no-fuse", no_fuse, "Run the original convolution instead of the fused GEMM");
  app.add_flag("--compare-reference", compare, "Also run the reference backend and print the difference");
  if (auto code = patchfuse::parse_command_line(app, argc, argv, "patchfuse-run")) return *code;
  if (input_path.empty() && image_path.empty() && frame_paths.empty()) {
    std::fprintf(stderr, "patchfuse-run: usage error: one of --input, --image or --frames is required (see --help)\n");
    return 2;
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

  Job job;
  patchfuse::NpyArray x;
  patchfuse::LoadedFrames frames;
  std::vector<const uint8_t*> frame_ptrs;
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
    job.rows = static_cast<size_t>(x.shape[0]);
    const float* input = reinterpret_cast<const float*>(x.bytes.data());
    job.run = [&job, input](patchfuse::Session& s, float* out) { return s.run(input, job.rows, out); };
  } else {
    if (!image_path.empty()) frame_paths = {image_path};
    auto loaded = patchfuse::load_frames(frame_paths, *model, index);
    if (!loaded) return fail(model_path + ": " + loaded.error());
    frames = std::move(*loaded);
    frame_ptrs = frames.pointers();
    std::printf("%zu frame%s of %zux%zu%s\n", frames.frames.size(), frames.frames.size() == 1 ? "" : "s", frames.source_height,
                frames.source_width,
                frames.resized ? (" resized to " + std::to_string(frames.height) + "x" + std::to_string(frames.width) +
                                  " (stb_image_resize, not PIL's bicubic)").c_str()
                               : " (already the model's size)");
    job.run = [&frames, &frame_ptrs](patchfuse::Session& s, float* out) {
      return s.run_frames(frame_ptrs.data(), frame_ptrs.size(), frames.height, frames.width, frames.width * 3, out);
    };
  }

  pf_session_options o = patchfuse::default_options();
  o.backend = patchfuse::backend_names().at(backend);
  o.threads = threads;
  o.precision = patchfuse::precision_names().at(precision);
  o.path = no_fuse ? PF_PATH_UNFUSED : PF_PATH_FUSED;
  auto session = patchfuse::Session::create(*model, index, o);
  if (!session) return fail(model_path + ": module " + info.path + ": " + session.error());
  if (!frame_ptrs.empty()) {
    auto grid = session->frames_grid(frame_ptrs.size(), frames.height, frames.width);
    if (!grid) return fail(model_path + ": module " + info.path + ": " + grid.error());
    job.rows = static_cast<size_t>(grid->t * grid->h * grid->w);
    std::printf("image_grid_thw [%lld, %lld, %lld]: %zu patches%s\n", static_cast<long long>(grid->t),
                static_cast<long long>(grid->h), static_cast<long long>(grid->w), job.rows,
                info.spatial_rank == 2     ? " (Conv2d: one image per frame, patches in raster order)"
                : frame_ptrs.size() == 1 ? " (still image: weights summed over time, K = C*P*P)"
                                         : "");
  }
  std::vector<float> y(job.rows * static_cast<size_t>(info.embed_dim));
  const auto t0 = std::chrono::steady_clock::now();
  const std::string err = job.run(*session, y.data());
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  if (!err.empty()) return fail(err);
  patchfuse::Status written = patchfuse::write_npy_f32(output_path, {static_cast<int64_t>(job.rows), info.embed_dim}, y.data());
  if (!written.ok()) return fail(written.error().message);

  const pf_session_info si = session->info();
  std::printf("%s: module %s, backend %s [%s%s%s], precision %s, %s path, %d thread%s\n", model_path.c_str(), info.path,
              pf_backend_name(si.backend), si.detail, si.isa[0] ? ", isa " : "", si.isa, patchfuse::precision_text(si.precision),
              no_fuse ? "unfused" : "fused", si.threads, si.threads == 1 ? "" : "s");
  if (si.note[0] != '\0') std::printf("note: %s\n", si.note);
  std::printf("wrote %s: float32 [%zu, %d] in %.3f ms (first run, includes one-time setup)\n", output_path.c_str(), job.rows,
              info.embed_dim, ms);
  if (compare) {
    pf_session_options r = patchfuse::default_options();
    r.backend = PF_BACKEND_REFERENCE;
    r.path = o.path;
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
