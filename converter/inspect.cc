#include "converter/inspect.h"

#include <iomanip>
#include <nlohmann/json.hpp>
#include <sstream>

#include "runtime/model/model_file.h"

namespace patchfuse {

using ojson = nlohmann::ordered_json;  // keeps the fusion config in the user's order

namespace {

ojson fusion_config_json(const FusionConfig& config) {
  ojson j = ojson::object();
  for (const FusionConfigEntry& e : config) {
    if (e.value.kind == FusionValue::Kind::kOptions) {
      ojson opts = ojson::object();
      for (const auto& [k, v] : e.value.options) opts[k] = ojson::parse(v, nullptr, false);
      j[e.family] = opts;
    } else {
      j[e.family] = e.value.enabled;
    }
  }
  return j;
}

ojson tensor_json(const TensorView& t, const uint8_t* base) {
  return {{"name", t.name}, {"shape", t.shape}, {"dtype", dtype_name(t.dtype)}, {"bytes", t.bytes},
          {"offset", static_cast<size_t>(t.data - base)}};
}

// The encoder input's steps (null for a file converted before they were stored).
ojson encoder_input_json(const std::optional<EncoderInputSpec>& e) {
  if (!e) return nullptr;
  ojson j;
  j["steps"] = e->describe();
  if (!e->refused.empty()) {
    j["refused"] = e->refused;
    return j;
  }
  j["merge_size"] = e->merge_size;
  if (e->window_size > 0) j["window_size"] = e->window_size;
  const auto table = [](const TableView& t) { return t.empty() ? ojson(nullptr) : ojson({{"name", t.name}, {"dtype", dtype_name(t.dtype)}}); };
  if (!e->class_embedding.empty()) j["class_embedding"] = table(e->class_embedding);
  if (e->position_mode != PositionMode::kNone) {
    j["position"] = {{"mode", position_mode_name(e->position_mode)}, {"side", e->position_side}, {"table", table(e->position)}};
  }
  if (e->norm != NormKind::kNone) {
    j["norm"] = {{"kind", norm_kind_name(e->norm)}, {"eps", e->norm_eps}, {"weight", table(e->norm_weight)},
                 {"bias", table(e->norm_bias)}, {"before_position", e->norm_before_position}};
  }
  j["missing"] = e->missing;
  return j;
}

// What the blocks take per grid and their schedule (null for a file converted before 0.6).
ojson blocks_json(const ModuleView& m) {
  if (!m.blocks) return nullptr;
  const BlockSpec& b = *m.blocks;
  ojson j = {{"schedule", b.schedule(*m.encoder_input)}};
  if (!b.refused.empty()) {
    j["refused"] = b.refused;
    return j;
  }
  j["inputs"] = block_input_names(b, *m.encoder_input);
  j["depth"] = b.depth;
  j["num_heads"] = b.num_heads;
  j["head_dim"] = b.head_dim;
  j["rotary"] = rotary_kind_name(b.rotary);
  if (b.rotary != RotaryKind::kNone) j["rope_theta"] = b.rope_theta;
  if (m.encoder_input->window_size > 0) j["fullatt_block_indexes"] = b.fullatt_block_indexes;
  if (!b.deepstack_visual_indexes.empty()) j["deepstack_visual_indexes"] = b.deepstack_visual_indexes;
  if (b.position_ids != PositionIdsKind::kNone) {
    j["position_ids"] = {{"kind", position_ids_kind_name(b.position_ids)}, {"side", b.position_side}};
  }
  return j;
}

ojson preprocessing_json(const std::optional<Preprocessing>& p) {
  if (!p) return nullptr;
  ojson j = {{"image_mean", p->mean},        {"image_std", p->std},
             {"rescale_factor", p->rescale_factor}, {"patch_size", p->patch_size},
             {"temporal_patch_size", p->temporal_patch_size}, {"merge_size", p->merge_size}};
  j["resample"] = resample_name(p->resample);
  j["do_resize"] = p->do_resize;
  j["resize"] = {{"image", resize_semantics_name(p->image_semantics)}, {"video", resize_semantics_name(p->video_semantics)}};
  if (p->resize == ResizeVariant::kFixed) {
    j["size"] = {{"height", p->fixed_height}, {"width", p->fixed_width}};
    if (p->shortest_edge > 0) {
      j["resize_to"] = {{"shortest_edge", p->shortest_edge}};
    } else if (p->resize_height > 0) {
      j["resize_to"] = {{"height", p->resize_height}, {"width", p->resize_width}};
    }
    if (p->shortest_edge > 0 || p->resize_height > 0) j["center_crop"] = true;
  } else {
    j["min_pixels"] = p->min_pixels;
    j["max_pixels"] = p->max_pixels;
    j["smart_resize"] = resize_variant_name(p->resize);
    if (const auto& v = p->video) {
      j["video"] = {{"smart_resize", resize_variant_name(v->variant)}, {"min_pixels", v->min_pixels},
                    {"max_pixels", v->max_pixels}, {"cap_pixels_per_frame", v->cap_pixels_per_frame}};
    } else {
      j["video"] = "as images";
    }
  }
  return j;
}

std::string dims_list(const std::vector<int64_t>& d) {
  std::string s = "[";
  for (size_t i = 0; i < d.size(); ++i) s += cat(i ? ", " : "", d[i]);
  return s + "]";
}

}  // namespace

Result<std::string> inspect_model(const std::string& path, bool as_json) {
  PF_ASSIGN_OR_RETURN(ModelFile model, open_model_file(path));
  const ModelView& m = model.view;
  const uint8_t* base = model.file.data();
  if (as_json) {
    ojson j;
    // The JSON's own version (docs/converter.md, "inspect --json"): bumped when a key changes
    // meaning or goes; keys are only added within a version.
    j["inspect_version"] = 1;
    j["file"] = path;
    j["file_bytes"] = model.file.size();
    j["schema_version"] = m.schema_version;
    j["producer"] = m.producer;
    j["model_type"] = m.model_type;
    j["fusion_config"] = fusion_config_json(m.fusion_config);
    j["modules"] = ojson::array();
    for (const ModuleView& mod : m.modules) {
      const ConvGeometry& g = mod.geometry;
      j["modules"].push_back({{"path", mod.path},
                              {"family", mod.family->name},
                              {"class_name", mod.class_name},
                              {"layout", layout_name(mod.layout)},
                              {"geometry",
                               {{"kernel", g.kernel}, {"stride", g.stride}, {"padding", g.padding},
                                {"dilation", g.dilation}, {"groups", g.groups}, {"in_channels", g.in_channels},
                                {"embed_dim", g.embed_dim}}},
                              {"patch_volume", mod.patch_volume},
                              {"dtype", dtype_name(mod.dtype)},
                              {"source_dtype", dtype_name(mod.source_dtype)},
                              {"weight", tensor_json(mod.weight, base)},
                              {"bias", mod.bias ? tensor_json(*mod.bias, base) : ojson(nullptr)},
                              {"preprocessing", preprocessing_json(mod.preprocessing)},
                              {"encoder_input", encoder_input_json(mod.encoder_input)},
                              {"blocks", blocks_json(mod)}});
    }
    return j.dump(2) + "\n";
  }
  std::ostringstream out;
  out << path << ": patchfuse model, " << model.file.size() << " bytes, schema " << m.schema_version << ", "
      << m.producer << "\n";
  out << "  model_type     " << (m.model_type.empty() ? "(none)" : m.model_type) << "\n";
  out << "  fusion config  " << fusion_config_json(m.fusion_config).dump() << "\n";
  for (const ModuleView& mod : m.modules) {
    const ConvGeometry& g = mod.geometry;
    out << "\nmodule " << mod.path << "  (" << mod.family->name << ", "
        << (mod.class_name.empty() ? "class unknown" : mod.class_name) << ")\n";
    out << "  layout         " << layout_name(mod.layout) << "\n";
    out << "  conv           in " << g.in_channels << " -> out " << g.embed_dim << ", kernel " << format_dims(g.kernel)
        << ", stride " << format_dims(g.stride) << ", padding " << format_dims(g.padding) << ", dilation "
        << format_dims(g.dilation) << ", groups " << g.groups << "\n";
    out << "  patch_volume   " << mod.patch_volume << "\n";
    out << "  dtype          " << dtype_name(mod.dtype)
        << (mod.dtype != mod.source_dtype ? cat(" (converted from ", dtype_name(mod.source_dtype), ")") : "") << "\n";
    for (const TensorView* t : {&mod.weight, mod.bias ? &*mod.bias : nullptr}) {
      if (t == nullptr) continue;
      out << "  " << std::left << std::setw(15) << (t == &mod.weight ? "weight" : "bias") << t->name << " "
          << dims_list(t->shape) << " " << dtype_name(t->dtype) << ", " << t->bytes << " bytes at offset "
          << (t->data - base) << "\n";
    }
    if (!mod.bias) out << "  bias           (none)\n";
    if (const auto& p = mod.preprocessing) {
      out << "  preprocessing  " << preprocessing_json(p).dump() << "\n";
    } else {
      out << "  preprocessing  (none: pixel_values only; the frames API refuses this model)\n";
    }
    out << "  encoder input  "
        << (mod.encoder_input ? mod.encoder_input->describe() : "(not stored: converted before 0.5; output stage patches only)")
        << "\n";
    if (mod.blocks) {
      std::string names;
      for (const std::string& n : block_input_names(*mod.blocks, *mod.encoder_input)) names += (names.empty() ? "" : ", ") + n;
      out << "  block inputs   " << (names.empty() ? std::string("(none: the blocks take the hidden states only)") : names)
          << "\n";
      out << "  blocks         " << mod.blocks->schedule(*mod.encoder_input) << "\n";
    } else {
      out << "  block inputs   (not stored: converted before 0.6)\n";
    }
  }
  return out.str();
}

}  // namespace patchfuse
