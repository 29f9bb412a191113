// patchfuse-run: runs one module of a .pfb on a .npy input and writes a .npy output (DESIGN.md §4).
// Exit status: 0 success, 1 failure (bad input, I/O, unsupported), 2 usage error.
#include <chrono>
#include <cmath>
#include <cstdio>

#include "patchfuse/patchfuse.hpp"
#include "tools/command_line.h"
#include "tools/npy.h"
#include "tools/option_names.h"

namespace {

int fail(const std::string& message) {
  std::fprintf(stderr, "patchfuse-run: error: %s\n", message.c_str());
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"patchfuse-run: run a patch embedding of a .pfb model on .npy patches"};
  std::string model_path, input_path, output_path, module, backend = "auto", precision = "auto";
  int threads = 1;
  bool no_fuse = false, compare = false;
  app.add_option("MODEL", model_path, "Model .pfb")->required();
  app.add_option("--input", input_path, "float32 .npy, [N, C*kt*kh*kw] or [N, C, kt, kh, kw]")->required();
  app.add_option("--output", output_path, "Output .npy, float32 [N, embed_dim]")->required();
  app.add_option("--backend", backend, "auto|reference|onednn|xnnpack")->check(CLI::IsMember(patchfuse::keys_of(patchfuse::backend_names())));
  app.add_option("--threads", threads, "Threads")->check(CLI::Range(1, 1024));
  app.add_option("--precision", precision, "auto|f32|bf16|f16")->check(CLI::IsMember(patchfuse::keys_of(patchfuse::precision_names())));
  app.add_option("--module", module, "Module path when the model has several");
  app.add_flag("--no-fuse", no_fuse, "Run the original convolution instead of the fused GEMM");
  app.add_flag("--compare-reference", compare, "Also run the reference backend and print the difference");
  if (auto code = patchfuse::parse_command_line(app, argc, argv, "patchfuse-run")) return *code;

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

  auto x = patchfuse::read_npy(input_path);
  if (!x.ok()) return fail(x.error().message);
  if (x->descr != "<f4") return fail(input_path + ": dtype '" + x->descr + "' must be float32 ('<f4')");
  const std::vector<int64_t> conv_row = {info.in_channels, info.kernel[0], info.kernel[1], info.kernel[2]};
  const bool flat = x->shape.size() == 2 && x->shape[1] == info.patch_volume;
  const bool five_d = x->shape.size() == 5 && std::vector<int64_t>(x->shape.begin() + 1, x->shape.end()) == conv_row;
  if (!(flat || five_d) || x->shape[0] == 0) {
    std::string shape;
    for (int64_t d : x->shape) shape += (shape.empty() ? "" : ", ") + std::to_string(d);
    return fail(input_path + ": shape (" + shape + ") must be [N, " + std::to_string(info.patch_volume) + "] or [N, " +
                std::to_string(info.in_channels) + ", " + std::to_string(info.kernel[0]) + ", " +
                std::to_string(info.kernel[1]) + ", " + std::to_string(info.kernel[2]) + "] with N >= 1 for module " +
                info.path);
  }
  const size_t n = static_cast<size_t>(x->shape[0]);
  const float* input = reinterpret_cast<const float*>(x->bytes.data());

  pf_session_options o = patchfuse::default_options();
  o.backend = patchfuse::backend_names().at(backend);
  o.threads = threads;
  o.precision = patchfuse::precision_names().at(precision);
  o.path = no_fuse ? PF_PATH_UNFUSED : PF_PATH_FUSED;
  auto session = patchfuse::Session::create(*model, index, o);
  if (!session) return fail(model_path + ": module " + info.path + ": " + session.error());
  std::vector<float> y(n * static_cast<size_t>(info.embed_dim));
  const auto t0 = std::chrono::steady_clock::now();
  const std::string err = session->run(input, n, y.data());
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  if (!err.empty()) return fail(err);
  patchfuse::Status written = patchfuse::write_npy_f32(output_path, {static_cast<int64_t>(n), info.embed_dim}, y.data());
  if (!written.ok()) return fail(written.error().message);

  const pf_session_info si = session->info();
  std::printf("%s: module %s, backend %s [%s%s%s], precision %s, %s path, %d thread%s\n", model_path.c_str(), info.path,
              pf_backend_name(si.backend), si.detail, si.isa[0] ? ", isa " : "", si.isa, patchfuse::precision_text(si.precision),
              no_fuse ? "unfused" : "fused", si.threads, si.threads == 1 ? "" : "s");
  if (si.note[0] != '\0') std::printf("note: %s\n", si.note);
  std::printf("wrote %s: float32 [%zu, %d] in %.3f ms (first run, includes one-time primitive setup)\n",
              output_path.c_str(), n, info.embed_dim, ms);
  if (compare) {
    pf_session_options r = patchfuse::default_options();
    r.backend = PF_BACKEND_REFERENCE;
    r.path = o.path;
    auto ref = patchfuse::Session::create(*model, index, r);
    if (!ref) return fail("reference session: " + ref.error());
    std::vector<float> yr(y.size());
    const std::string rerr = ref->run(input, n, yr.data());
    if (!rerr.empty()) return fail(rerr);
    double max_diff = 0, max_ref = 0;
    for (size_t i = 0; i < y.size(); ++i) {
      max_diff = std::max(max_diff, static_cast<double>(std::fabs(y[i] - yr[i])));
      max_ref = std::max(max_ref, static_cast<double>(std::fabs(yr[i])));
    }
    std::printf("vs reference backend (f32): max |diff| %.3g = %.3g of max |ref| %.3g\n", max_diff,
                max_ref > 0 ? max_diff / max_ref : 0.0, max_ref);
  }
  return 0;
}
