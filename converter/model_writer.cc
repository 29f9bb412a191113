#include "converter/model_writer.h"

#include <flatbuffers/flatbuffers.h>

#include "patchfuse_generated.h"
#include "runtime/model/model_format.h"

#ifndef PATCHFUSE_VERSION
#error "PATCHFUSE_VERSION must be defined by the build"
#endif

namespace patchfuse {

namespace {

flatbuffers::Offset<fb::Tensor> write_tensor(flatbuffers::FlatBufferBuilder& b, const TensorRecord& t) {
  // The data vector goes first: FlatBuffers lays objects out back to front, and forcing the
  // alignment before the vector is created is what puts its first byte on a 64-byte boundary.
  b.ForceVectorAlignment(t.bytes.size(), 1, kTensorAlignment);
  auto data = b.CreateVector(t.bytes);
  auto name = b.CreateString(t.name);
  auto shape = b.CreateVector(t.shape);
  return fb::CreateTensor(b, name, shape, static_cast<fb::DType>(t.dtype), data);
}

flatbuffers::Offset<flatbuffers::Vector<int32_t>> int_vector(flatbuffers::FlatBufferBuilder& b,
                                                            const std::vector<int64_t>& v) {
  return b.CreateVector(std::vector<int32_t>(v.begin(), v.end()));
}

flatbuffers::Offset<fb::Tensor> write_optional(flatbuffers::FlatBufferBuilder& b, const std::optional<TensorRecord>& t) {
  return t ? write_tensor(b, *t) : 0;
}

flatbuffers::Offset<fb::EncoderInput> write_encoder_input(flatbuffers::FlatBufferBuilder& b, const EncoderInputRecord& e) {
  auto position = write_optional(b, e.position);
  auto class_embedding = write_optional(b, e.class_embedding);
  auto norm_weight = write_optional(b, e.norm_weight);
  auto norm_bias = write_optional(b, e.norm_bias);
  return fb::CreateEncoderInput(b, b.CreateString(e.refused), b.CreateVectorOfStrings(e.missing),
                                static_cast<int32_t>(e.merge_size), static_cast<int32_t>(e.window_size),
                                static_cast<int32_t>(e.patch_size), static_cast<fb::PositionMode>(e.position_mode),
                                position, static_cast<int32_t>(e.position_side), class_embedding,
                                static_cast<fb::NormKind>(e.norm), norm_weight, norm_bias, e.norm_eps,
                                e.norm_before_position);
}

flatbuffers::Offset<fb::Blocks> write_blocks(flatbuffers::FlatBufferBuilder& b, const BlockSpec& s) {
  return fb::CreateBlocks(b, static_cast<int32_t>(s.depth), static_cast<int32_t>(s.num_heads),
                          static_cast<int32_t>(s.head_dim), static_cast<fb::RotaryKind>(s.rotary), s.rope_theta,
                          s.segments, b.CreateVector(s.fullatt_block_indexes), b.CreateVector(s.deepstack_visual_indexes),
                          static_cast<fb::PositionIdsKind>(s.position_ids), static_cast<int32_t>(s.position_side),
                          b.CreateString(s.refused));
}

}  // namespace

std::vector<uint8_t> build_model(const std::string& model_type, const std::vector<FusionStep>& fusion_config,
                                 const std::vector<ModuleRecord>& modules) {
  flatbuffers::FlatBufferBuilder b(1 << 20);
  b.ForceDefaults(true);  // explicit fields (groups = 1, layout = 0) make `flatc --json` dumps complete
  std::vector<flatbuffers::Offset<fb::Module>> mods;
  for (const ModuleRecord& m : modules) {
    auto weight = write_tensor(b, m.weight);
    flatbuffers::Offset<fb::Tensor> bias = write_optional(b, m.bias);
    flatbuffers::Offset<fb::EncoderInput> encoder_input = m.encoder_input ? write_encoder_input(b, *m.encoder_input) : 0;
    flatbuffers::Offset<fb::Blocks> blocks = m.blocks ? write_blocks(b, *m.blocks) : 0;
    flatbuffers::Offset<fb::Preprocessing> pre = 0;
    if (const auto& p = m.preprocessing) {
      flatbuffers::Offset<fb::VideoResize> video = 0;
      if (const auto& v = p->video) {
        video = fb::CreateVideoResize(b, static_cast<fb::ResizeVariant>(v->variant), v->min_pixels, v->max_pixels,
                                      v->cap_pixels_per_frame);
      }
      pre = fb::CreatePreprocessing(b, b.CreateVector(p->mean), b.CreateVector(p->std), p->rescale_factor,
                                    static_cast<int32_t>(p->patch_size), static_cast<int32_t>(p->temporal_patch_size),
                                    static_cast<int32_t>(p->merge_size), p->min_pixels, p->max_pixels,
                                    static_cast<fb::ResizeVariant>(p->resize), p->fixed_height, p->fixed_width, video,
                                    static_cast<uint8_t>(p->resample), static_cast<fb::ResizeSemantics>(p->image_semantics),
                                    static_cast<fb::ResizeSemantics>(p->video_semantics), p->do_resize, p->shortest_edge,
                                    p->resize_height, p->resize_width);
    }
    const ConvGeometry& g = m.geometry;
    auto geometry = fb::CreateGeometry(b, int_vector(b, g.kernel), int_vector(b, g.stride), int_vector(b, g.padding),
                                       int_vector(b, g.dilation), static_cast<int32_t>(g.groups),
                                       static_cast<int32_t>(g.in_channels), static_cast<int32_t>(g.embed_dim));
    mods.push_back(fb::CreateModule(b, b.CreateString(m.path), b.CreateString(std::string(m.family->name)),
                                    b.CreateString(m.class_name), static_cast<fb::Layout>(m.layout), geometry,
                                    patch_volume(g).value_or(0), static_cast<fb::DType>(m.dtype), weight, bias,
                                    static_cast<fb::DType>(m.source_dtype), pre, encoder_input, blocks));
  }
  std::vector<flatbuffers::Offset<fb::FusionSetting>> settings;
  for (const FusionStep& s : fusion_config) {
    flatbuffers::Offset<flatbuffers::Vector<flatbuffers::Offset<fb::OptionEntry>>> options = 0;
    if (!s.options.empty()) {
      std::vector<flatbuffers::Offset<fb::OptionEntry>> entries;
      for (const auto& [k, v] : s.options) entries.push_back(fb::CreateOptionEntry(b, b.CreateString(k), b.CreateString(v)));
      options = b.CreateVector(entries);
    }
    settings.push_back(fb::CreateFusionSetting(b, b.CreateString(std::string(s.family->name)), s.enabled, options));
  }
  auto model = fb::CreateModel(b, kSchemaVersion, b.CreateString("patchfuse-convert " PATCHFUSE_VERSION),
                               b.CreateString(model_type), b.CreateVector(settings), b.CreateVector(mods));
  fb::FinishModelBuffer(b, model);
  std::vector<uint8_t> out(b.GetBufferPointer(), b.GetBufferPointer() + b.GetSize());
  out.resize(out.size() + kTailSlack, 0);
  return out;
}

}  // namespace patchfuse
