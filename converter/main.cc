// patchfuse-convert: convert / inspect / export (DESIGN.md §4).
// Exit status: 0 success, 1 failure (bad input, I/O, unsupported), 2 usage error.
#include <cstdio>

#include "converter/convert.h"
#include "converter/export.h"
#include "converter/fusion_flags.h"
#include "converter/inspect.h"
#include "cli/command_line.h"

using namespace patchfuse;

namespace {

int fail(const Error& e) {
  std::fprintf(stderr, "patchfuse-convert: error: %s\n", e.message.c_str());
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"patchfuse-convert: Hugging Face checkpoint -> verified patchfuse model (.pfb)"};
  app.require_subcommand(1);

  ConvertOptions convert;
  std::vector<std::string> fusion_flags;
  std::string dtype = "keep", geometry;
  CLI::App* c = app.add_subcommand("convert", "Convert a checkpoint folder or .safetensors file to .pfb");
  c->add_option("INPUT", convert.input, "Model folder, .safetensors file or .safetensors.index.json")->required();
  c->add_option("-o,--output", convert.output, "Output .pfb path")->required();
  c->add_option("--config", convert.config, "config.json to use instead of the one beside the weights");
  c->add_option("--preprocessor", convert.preprocessor, "preprocessor_config.json to store (default: the one beside config.json, if any)");
  c->add_option("--video-preprocessor", convert.video_preprocessor,
                "video_preprocessor_config.json: how videos are sized (default: the one beside config.json, if any; else as images)");
  std::string image_resize, video_resize;
  c->add_option("--resize", image_resize, "Resize arithmetic for images of another size: pil (Pillow's bytes, default) or torch")
      ->check(CLI::IsMember({"pil", "torch"}));
  c->add_option("--video-resize", video_resize, "The same for video frames (default torch, as transformers' video processors)")
      ->check(CLI::IsMember({"pil", "torch"}));
  c->add_option("--fusion", fusion_flags, "NAME[=true|false|{options}], repeatable; default patch_embeddings=true; Conv2d models: --fusion conv2d_patch_embeddings");
  c->add_flag("--strict", convert.strict,
              "Refuse, with no output, what would be a note that a capability is missing (no preprocessor config, a "
              "skipped candidate, a tensor the encoder input needs, the block inputs' config values)");
  c->add_option("--dtype", dtype, "Weight dtype in the model")->check(CLI::IsMember({"keep", "f32", "f16", "bf16"}));
  c->add_option("--geometry", geometry,
                "Conv hyper-parameters for an architecture not in the table: "
                "stride=TxHxW[,padding=TxHxW][,dilation=TxHxW][,groups=N]");

  std::string inspect_path;
  bool inspect_json = false;
  CLI::App* i = app.add_subcommand("inspect", "Verify a .pfb and print what it holds");
  i->add_option("MODEL", inspect_path, "Model .pfb")->required();
  i->add_flag("--json", inspect_json, "Print JSON instead of a table");

  std::string export_path, export_out;
  CLI::App* e = app.add_subcommand("export", "Write the original-layout safetensors back from a .pfb");
  e->add_option("MODEL", export_path, "Model .pfb")->required();
  e->add_option("-o,--output", export_out, "Output .safetensors path")->required();

  if (auto code = patchfuse::parse_command_line(app, argc, argv, "patchfuse-convert")) return *code;

  if (c->parsed()) {
    convert.fusion = parse_fusion_flags(fusion_flags);
    const auto semantics = [](const std::string& s) {
      return s.empty() ? std::nullopt : std::optional(s == "torch" ? ResizeSemantics::kTorch : ResizeSemantics::kPil);
    };
    convert.image_resize = semantics(image_resize);
    convert.video_resize = semantics(video_resize);
    if (dtype == "f32") convert.dtype = DType::kF32;
    if (dtype == "f16") convert.dtype = DType::kF16;
    if (dtype == "bf16") convert.dtype = DType::kBF16;
    if (!geometry.empty()) {
      Result<GeometryOverride> g = parse_geometry_override(geometry);
      if (!g.ok()) {
        std::fprintf(stderr, "patchfuse-convert: usage error: %s\n", g.error().message.c_str());
        return 2;
      }
      convert.geometry = g.value();
    }
    Result<ConvertReport> r = convert_checkpoint(convert);
    if (!r.ok()) return fail(r.error());
    for (const std::string& note : r->notes) std::fprintf(stderr, "note: %s\n", note.c_str());
    for (const std::string& line : r->written) std::printf("wrote %s\n", line.c_str());
    std::printf("-> %s\n", convert.output.c_str());
    return 0;
  }
  if (i->parsed()) {
    Result<std::string> r = inspect_model(inspect_path, inspect_json);
    if (!r.ok()) return fail(r.error());
    std::fputs(r->c_str(), stdout);
    return 0;
  }
  Result<std::vector<std::string>> r = export_model(export_path, export_out);
  if (!r.ok()) return fail(r.error());
  for (const std::string& line : *r) std::printf("wrote %s\n", line.c_str());
  std::printf("-> %s\n", export_out.c_str());
  return 0;
}
