#include "converter/convert.h"

#include <algorithm>
#include <fstream>
#include <set>

#include "converter/checkpoint.h"
#include "converter/encoder_input_record.h"
#include "converter/model_writer.h"
#include "converter/preprocessor_config.h"
#include "runtime/core/output_file.h"

namespace patchfuse {

namespace {

// The flags' semantics, or the defaults: pil for images (Pillow's bytes, what every other result
// is measured against), torch for videos (transformers' video processors resize with torchvision
// only) unless torch lacks the filter. torch has nearest, bilinear and bicubic only.
Status choose_resize_semantics(const ConvertOptions& o, const std::string& path, Preprocessing& p) {
  const bool torch_ok = torch_has_filter(p.resample);
  for (const auto& [flag, chosen] : {std::pair{"--resize", o.image_resize}, std::pair{"--video-resize", o.video_resize}}) {
    PF_CHECK(chosen != ResizeSemantics::kTorch || torch_ok, Code::kInvalidArgument, flag, " torch: ", path,
             "'s resample ", static_cast<int>(p.resample), " (", resample_name(p.resample),
             ") is not one of torch's interpolations (nearest, bilinear, bicubic); use pil");
  }
  p.image_semantics = o.image_resize.value_or(ResizeSemantics::kPil);
  p.video_semantics = o.video_resize.value_or(torch_ok ? ResizeSemantics::kTorch : ResizeSemantics::kPil);
  return {};
}

}  // namespace

Result<ConvertReport> convert_checkpoint(const ConvertOptions& o) {
  PF_ASSIGN_OR_RETURN(std::vector<FusionStep> steps, validate_fusion_config(merge_with_default(o.fusion)));
  PF_ASSIGN_OR_RETURN(Checkpoint ckpt, Checkpoint::open(o.input, o.config));
  PF_RETURN_IF_ERROR(check_not_an_input(o.output, ckpt.files()));
  PF_ASSIGN_OR_RETURN(VisionConfig config, load_vision_config(ckpt.config_path()));
  if (const char* why = already_linear_reason(config.model_type)) {
    return make_error(Code::kUnsupported, cat(ckpt.config_path(), ": model_type '", config.model_type, "': ", why));
  }
  const Architecture* arch = find_architecture(config.model_type);
  ConvertReport report;
  // A note that means the model lacks a capability: also a gap, which --strict refuses.
  const auto gap = [&](std::string note) {
    report.gaps.push_back(note);
    report.notes.push_back(std::move(note));
  };
  std::optional<Preprocessing> preprocessing;
  // The file given, else `name` beside config.json if it exists, else "".
  const auto found = [&](const std::string& given, const char* name) {
    if (!given.empty()) return given;
    const std::string& c = ckpt.config_path();
    const size_t slash = c.find_last_of('/');
    const std::string beside = (slash == std::string::npos ? std::string() : c.substr(0, slash + 1)) + name;
    return std::ifstream(beside) ? beside : std::string();
  };
  const std::string preprocessor_path = found(o.preprocessor, "preprocessor_config.json");
  if (preprocessor_path.empty()) {
    gap("no preprocessor_config.json beside " + ckpt.config_path() +
        ": the model takes pixel_values only (pass --preprocessor FILE for frames)");
  } else {
    Result<Preprocessing> loaded = load_preprocessor_config(preprocessor_path, config.model_type);
    if (loaded.ok()) {
      preprocessing = std::move(loaded).value();
      PF_RETURN_IF_ERROR(choose_resize_semantics(o, preprocessor_path, *preprocessing));
      // Fixed-size processors size each frame as an image; their video configs do not matter.
      const std::string video_path = found(o.video_preprocessor, "video_preprocessor_config.json");
      if (preprocessing->resize != ResizeVariant::kFixed && !video_path.empty()) {
        PF_ASSIGN_OR_RETURN(preprocessing->video,
                            load_video_preprocessor_config(video_path, *preprocessing, preprocessor_path));
      }
    } else if (loaded.error().code == Code::kUnsupported) {
      gap(loaded.error().message + ": the model takes pixel_values only");
    } else {
      return loaded.error();
    }
  }

  PF_CHECK((!o.image_resize && !o.video_resize) || preprocessing, Code::kInvalidArgument,
           "--resize/--video-resize: the model has no preprocessing for them to go with (",
           preprocessor_path.empty() ? std::string("no preprocessor_config.json") : preprocessor_path, ")");
  PF_CHECK(o.video_preprocessor.empty() || (preprocessing && preprocessing->video), Code::kInvalidArgument,
           "--video-preprocessor ", o.video_preprocessor, ": the model has no smart_resize preprocessing for it to "
           "go with (", preprocessor_path.empty() ? std::string("no preprocessor_config.json") : preprocessor_path, ")");

  std::vector<ModuleRecord> modules;
  std::set<std::string> claimed;  // a module belongs to the first family, in config order, that matches it
  size_t candidates = 0;
  for (const FusionStep& step : steps) {
    const FusionFamily& family = *step.family;
    for (const std::string& name : ckpt.tensor_names()) {
      const std::optional<std::string> module = candidate_module(family, name);
      if (!module || !claimed.insert(*module).second) continue;
      ++candidates;
      PF_ASSIGN_OR_RETURN(CheckpointTensor w, ckpt.tensor(name));
      if (w.entry->shape.size() != 2 + static_cast<size_t>(family.spatial_rank)) {
        gap(cat("skipped ", *module, ": ", name, " has shape ", format_dims(w.entry->shape), ", not a rank-",
                2 + family.spatial_rank, " conv weight"));
        continue;
      }
      PF_ASSIGN_OR_RETURN(ConvGeometry g, resolve_geometry(family, *module, name, w.entry->shape, config, o.geometry));
      const std::vector<std::string> broken = eligibility_violations(g);
      if (!broken.empty()) {
        gap(cat("skipped ", *module, ": not eligible for '", family.name, "' fusion: ", broken.front()));
        continue;
      }
      ModuleRecord m;
      m.path = *module;
      m.family = &family;
      m.layout = step.enabled ? Layout::kFusedLinear : Layout::kOriginalConv;
      m.geometry = g;
      if (preprocessing) {
        Preprocessing pre = *preprocessing;
        const size_t r = g.kernel.size();
        // Fixed-size processors do not cut patches; the weight's square kernel is the patch.
        if (pre.resize == ResizeVariant::kFixed && pre.patch_size == 0) {
          if (g.kernel[r - 2] == g.kernel[r - 1]) pre.patch_size = g.kernel[r - 1];
        }
        if (pre.patch_size == 0) {
          gap(cat(*module, ": kernel ", format_dims(g.kernel),
                  " is not square; frames need square patches, so it takes pixel_values only"));
        } else {
          PF_RETURN_IF_ERROR(check_preprocessing(pre, g, cat(preprocessor_path, " vs ", name, " ", format_dims(w.entry->shape))));
          m.preprocessing = pre;
        }
      }
      // The architecture names the class of its own family's module only.
      const bool arch_module = arch && arch->family == family.name;
      const std::string original_class = arch_module ? std::string(arch->patch_embed_class) : std::string();
      m.class_name = step.enabled ? fused_class_name(original_class) : original_class;
      const bool fused = m.layout == Layout::kFusedLinear;
      PF_ASSIGN_OR_RETURN(m.weight, read_tensor(ckpt, name, fused ? fused_weight_name(family, m.path) : name,
                                                fused ? fused_weight_shape(g) : conv_weight_shape(g), o.dtype,
                                                report.notes));
      m.source_dtype = *dtype_from_name(w.entry->dtype);
      m.dtype = m.weight.dtype;
      const std::string bias = conv_bias_name(family, m.path);
      if (ckpt.has(bias)) {
        PF_ASSIGN_OR_RETURN(CheckpointTensor b, ckpt.tensor(bias));
        PF_CHECK(b.entry->shape == std::vector<int64_t>{g.embed_dim}, Code::kInvalidModel, *b.file, ": tensor ", bias,
                 " has shape ", format_dims(b.entry->shape), "; the conv bias must be (", g.embed_dim, ")");
        PF_CHECK(b.entry->dtype == w.entry->dtype || o.dtype, Code::kUnsupported, *b.file, ": tensor ", bias,
                 " is ", b.entry->dtype, " but ", name, " is ", w.entry->dtype,
                 "; pass --dtype to store both in one dtype");
        PF_ASSIGN_OR_RETURN(m.bias, read_tensor(ckpt, bias, fused ? fused_bias_name(family, m.path) : bias,
                                                {g.embed_dim}, m.dtype, report.notes));
      }
      if (arch_module) {
        PF_ASSIGN_OR_RETURN(m.encoder_input, encoder_input_record(ckpt, *arch, config, m.path, g, report.notes));
        for (const std::string& missing : m.encoder_input->missing) {
          gap(cat(m.path, ": the checkpoint has no ", missing, ", which the encoder input needs"));
        }
        PF_ASSIGN_OR_RETURN(m.blocks, block_spec(*arch, config, g));
        if (!m.blocks->refused.empty()) gap("block inputs not stored: " + m.blocks->refused);
      }
      report.written.push_back(cat(m.path, ": ", layout_name(m.layout), " ", format_dims(m.weight.shape), " ",
                                   dtype_name(m.dtype), m.bias ? " +bias" : ""));
      modules.push_back(std::move(m));
    }
  }
  if (candidates == 0 && arch != nullptr) {
    // A known architecture whose family the config did not name: say which flag converts it.
    const bool named = std::any_of(steps.begin(), steps.end(), [&](const FusionStep& s) { return s.family->name == arch->family; });
    PF_CHECK(named, Code::kInvalidModel, o.input, ": no patch embedding found for the fusion config's families; model_type '",
             config.model_type, "' has a '", arch->family, "' module (", arch->patch_embed_path, "): pass --fusion ",
             arch->family);
  }
  PF_CHECK(candidates > 0, Code::kInvalidModel, o.input, ": no patch embedding found (no tensor named <M>.proj.weight ",
           "with M a patch_embed, e.g. visual.patch_embed, nor, with --fusion conv2d_patch_embeddings, <M>.weight with M ",
           "a patch_embedding, patch_embeddings.projection or patch_conv)");
  PF_CHECK(!modules.empty(), Code::kUnsupported, o.input, ": none of the ", candidates,
           " patch embeddings is eligible; ", report.notes.back());

  PF_CHECK(!o.strict || report.gaps.empty(), Code::kUnsupported, "--strict: ",
           report.gaps.empty() ? std::string() : report.gaps.front());
  const std::vector<uint8_t> bytes = build_model(config.model_type, steps, modules);
  // The converter's own output passes the same verification the runtime will apply.
  Result<ModelView> check = read_model(bytes.data(), bytes.size(), o.output);
  PF_CHECK(check.ok(), Code::kInternal, "converter produced a model that fails verification: ",
           check.ok() ? "" : check.error().message);
  PF_RETURN_IF_ERROR(write_file_atomically(o.output, bytes));
  return report;
}

}  // namespace patchfuse
