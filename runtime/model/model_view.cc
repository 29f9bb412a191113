#include "runtime/model/model_view.h"

#include <flatbuffers/flatbuffers.h>

#include <set>

#include "patchfuse_generated.h"
#include "runtime/core/checked_math.h"
#include "runtime/model/model_format.h"

namespace patchfuse {

static_assert(static_cast<int>(fb::DType_F32) == static_cast<int>(DType::kF32) &&
                  static_cast<int>(fb::DType_F16) == static_cast<int>(DType::kF16) &&
                  static_cast<int>(fb::DType_BF16) == static_cast<int>(DType::kBF16),
              "schema DType and runtime DType must agree");
static_assert(static_cast<int>(fb::ResizeVariant_Qwen2VL) == static_cast<int>(ResizeVariant::kQwen2Vl) &&
                  static_cast<int>(fb::ResizeVariant_Glm4V) == static_cast<int>(ResizeVariant::kGlm4v) &&
                  static_cast<int>(fb::ResizeVariant_Fixed) == static_cast<int>(ResizeVariant::kFixed),
              "schema ResizeVariant and runtime ResizeVariant must agree");
static_assert(static_cast<int>(fb::Layout_FusedLinear) == static_cast<int>(Layout::kFusedLinear) &&
                  static_cast<int>(fb::Layout_OriginalConv) == static_cast<int>(Layout::kOriginalConv),
              "schema Layout and runtime Layout must agree");
static_assert(static_cast<int>(fb::PositionMode_None) == static_cast<int>(PositionMode::kNone) &&
                  static_cast<int>(fb::PositionMode_Bicubic) == static_cast<int>(PositionMode::kBicubic) &&
                  static_cast<int>(fb::PositionMode_BilinearAlignCorners) ==
                      static_cast<int>(PositionMode::kBilinearAlignCorners) &&
                  static_cast<int>(fb::PositionMode_GridSampleBicubic) == static_cast<int>(PositionMode::kGridSampleBicubic),
              "schema PositionMode and runtime PositionMode must agree");
static_assert(static_cast<int>(fb::NormKind_None) == static_cast<int>(NormKind::kNone) &&
                  static_cast<int>(fb::NormKind_LayerNorm) == static_cast<int>(NormKind::kLayerNorm) &&
                  static_cast<int>(fb::NormKind_RMSNorm) == static_cast<int>(NormKind::kRmsNorm),
              "schema NormKind and runtime NormKind must agree");

const char* layout_name(Layout layout) {
  switch (layout) {
    case Layout::kFusedLinear: return "fused_linear";
    case Layout::kOriginalConv: return "original_conv";
  }
  return "?";
}

namespace {

std::string str(const flatbuffers::String* s) { return s ? s->str() : std::string(); }

std::vector<int64_t> dims(const flatbuffers::Vector<int32_t>* v) {
  return v ? std::vector<int64_t>(v->begin(), v->end()) : std::vector<int64_t>();
}

// A [long] vector's values (empty where the field is absent). FlatBuffers 2.0.8's Verifier aligns
// a vector's length prefix to 4 bytes only, not its elements to their own size, so a corrupted
// file can place [long] elements off their 8-byte boundary: refused before any is read. An empty
// vector has nothing to align (its builder does not pad one: the converter's may sit anywhere).
Result<std::vector<int64_t>> longs(const flatbuffers::Vector<int64_t>* v, const uint8_t* base, const std::string& where,
                                   const std::string& what) {
  if (v == nullptr || v->size() == 0) return std::vector<int64_t>();
  const auto at = static_cast<size_t>(reinterpret_cast<const uint8_t*>(v->data()) - base);
  PF_CHECK(at % alignof(int64_t) == 0, Code::kInvalidModel, where, ": ", what, " starts at offset ", at,
           "; 64-bit elements must be 8-byte aligned");
  return std::vector<int64_t>(v->begin(), v->end());
}

Result<DType> to_dtype(fb::DType d, const std::string& where) {
  PF_CHECK(d >= fb::DType_MIN && d <= fb::DType_MAX, Code::kInvalidModel, where, ": dtype value ",
           static_cast<int>(d), " is not one of F32, F16, BF16");
  return static_cast<DType>(d);
}

// Checks one tensor against the name, shape and dtype the module's geometry and layout imply.
Result<TensorView> read_tensor(const fb::Tensor* t, const std::string& origin, const std::string& module,
                               const std::string& expect_name, const std::vector<int64_t>& expect_shape,
                               DType expect_dtype, const uint8_t* base, size_t size, bool check_dtype = true) {
  const std::string where = module.empty() ? origin : cat(origin, ": module ", module);
  PF_CHECK(t != nullptr, Code::kInvalidModel, where, ": tensor ", expect_name, " is missing");
  TensorView v;
  v.name = str(t->name());
  PF_CHECK(v.name == expect_name, Code::kInvalidModel, where, ": tensor name '", v.name, "' must be '",
           expect_name, "' for this layout");
  PF_CHECK(t->shape() != nullptr, Code::kInvalidModel, where, ": tensor ", v.name, " has no shape");
  PF_ASSIGN_OR_RETURN(v.shape, longs(t->shape(), base, where, cat("tensor ", v.name, " shape")));
  PF_CHECK(v.shape == expect_shape, Code::kInvalidModel, where, ": tensor ", v.name, " shape ",
           format_dims(v.shape), " must be ", format_dims(expect_shape), " by the module geometry");
  PF_ASSIGN_OR_RETURN(v.dtype, to_dtype(t->dtype(), cat(where, ": tensor ", v.name)));
  PF_CHECK(!check_dtype || v.dtype == expect_dtype, Code::kInvalidModel, where, ": tensor ", v.name, " dtype ",
           dtype_name(v.dtype), " must equal the module dtype ", dtype_name(expect_dtype));
  PF_CHECK(t->data() != nullptr, Code::kInvalidModel, where, ": tensor ", v.name, " has no data");
  const auto elems = checked_product(v.shape);
  const auto want = elems ? checked_mul(*elems, dtype_size(v.dtype)) : std::nullopt;
  PF_CHECK(want && *want == t->data()->size(), Code::kInvalidModel, where, ": tensor ", v.name, " holds ",
           t->data()->size(), " bytes; shape ", format_dims(v.shape), " x ", dtype_name(v.dtype), " needs ",
           want ? cat(*want) : std::string("more than 2^64"));
  v.data = t->data()->data();
  v.bytes = t->data()->size();
  const size_t offset = static_cast<size_t>(v.data - base);
  PF_CHECK(offset % kTensorAlignment == 0, Code::kInvalidModel, where, ": tensor ", v.name, " starts at offset ",
           offset, "; tensor data must be aligned to ", kTensorAlignment, " bytes");
  PF_CHECK(size - offset - v.bytes >= kTailSlack, Code::kInvalidModel, where, ": tensor ", v.name, " ends ",
           size - offset - v.bytes, " bytes before the end of the model; at least ", kTailSlack,
           " bytes of slack must follow every tensor");
  return v;
}

// A tensor of the encoder input: any stored dtype, a shape of `rank` 1 (a row) or 2 (a table),
// seen as rows x cols. Absent: an empty view.
Result<TableView> read_table(const fb::Tensor* t, const std::string& where, const char* what, size_t rank,
                             const uint8_t* base, size_t size) {
  TableView v;
  if (t == nullptr) return v;
  const std::string name = str(t->name());
  PF_ASSIGN_OR_RETURN(const std::vector<int64_t> shape, longs(t->shape(), base, where, cat("tensor ", name, " shape")));
  PF_CHECK(shape.size() == rank, Code::kInvalidModel, where, ": encoder_input ", what, " ", name, " must have rank ", rank);
  PF_ASSIGN_OR_RETURN(TensorView tv, read_tensor(t, where, "", name, shape, DType::kF32, base, size, false));
  v.name = tv.name;
  v.data = tv.data;
  v.dtype = tv.dtype;
  v.rows = rank == 1 ? 1 : shape[0];
  v.cols = shape[rank - 1];
  return v;
}

Result<EncoderInputSpec> read_encoder_input(const fb::EncoderInput* e, const ModuleView& m, const std::string& where,
                                            const uint8_t* base, size_t size) {
  EncoderInputSpec s;
  s.refused = str(e->refused());
  if (e->missing() != nullptr) {
    for (const flatbuffers::String* name : *e->missing()) s.missing.push_back(name->str());
  }
  s.embed_dim = m.geometry.embed_dim;
  s.merge_size = e->merge_size();
  s.window_size = e->window_size();
  s.patch_size = e->patch_size();
  PF_CHECK(e->position_mode() >= fb::PositionMode_MIN && e->position_mode() <= fb::PositionMode_MAX, Code::kInvalidModel,
           where, ": encoder_input position_mode ", static_cast<int>(e->position_mode()), " is not a known mode");
  s.position_mode = static_cast<PositionMode>(e->position_mode());
  s.position_side = e->position_side();
  PF_CHECK(e->norm() >= fb::NormKind_MIN && e->norm() <= fb::NormKind_MAX, Code::kInvalidModel, where,
           ": encoder_input norm ", static_cast<int>(e->norm()), " is not a known norm");
  s.norm = static_cast<NormKind>(e->norm());
  s.norm_eps = e->norm_eps();
  s.norm_before_position = e->norm_before_position();
  PF_ASSIGN_OR_RETURN(s.position, read_table(e->position(), where, "position table", 2, base, size));
  PF_ASSIGN_OR_RETURN(s.class_embedding, read_table(e->class_embedding(), where, "class embedding", 1, base, size));
  PF_ASSIGN_OR_RETURN(s.norm_weight, read_table(e->norm_weight(), where, "norm weight", 1, base, size));
  PF_ASSIGN_OR_RETURN(s.norm_bias, read_table(e->norm_bias(), where, "norm bias", 1, base, size));
  PF_RETURN_IF_ERROR(s.check(where));
  return s;
}

Result<BlockSpec> read_blocks(const fb::Blocks* b, const std::string& where, const uint8_t* base) {
  BlockSpec s;
  s.refused = str(b->refused());
  s.depth = b->depth();
  s.num_heads = b->num_heads();
  s.head_dim = b->head_dim();
  PF_CHECK(b->rotary() >= fb::RotaryKind_MIN && b->rotary() <= fb::RotaryKind_MAX, Code::kInvalidModel, where,
           ": blocks rotary ", static_cast<int>(b->rotary()), " is not a known rotary kind");
  s.rotary = static_cast<RotaryKind>(b->rotary());
  s.rope_theta = b->rope_theta();
  s.segments = b->segments();
  PF_ASSIGN_OR_RETURN(s.fullatt_block_indexes, longs(b->fullatt_block_indexes(), base, where, "blocks fullatt_block_indexes"));
  PF_ASSIGN_OR_RETURN(s.deepstack_visual_indexes,
                      longs(b->deepstack_visual_indexes(), base, where, "blocks deepstack_visual_indexes"));
  PF_CHECK(b->position_ids() >= fb::PositionIdsKind_MIN && b->position_ids() <= fb::PositionIdsKind_MAX,
           Code::kInvalidModel, where, ": blocks position_ids ", static_cast<int>(b->position_ids()),
           " is not a known kind");
  s.position_ids = static_cast<PositionIdsKind>(b->position_ids());
  s.position_side = b->position_side();
  PF_RETURN_IF_ERROR(s.check(where));
  return s;
}

Result<ModuleView> read_module(const fb::Module* m, const std::string& origin, const uint8_t* base, size_t size) {
  ModuleView v;
  v.path = str(m->path());
  PF_CHECK(!v.path.empty(), Code::kInvalidModel, origin, ": a module has an empty path");
  const std::string where = cat(origin, ": module ", v.path);
  const std::string family = str(m->family());
  v.family = find_family(family);
  PF_CHECK(v.family != nullptr, Code::kInvalidModel, where, ": family '", family, "' is not a known fusion family");
  v.class_name = str(m->class_name());
  PF_CHECK(m->layout() >= fb::Layout_MIN && m->layout() <= fb::Layout_MAX, Code::kInvalidModel, where,
           ": layout value ", static_cast<int>(m->layout()), " is not fused_linear or original_conv");
  v.layout = static_cast<Layout>(m->layout());
  const fb::Geometry* g = m->geometry();
  PF_CHECK(g != nullptr, Code::kInvalidModel, where, ": geometry is missing");
  v.geometry.kernel = dims(g->kernel());
  v.geometry.stride = dims(g->stride());
  v.geometry.padding = dims(g->padding());
  v.geometry.dilation = dims(g->dilation());
  v.geometry.groups = g->groups();
  v.geometry.in_channels = g->in_channels();
  v.geometry.embed_dim = g->embed_dim();
  // A fused module exists only because the rules allowed it; refuse one whose geometry says otherwise.
  if (v.layout == Layout::kFusedLinear) {
    Status s = check_eligible(*v.family, v.path, v.geometry);
    PF_CHECK(s.ok(), Code::kInvalidModel, origin, ": fused ", s.error().message);
  } else {
    Status s = check_geometry(*v.family, v.path, v.geometry);
    PF_CHECK(s.ok(), Code::kInvalidModel, origin, ": ", s.error().message);
  }
  v.patch_volume = m->patch_volume();
  PF_CHECK(v.patch_volume == *patch_volume(v.geometry), Code::kInvalidModel, where, ": patch_volume ",
           v.patch_volume, " must equal in_channels * prod(kernel) = ", *patch_volume(v.geometry));
  PF_ASSIGN_OR_RETURN(v.dtype, to_dtype(m->dtype(), where));
  PF_ASSIGN_OR_RETURN(v.source_dtype, to_dtype(m->source_dtype(), cat(where, ": source_dtype")));

  if (const fb::Preprocessing* p = m->preprocessing()) {
    Preprocessing pre;
    if (p->image_mean()) pre.mean.assign(p->image_mean()->begin(), p->image_mean()->end());
    if (p->image_std()) pre.std.assign(p->image_std()->begin(), p->image_std()->end());
    pre.rescale_factor = p->rescale_factor();
    pre.patch_size = p->patch_size();
    pre.temporal_patch_size = p->temporal_patch_size();
    pre.merge_size = p->merge_size();
    pre.min_pixels = p->min_pixels();
    pre.max_pixels = p->max_pixels();
    PF_CHECK(p->resize() >= fb::ResizeVariant_MIN && p->resize() <= fb::ResizeVariant_MAX, Code::kInvalidModel, where,
             ": preprocessing resize value ", static_cast<int>(p->resize()), " is not qwen2_vl, glm4v or fixed");
    pre.resize = static_cast<ResizeVariant>(p->resize());
    pre.fixed_height = p->fixed_height();
    pre.fixed_width = p->fixed_width();
    // Enum values out of range are caught by check_preprocessing, which names them.
    pre.resample = static_cast<Resample>(p->resample());
    pre.image_semantics = static_cast<ResizeSemantics>(p->image_resize_semantics());
    pre.video_semantics = static_cast<ResizeSemantics>(p->video_resize_semantics());
    pre.do_resize = p->do_resize();
    pre.shortest_edge = p->shortest_edge();
    pre.resize_height = p->resize_height();
    pre.resize_width = p->resize_width();
    if (const fb::VideoResize* v = p->video()) {
      PF_CHECK(v->resize() >= fb::ResizeVariant_MIN && v->resize() <= fb::ResizeVariant_MAX, Code::kInvalidModel,
               where, ": preprocessing video resize value ", static_cast<int>(v->resize()), " is not qwen2_vl or glm4v");
      pre.video = VideoResize{static_cast<ResizeVariant>(v->resize()), v->min_pixels(), v->max_pixels(),
                              v->cap_pixels_per_frame()};
    }
    PF_RETURN_IF_ERROR(check_preprocessing(pre, v.geometry, where));
    v.preprocessing = std::move(pre);
  }

  const bool fused = v.layout == Layout::kFusedLinear;
  const std::string weight_name =
      fused ? fused_weight_name(*v.family, v.path) : conv_weight_name(*v.family, v.path);
  const std::vector<int64_t> weight_shape = fused ? fused_weight_shape(v.geometry) : conv_weight_shape(v.geometry);
  PF_ASSIGN_OR_RETURN(v.weight, read_tensor(m->weight(), origin, v.path, weight_name, weight_shape, v.dtype, base, size));
  if (m->bias() != nullptr) {
    const std::string bias_name = fused ? fused_bias_name(*v.family, v.path) : conv_bias_name(*v.family, v.path);
    PF_ASSIGN_OR_RETURN(v.bias, read_tensor(m->bias(), origin, v.path, bias_name, {v.geometry.embed_dim}, v.dtype,
                                            base, size));
  }
  if (const fb::EncoderInput* e = m->encoder_input()) {
    PF_ASSIGN_OR_RETURN(v.encoder_input, read_encoder_input(e, v, where, base, size));
  }
  if (const fb::Blocks* b = m->blocks()) {
    PF_CHECK(v.encoder_input.has_value(), Code::kInvalidModel, where, ": blocks without encoder_input (the rows' order)");
    PF_ASSIGN_OR_RETURN(v.blocks, read_blocks(b, where, base));
  }
  return v;
}

}  // namespace

namespace {

// Bytes for a message: printable ASCII as is, anything else as \xNN (a NUL cut the message of a
// safetensors file given as a model, whose identifier bytes are part of its header length).
std::string printable(const uint8_t* bytes, size_t n) {
  std::string s;
  for (size_t i = 0; i < n; ++i) {
    if (bytes[i] >= 0x20 && bytes[i] < 0x7F && bytes[i] != '\\') {
      s += static_cast<char>(bytes[i]);
    } else {
      static const char hex[] = "0123456789abcdef";
      s += {'\\', 'x', hex[bytes[i] >> 4], hex[bytes[i] & 15]};
    }
  }
  return s;
}

}  // namespace

Result<ModelView> read_model(const uint8_t* data, size_t size, const std::string& origin) {
  PF_CHECK(data != nullptr, Code::kInvalidArgument, origin, ": model buffer is null");
  PF_CHECK(reinterpret_cast<uintptr_t>(data) % kBufferAlignment == 0, Code::kInvalidArgument, origin,
           ": model buffer at address ", static_cast<const void*>(data), " must be ", kBufferAlignment,
           "-byte aligned (its 64-bit fields are read in place)");
  PF_CHECK(size >= 8, Code::kInvalidModel, origin, ": ", size, " bytes is too small to be a .pfb model");
  PF_CHECK(fb::ModelBufferHasIdentifier(data), Code::kInvalidModel, origin, ": file identifier '",
           printable(data + 4, 4), "' is not '", fb::ModelIdentifier(), "'; not a patchfuse model");
  PF_CHECK(size < FLATBUFFERS_MAX_BUFFER_SIZE, Code::kInvalidModel, origin, ": ", size,
           " bytes exceeds the FlatBuffers limit of 2 GiB");
  flatbuffers::Verifier verifier(data, size);
  PF_CHECK(fb::VerifyModelBuffer(verifier), Code::kInvalidModel, origin,
           ": FlatBuffers verification failed (truncated or corrupted file)");
  const fb::Model* m = fb::GetModel(data);

  ModelView model;
  model.schema_version = m->schema_version();
  PF_CHECK(model.schema_version >= 1 && model.schema_version <= kSchemaVersion, Code::kInvalidModel, origin,
           ": schema_version ", model.schema_version, " is not supported (this build reads 1..", kSchemaVersion, ")");
  model.producer = str(m->producer());
  model.model_type = str(m->model_type());
  if (m->fusion_config() != nullptr) {
    for (const fb::FusionSetting* s : *m->fusion_config()) {
      FusionConfigEntry e;
      e.family = str(s->family());
      e.value.enabled = s->enabled();
      if (s->options() != nullptr) {
        e.value.kind = FusionValue::Kind::kOptions;
        for (const fb::OptionEntry* o : *s->options()) e.value.options.emplace_back(str(o->key()), str(o->value_json()));
      }
      model.fusion_config.push_back(std::move(e));
    }
  }
  PF_CHECK(m->modules() != nullptr && m->modules()->size() > 0, Code::kInvalidModel, origin,
           ": the model holds no modules");
  std::set<std::string> paths;
  for (const fb::Module* mod : *m->modules()) {
    PF_ASSIGN_OR_RETURN(ModuleView v, read_module(mod, origin, data, size));
    PF_CHECK(paths.insert(v.path).second, Code::kInvalidModel, origin, ": module ", v.path, " appears twice");
    model.modules.push_back(std::move(v));
  }
  return model;
}

ConvWeights conv_weights(const ModuleView& m) {
  ConvWeights w;
  w.weight = m.weight.data;
  w.dtype = m.weight.dtype;
  if (m.bias) {
    w.bias = m.bias->data;
    w.bias_dtype = m.bias->dtype;
  }
  w.embed_dim = m.geometry.embed_dim;
  w.channels = m.geometry.in_channels;
  w.frames = m.geometry.kernel[0];
  w.pixels = m.geometry.kernel[1] * m.geometry.kernel[2];
  return w;
}

}  // namespace patchfuse
