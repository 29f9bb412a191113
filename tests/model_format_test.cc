// The .pfb format: writer and verifying reader. Alignment, tail slack, determinism, and that every
// corrupted or inconsistent file is refused with a message instead of crashing.
#include <gtest/gtest.h>

#include <cstring>
#include <random>

#include "converter/model_writer.h"
#include "tests/support/convert_fixture.h"
#include "tests/support/test_util.h"
#include "patchfuse_generated.h"
#include "runtime/model/model_format.h"
#include "runtime/model/model_view.h"

namespace patchfuse {
namespace {

ModuleRecord qwen_module(Layout layout, bool bias, int64_t embed_dim = 16) {
  ModuleRecord m;
  m.path = "visual.patch_embed";
  m.family = find_family("patch_embeddings");
  m.class_name = "FusedPatchEmbed";
  m.layout = layout;
  m.geometry.kernel = m.geometry.stride = {2, 14, 14};
  m.geometry.padding = {0, 0, 0};
  m.geometry.dilation = {1, 1, 1};
  m.geometry.in_channels = 3;
  m.geometry.embed_dim = embed_dim;
  m.dtype = m.source_dtype = DType::kBF16;
  const bool fused = layout == Layout::kFusedLinear;
  m.weight.name = fused ? "visual.patch_embed.linear_proj.weight" : "visual.patch_embed.proj.weight";
  m.weight.shape = fused ? fused_weight_shape(m.geometry) : conv_weight_shape(m.geometry);
  m.weight.dtype = DType::kBF16;
  m.weight.bytes.resize(static_cast<size_t>(embed_dim) * 1176 * 2);
  for (size_t i = 0; i < m.weight.bytes.size(); ++i) m.weight.bytes[i] = static_cast<uint8_t>(i * 7);
  if (bias) {
    m.bias = TensorRecord{fused ? "visual.patch_embed.linear_proj.bias" : "visual.patch_embed.proj.bias",
                          {embed_dim}, DType::kBF16, std::vector<uint8_t>(static_cast<size_t>(embed_dim) * 2, 5)};
  }
  return m;
}

std::vector<FusionStep> default_steps() { return validate_fusion_config(default_fusion_config()).value(); }

std::vector<uint8_t> build(const std::vector<ModuleRecord>& mods) { return build_model("qwen2_vl", default_steps(), mods); }

std::string read_error(const std::vector<uint8_t>& bytes) {
  auto r = read_model(bytes.data(), bytes.size(), "m.pfb");
  return r.ok() ? std::string("(accepted)") : r.error().message;
}

TEST(ModelFormat, WriteThenReadBothLayouts) {
  for (Layout layout : {Layout::kFusedLinear, Layout::kOriginalConv}) {
    const auto bytes = build({qwen_module(layout, true)});
    auto m = read_model(bytes.data(), bytes.size(), "m.pfb");
    ASSERT_TRUE(m.ok()) << m.error().message;
    EXPECT_EQ(m->schema_version, kSchemaVersion);
    EXPECT_EQ(m->model_type, "qwen2_vl");
    EXPECT_EQ(m->producer.rfind("patchfuse-convert ", 0), 0u);
    ASSERT_EQ(m->fusion_config.size(), 1u);
    EXPECT_EQ(m->fusion_config[0].family, "patch_embeddings");
    ASSERT_EQ(m->modules.size(), 1u);
    const ModuleView& v = m->modules[0];
    EXPECT_EQ(v.layout, layout);
    EXPECT_EQ(v.patch_volume, 1176);
    EXPECT_EQ(v.geometry.stride, v.geometry.kernel);
    ASSERT_TRUE(v.bias.has_value());
    const ModuleRecord src = qwen_module(layout, true);
    ASSERT_EQ(v.weight.bytes, src.weight.bytes.size());
    EXPECT_TRUE(std::equal(src.weight.bytes.begin(), src.weight.bytes.end(), v.weight.data));
    // Zero-copy: the view points into the buffer, aligned, with slack after it.
    for (const TensorView* t : {&v.weight, &*v.bias}) {
      const size_t offset = static_cast<size_t>(t->data - bytes.data());
      EXPECT_EQ(offset % kTensorAlignment, 0u) << t->name;
      EXPECT_GE(bytes.size() - offset - t->bytes, kTailSlack) << t->name;
    }
  }
}

TEST(ModelFormat, Deterministic) {
  const auto mods = std::vector<ModuleRecord>{qwen_module(Layout::kFusedLinear, true)};
  EXPECT_EQ(build(mods), build(mods));
}

TEST(ModelFormat, WrongIdentifier) {
  auto bytes = build({qwen_module(Layout::kFusedLinear, false)});
  bytes[4] = 'X';
  EXPECT_NE(read_error(bytes).find("file identifier 'XFB1' is not 'PFB1'"), std::string::npos);
  EXPECT_NE(read_error({1, 2, 3}).find("too small"), std::string::npos);
}

TEST(ModelFormat, EveryTruncationIsRefused) {
  const auto bytes = build({qwen_module(Layout::kFusedLinear, true, 4)});
  // Cutting the tail slack breaks the slack rule; cutting more breaks the FlatBuffer itself.
  for (size_t keep = 0; keep < bytes.size(); keep += (keep < 1024 ? 1 : 97)) {
    std::vector<uint8_t> cut(bytes.begin(), bytes.begin() + static_cast<std::ptrdiff_t>(keep));
    EXPECT_NE(read_error(cut), "(accepted)") << "kept " << keep << " of " << bytes.size();
  }
}

// The slack rule at its boundary: the last tensor followed by exactly kTailSlack bytes is
// accepted, by one byte fewer refused by that rule (not by the FlatBuffer check).
TEST(ModelFormat, TailSlackIsExactAtTheByte) {
  const auto bytes = build({qwen_module(Layout::kFusedLinear, true, 4)});
  auto m = read_model(bytes.data(), bytes.size(), "m.pfb");
  ASSERT_TRUE(m.ok()) << m.error().message;
  size_t end = 0;
  for (const ModuleView& v : m->modules) {
    for (const TensorView* t : {&v.weight, v.bias ? &*v.bias : nullptr}) {
      if (t) end = std::max(end, static_cast<size_t>(t->data - bytes.data()) + t->bytes);
    }
  }
  ASSERT_EQ(bytes.size() - end, kTailSlack) << "the writer leaves exactly the slack after the last tensor";
  const std::vector<uint8_t> cut(bytes.begin(), bytes.end() - 1);
  const std::string e = read_error(cut);
  EXPECT_NE(e.find("ends 63 bytes before the end of the model; at least 64 bytes of slack"), std::string::npos) << e;
}

// FlatBuffers 2.0.8's Verifier aligns a vector's length prefix to 4 bytes only. Pointing a [long]
// vector field of `table` 4 + 8k bytes further makes a vector that verifies with its elements off
// their 8-byte boundary, and element k's low half as its length; the reader must refuse it before
// reading one (a misaligned 64-bit load: UBSan found it in BitFlipsNeverCrash for a tensor's
// shape, fuzz_pfb for the blocks' indexes). Returns the reader's error.
std::string error_with_vector_moved(const std::vector<uint8_t>& bytes, const void* table, flatbuffers::voffset_t field,
                                    uint32_t k = 0) {
  const auto* t = static_cast<const flatbuffers::Table*>(table);
  const flatbuffers::voffset_t slot = t->GetOptionalFieldOffset(field);
  EXPECT_NE(slot, 0) << "the field is absent";
  const size_t at = static_cast<size_t>(reinterpret_cast<const uint8_t*>(t) - bytes.data()) + slot;
  std::vector<uint8_t> moved = bytes;
  uint32_t offset = 0;
  std::memcpy(&offset, moved.data() + at, 4);
  offset += 4 + 8 * k;
  std::memcpy(moved.data() + at, &offset, 4);
  return read_error(moved);
}

TEST(ModelFormat, MisalignedShapeVectorIsRefused) {
  const std::vector<uint8_t> bytes = build({qwen_module(Layout::kFusedLinear, false)});
  const std::string e =
      error_with_vector_moved(bytes, fb::GetModel(bytes.data())->modules()->Get(0)->weight(), fb::Tensor::VT_SHAPE);
  EXPECT_NE(e.find("tensor visual.patch_embed.linear_proj.weight shape starts at offset"), std::string::npos) << e;
  EXPECT_NE(e.find("64-bit elements must be 8-byte aligned"), std::string::npos) << e;
}

// The blocks' index lists and an encoder input table's shape, in models converted from fixtures.
TEST(ModelFormat, MisalignedBlockIndexesAndTableShapesAreRefused) {
  testing::TempDir tmp;
  const auto module_of = [](const std::vector<uint8_t>& bytes) { return fb::GetModel(bytes.data())->modules()->Get(0); };
  testing::convert_fixture_file(PATCHFUSE_BLOCK_INPUTS_DIR "/qwen2_5_vl", tmp / "qwen2_5_vl.pfb");
  const std::vector<uint8_t> qwen25 = testing::read_bytes(tmp / "qwen2_5_vl.pfb");
  std::string e = error_with_vector_moved(qwen25, module_of(qwen25)->blocks(), fb::Blocks::VT_FULLATT_BLOCK_INDEXES);
  EXPECT_NE(e.find("module visual.patch_embed: blocks fullatt_block_indexes starts at offset"), std::string::npos) << e;

  testing::convert_fixture_file(PATCHFUSE_BLOCK_INPUTS_DIR "/qwen3_vl", tmp / "qwen3_vl.pfb");
  const std::vector<uint8_t> qwen3 = testing::read_bytes(tmp / "qwen3_vl.pfb");
  // Its indexes are [0, 2]: element 0 as the length would make an empty vector, which is fine.
  e = error_with_vector_moved(qwen3, module_of(qwen3)->blocks(), fb::Blocks::VT_DEEPSTACK_VISUAL_INDEXES, 1);
  EXPECT_NE(e.find("blocks deepstack_visual_indexes starts at offset"), std::string::npos) << e;

  testing::convert_fixture_file(PATCHFUSE_ENCODER_INPUT_DIR "/siglip", tmp / "siglip.pfb");
  const std::vector<uint8_t> siglip = testing::read_bytes(tmp / "siglip.pfb");
  e = error_with_vector_moved(siglip, module_of(siglip)->encoder_input()->position(), fb::Tensor::VT_SHAPE);
  EXPECT_NE(e.find("shape starts at offset"), std::string::npos) << e;
  EXPECT_NE(e.find("64-bit elements must be 8-byte aligned"), std::string::npos) << e;
}

// Caller memory must be 8-byte aligned for the same reason; an odd address is refused up front.
TEST(ModelFormat, MisalignedBufferIsRefused) {
  const std::vector<uint8_t> good = build({qwen_module(Layout::kFusedLinear, false)});
  std::vector<uint8_t> shifted(good.size() + 8);
  uint8_t* at = shifted.data() + 1;
  std::memcpy(at, good.data(), good.size());
  auto r = read_model(at, good.size(), "m.pfb");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("must be 8-byte aligned"), std::string::npos) << r.error().message;
}

TEST(ModelFormat, BitFlipsNeverCrash) {
  const auto bytes = build({qwen_module(Layout::kFusedLinear, true, 4)});
  // Flips in the FlatBuffer metadata (not in the weight bytes, which any value is valid for) must
  // either be refused or still give a self-consistent model. Seeded so a failure replays.
  const uint32_t seed = 20261130;
  std::mt19937 rng(seed);
  int refused = 0;
  for (int trial = 0; trial < 3000; ++trial) {
    std::vector<uint8_t> b = bytes;
    const size_t pos = rng() % 600;  // the header, tables and vectors sit before the weight data
    b[pos] ^= static_cast<uint8_t>(1u << (rng() % 8));
    auto r = read_model(b.data(), b.size(), "m.pfb");
    if (!r.ok()) {
      ++refused;
      EXPECT_FALSE(r.error().message.empty());
      continue;
    }
    for (const ModuleView& m : r->modules) {  // accepted: every pointer must lie inside the buffer
      EXPECT_GE(m.weight.data, b.data());
      EXPECT_LE(m.weight.data + m.weight.bytes, b.data() + b.size());
    }
  }
  EXPECT_GT(refused, 100) << "seed " << seed;
}

TEST(ModelFormat, BytesDisagreeWithShape) {
  ModuleRecord m = qwen_module(Layout::kFusedLinear, false, 4);
  m.weight.bytes.pop_back();
  m.weight.bytes.pop_back();
  const std::string msg = read_error(build({m}));
  EXPECT_NE(msg.find("holds 9406 bytes; shape (4,1176) x BF16 needs 9408"), std::string::npos) << msg;
}

TEST(ModelFormat, ShapeDisagreesWithGeometry) {
  ModuleRecord m = qwen_module(Layout::kFusedLinear, false, 4);
  m.weight.shape = {8, 588};
  const std::string msg = read_error(build({m}));
  EXPECT_NE(msg.find("shape (8,588) must be (4,1176)"), std::string::npos) << msg;
  ModuleRecord b = qwen_module(Layout::kFusedLinear, true, 4);
  b.bias->shape = {5};
  EXPECT_NE(read_error(build({b})).find("shape (5) must be (4)"), std::string::npos);
}

TEST(ModelFormat, FusedModuleBreakingTheRulesIsRefused) {
  ModuleRecord m = qwen_module(Layout::kFusedLinear, false, 4);
  m.geometry.stride = {1, 14, 14};  // the weight shape is unchanged, so only the rule can object
  const std::string msg = read_error(build({m}));
  EXPECT_NE(msg.find("stride (1,14,14) must equal kernel (2,14,14)"), std::string::npos) << msg;
  // The original layout may carry it (the runtime refuses to fuse it, but can list it).
  ModuleRecord o = qwen_module(Layout::kOriginalConv, false, 4);
  o.geometry.stride = {1, 14, 14};
  EXPECT_EQ(read_error(build({o})), "(accepted)");
}

TEST(ModelFormat, NamesFollowTheRules) {
  ModuleRecord m = qwen_module(Layout::kFusedLinear, false, 4);
  m.weight.name = "visual.patch_embed.proj.weight";
  EXPECT_NE(read_error(build({m})).find("must be 'visual.patch_embed.linear_proj.weight'"), std::string::npos);
}

TEST(ModelFormat, UnknownFamilyDuplicatePathsAndDtypeMismatch) {
  const FusionFamily other{"mystery", "x", "proj", "linear_proj", 3, {}};
  ModuleRecord m = qwen_module(Layout::kFusedLinear, false, 4);
  m.family = &other;
  EXPECT_NE(read_error(build({m})).find("family 'mystery' is not a known fusion family"), std::string::npos);
  const ModuleRecord a = qwen_module(Layout::kFusedLinear, false, 4);
  EXPECT_NE(read_error(build({a, a})).find("appears twice"), std::string::npos);
  ModuleRecord d = qwen_module(Layout::kFusedLinear, false, 4);
  d.dtype = DType::kF32;
  EXPECT_NE(read_error(build({d})).find("dtype BF16 must equal the module dtype F32"), std::string::npos);
}

TEST(ModelFormat, NewerSchemaVersionAndEmptyModelAreRefused) {
  flatbuffers::FlatBufferBuilder b;
  fb::FinishModelBuffer(b, fb::CreateModel(b, kSchemaVersion + 1));
  std::vector<uint8_t> bytes(b.GetBufferPointer(), b.GetBufferPointer() + b.GetSize());
  EXPECT_NE(read_error(bytes).find("schema_version 2 is not supported"), std::string::npos) << read_error(bytes);
  flatbuffers::FlatBufferBuilder e;
  fb::FinishModelBuffer(e, fb::CreateModel(e, kSchemaVersion));
  std::vector<uint8_t> empty(e.GetBufferPointer(), e.GetBufferPointer() + e.GetSize());
  EXPECT_NE(read_error(empty).find("holds no modules"), std::string::npos);
}

// A Conv2d module with fixed-size preprocessing round-trips through the file; a resize value
// the reader does not know, or a fixed size the rule refuses, is an error naming it.
TEST(ModelFormat, FixedSizePreprocessingIsStoredAndChecked) {
  ModuleRecord m;
  m.path = "vision_model.embeddings.patch_embedding";
  m.family = find_family("conv2d_patch_embeddings");
  m.layout = Layout::kFusedLinear;
  m.geometry.kernel = m.geometry.stride = {14, 14};
  m.geometry.padding = {0, 0};
  m.geometry.dilation = {1, 1};
  m.geometry.in_channels = 3;
  m.geometry.embed_dim = 8;
  m.dtype = m.source_dtype = DType::kF32;
  m.weight = {fused_weight_name(*m.family, m.path), fused_weight_shape(m.geometry), DType::kF32,
              std::vector<uint8_t>(8 * 588 * 4, 0)};
  Preprocessing p;
  p.mean = p.std = {0.5f, 0.5f, 0.5f};
  p.patch_size = 14;
  p.temporal_patch_size = p.merge_size = 1;
  p.resize = ResizeVariant::kFixed;
  p.fixed_height = 384;
  p.fixed_width = 378;
  m.preprocessing = p;
  auto bytes = build({m});
  auto read = read_model(bytes.data(), bytes.size(), "m.pfb");
  ASSERT_TRUE(read.ok()) << read.error().message;
  const Preprocessing& back = *read->modules.at(0).preprocessing;
  EXPECT_EQ(back.resize, ResizeVariant::kFixed);
  EXPECT_EQ(back.fixed_height, 384);
  EXPECT_EQ(back.fixed_width, 378);
  EXPECT_EQ(read->modules.at(0).geometry.kernel, (std::vector<int64_t>{14, 14}));

  m.preprocessing->resize = static_cast<ResizeVariant>(7);
  EXPECT_NE(read_error(build({m})).find("preprocessing resize value 7 is not qwen2_vl, glm4v or fixed"), std::string::npos);
  m.preprocessing->resize = ResizeVariant::kFixed;
  m.preprocessing->fixed_width = 0;
  EXPECT_NE(read_error(build({m})).find("preprocessing size 384x0 must be at least one patch (14)"), std::string::npos);
  m.preprocessing->fixed_width = 378;
  m.preprocessing->merge_size = 2;
  EXPECT_NE(read_error(build({m})).find("fixed-size preprocessing has merge_size 2 and temporal_patch_size 1; both must be 1"),
            std::string::npos);
  m.preprocessing->merge_size = 1;
  // A stored video rule: read back as written, its enum and its rule checked like the image's.
  m.preprocessing->video = VideoResize{static_cast<ResizeVariant>(7), 1, 2, false};
  EXPECT_NE(read_error(build({m})).find("preprocessing video resize value 7 is not qwen2_vl or glm4v"), std::string::npos);
  m.preprocessing->video = VideoResize{ResizeVariant::kGlm4v, 1, 2, false};
  EXPECT_NE(read_error(build({m})).find("fixed-size preprocessing has a video resize"), std::string::npos);
  m.preprocessing->video.reset();

  // The resize fields (appended in 0.4): read back as written; out-of-range values refused.
  m.preprocessing->resample = Resample::kLanczos;
  m.preprocessing->image_semantics = ResizeSemantics::kPil;
  m.preprocessing->video_semantics = ResizeSemantics::kPil;
  m.preprocessing->shortest_edge = 400;
  bytes = build({m});
  read = read_model(bytes.data(), bytes.size(), "m.pfb");
  ASSERT_TRUE(read.ok()) << read.error().message;
  EXPECT_EQ(read->modules.at(0).preprocessing->resample, Resample::kLanczos);
  EXPECT_EQ(read->modules.at(0).preprocessing->shortest_edge, 400);
  EXPECT_EQ(read->modules.at(0).preprocessing->video_semantics, ResizeSemantics::kPil);
  m.preprocessing->resample = static_cast<Resample>(9);
  EXPECT_NE(read_error(build({m})).find("preprocessing resample 9 is not one of Pillow's filters"), std::string::npos);
  m.preprocessing->resample = Resample::kLanczos;
  m.preprocessing->video_semantics = ResizeSemantics::kTorch;
  EXPECT_NE(read_error(build({m})).find("preprocessing video resize semantics torch has no lanczos filter"),
            std::string::npos);
  m.preprocessing->video_semantics = static_cast<ResizeSemantics>(5);
  EXPECT_NE(read_error(build({m})).find("preprocessing video resize semantics 5 is not pil or torch"), std::string::npos);
  m.preprocessing->video_semantics = ResizeSemantics::kPil;
  m.preprocessing->resize_height = 500;
  EXPECT_NE(read_error(build({m})).find("resize size 500x0 must have both sides or neither"), std::string::npos);
}

// A file written before 0.4 has no resize fields: BICUBIC, pil for images, torch for videos.
TEST(ModelFormat, PreprocessingWithoutResizeFieldsTakesTheDefaults) {
  flatbuffers::FlatBufferBuilder b;
  fb::PreprocessingBuilder pb(b);
  b.Finish(pb.Finish());
  const auto* p = flatbuffers::GetRoot<fb::Preprocessing>(b.GetBufferPointer());
  EXPECT_EQ(p->resample(), 3);
  EXPECT_EQ(p->image_resize_semantics(), fb::ResizeSemantics_Pil);
  EXPECT_EQ(p->video_resize_semantics(), fb::ResizeSemantics_Torch);
  EXPECT_TRUE(p->do_resize());
  EXPECT_EQ(p->shortest_edge(), 0);
}

}  // namespace
}  // namespace patchfuse
