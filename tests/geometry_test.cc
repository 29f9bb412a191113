// config.json reading (all three vision-config locations, in_channels / in_chans, patch_size int
// or pair) and the geometry resolution: cross-check, architecture table, --geometry override.
#include "converter/geometry.h"

#include <gtest/gtest.h>

#include "tests/support/test_util.h"

namespace patchfuse {
namespace {

using testing::TempDir;

Result<VisionConfig> load(const TempDir& dir, const std::string& json) {
  testing::write_text(dir / "config.json", json);
  return load_vision_config(dir / "config.json");
}

const FusionFamily& patch() { return *find_family("patch_embeddings"); }
const std::vector<int64_t> kQwen2Weight = {1280, 3, 2, 14, 14};

TEST(HfConfig, VisionConfigLocations) {
  TempDir dir;
  auto a = load(dir, R"({"model_type":"qwen2_vl","vision_config":{"in_chans":3,"patch_size":14,"temporal_patch_size":2}})");
  ASSERT_TRUE(a.ok()) << a.error().message;
  EXPECT_EQ(a->location, "vision_config");
  EXPECT_EQ(a->in_channels, 3);
  EXPECT_EQ(a->in_channels_key, "in_chans");
  EXPECT_EQ(a->patch_size, std::make_pair(int64_t{14}, int64_t{14}));

  auto b = load(dir, R"({"model_type":"qwen2_5_omni","thinker_config":{"vision_config":{"in_channels":3,"patch_size":[14,16]}}})");
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b->location, "thinker_config.vision_config");
  EXPECT_EQ(b->patch_size, std::make_pair(int64_t{14}, int64_t{16}));
  EXPECT_FALSE(b->temporal_patch_size.has_value());

  auto c = load(dir, R"({"model_type":"qwen3_vl","in_channels":3,"patch_size":16,"temporal_patch_size":2})");
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->location, "(top level)");
  EXPECT_EQ(c->temporal_patch_size, 2);
}

TEST(HfConfig, WrongTypesNameTheField) {
  TempDir dir;
  auto a = load(dir, R"({"vision_config":{"patch_size":"14"}})");
  ASSERT_FALSE(a.ok());
  EXPECT_NE(a.error().message.find("vision_config.patch_size must be a positive integer, got \"14\""), std::string::npos)
      << a.error().message;
  auto b = load(dir, R"({"vision_config":{"patch_size":[14,14,14]}})");
  ASSERT_FALSE(b.ok());
  EXPECT_NE(b.error().message.find("patch_size must be an int or [h, w]"), std::string::npos);
  auto c = load(dir, "not json");
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.error().message.find("not a JSON object"), std::string::npos);
  auto d = load(dir, R"({"model_type":7})");
  ASSERT_FALSE(d.ok());
  EXPECT_FALSE(load_vision_config(dir / "missing.json").ok());
}

TEST(Geometry, KnownArchitectureGivesStrideEqualKernel) {
  TempDir dir;
  auto vc = load(dir, R"({"model_type":"qwen2_vl","vision_config":{"in_chans":3,"patch_size":14,"temporal_patch_size":2,"hidden_size":1536}})");
  ASSERT_TRUE(vc.ok());
  auto g = resolve_geometry(patch(), "visual.patch_embed", "visual.patch_embed.proj.weight", kQwen2Weight, *vc, {});
  ASSERT_TRUE(g.ok()) << g.error().message;
  EXPECT_EQ(g->stride, g->kernel);
  EXPECT_EQ(g->padding, (std::vector<int64_t>{0, 0, 0}));
  EXPECT_EQ(g->dilation, (std::vector<int64_t>{1, 1, 1}));
  EXPECT_EQ(g->embed_dim, 1280);  // from the weight, not from hidden_size
  EXPECT_TRUE(eligibility_violations(*g).empty());
}

TEST(Geometry, ConfigMismatchNamesBothValues) {
  TempDir dir;
  auto vc = load(dir, R"({"model_type":"qwen2_vl","vision_config":{"patch_size":16}})");
  auto g = resolve_geometry(patch(), "m", "m.proj.weight", kQwen2Weight, *vc, {});
  ASSERT_FALSE(g.ok());
  EXPECT_NE(g.error().message.find("patch_size (16,16) disagrees with m.proj.weight kernel (h,w) (14,14)"),
            std::string::npos)
      << g.error().message;
  vc = load(dir, R"({"model_type":"qwen2_vl","vision_config":{"temporal_patch_size":1}})");
  EXPECT_NE(resolve_geometry(patch(), "m", "m.proj.weight", kQwen2Weight, *vc, {}).error().message.find(
                "temporal_patch_size 1 disagrees with m.proj.weight kernel t 2"),
            std::string::npos);
  vc = load(dir, R"({"model_type":"qwen2_vl","vision_config":{"in_channels":4}})");
  EXPECT_NE(resolve_geometry(patch(), "m", "m.proj.weight", kQwen2Weight, *vc, {}).error().message.find(
                "in_channels 4 disagrees with m.proj.weight in_channels 3"),
            std::string::npos);
}

// Conv2d: the geometry is the weight's (a pair patch_size too), stride = kernel from the table, and
// the config's hidden_size must be the conv's width.
TEST(Geometry, Conv2dFromTheWeightCrossCheckedWithTheConfig) {
  TempDir dir;
  const FusionFamily& c2 = *find_family("conv2d_patch_embeddings");
  const std::string m = "vit.embeddings.patch_embeddings.projection", w = m + ".weight";
  auto vc = load(dir, R"({"model_type":"vit","num_channels":3,"patch_size":[16,8],"hidden_size":768})");
  ASSERT_TRUE(vc.ok());
  EXPECT_EQ(vc->in_channels_key, "num_channels");
  auto g = resolve_geometry(c2, m, w, {768, 3, 16, 8}, *vc, {});
  ASSERT_TRUE(g.ok()) << g.error().message;
  EXPECT_EQ(g->kernel, (std::vector<int64_t>{16, 8}));
  EXPECT_EQ(g->stride, g->kernel);
  EXPECT_EQ(g->padding, (std::vector<int64_t>{0, 0}));
  EXPECT_TRUE(eligibility_violations(*g).empty());
  vc = load(dir, R"({"model_type":"vit","num_channels":3,"patch_size":[16,8],"hidden_size":1024})");
  EXPECT_NE(resolve_geometry(c2, m, w, {768, 3, 16, 8}, *vc, {}).error().message.find(
                "hidden_size 1024 disagrees with " + w + " out_channels 768"),
            std::string::npos);
  vc = load(dir, R"({"model_type":"vit","num_channels":3,"patch_size":16})");
  EXPECT_NE(resolve_geometry(c2, m, w, {768, 3, 16, 8}, *vc, {}).error().message.find(
                "patch_size (16,16) disagrees with " + w + " kernel (h,w) (16,8)"),
            std::string::npos);
  // A Conv3d's hidden_size is not its width (Qwen2-VL: 1536 vs 1280), so it is not checked there.
  vc = load(dir, R"({"model_type":"qwen2_vl","vision_config":{"in_chans":3,"hidden_size":1536}})");
  EXPECT_TRUE(resolve_geometry(patch(), "visual.patch_embed", "visual.patch_embed.proj.weight", kQwen2Weight, *vc, {}).ok());
}

TEST(Geometry, ConfigWithoutAnyGeometryField) {
  TempDir dir;
  auto vc = load(dir, R"({"model_type":"qwen2_vl","vision_config":{"depth":32}})");
  auto g = resolve_geometry(patch(), "m", "m.proj.weight", kQwen2Weight, *vc, {});
  ASSERT_FALSE(g.ok());
  EXPECT_NE(g.error().message.find("none is present"), std::string::npos) << g.error().message;
}

TEST(Geometry, UnknownArchitectureNeedsTheOverride) {
  TempDir dir;
  auto vc = load(dir, R"({"model_type":"my_vlm","vision_config":{"patch_size":14}})");
  auto g = resolve_geometry(patch(), "m", "m.proj.weight", kQwen2Weight, *vc, {});
  ASSERT_FALSE(g.ok());
  EXPECT_NE(g.error().message.find("model_type 'my_vlm' is not a known architecture (known: qwen2_vl, "),
            std::string::npos);
  EXPECT_NE(g.error().message.find("--geometry"), std::string::npos);

  auto o = parse_geometry_override("stride=2x14x14");
  ASSERT_TRUE(o.ok());
  auto g2 = resolve_geometry(patch(), "m", "m.proj.weight", kQwen2Weight, *vc, *o);
  ASSERT_TRUE(g2.ok()) << g2.error().message;
  EXPECT_TRUE(eligibility_violations(*g2).empty());

  auto bad = parse_geometry_override("stride=2x7x7,padding=0x1x1,dilation=1x1x1,groups=1");
  ASSERT_TRUE(bad.ok());
  auto g3 = resolve_geometry(patch(), "m", "m.proj.weight", kQwen2Weight, *vc, *bad);
  ASSERT_TRUE(g3.ok());
  EXPECT_EQ(eligibility_violations(*g3).size(), 2u);
}

TEST(Geometry, OverrideSyntaxErrors) {
  EXPECT_FALSE(parse_geometry_override("").ok());
  EXPECT_FALSE(parse_geometry_override("padding=0x0x0").ok());  // stride is required
  EXPECT_FALSE(parse_geometry_override("stride=2x-1x14").ok());
  EXPECT_FALSE(parse_geometry_override("stride=2x14x14,speed=3").ok());
  EXPECT_FALSE(parse_geometry_override("stride=2x14x14,groups=1x2").ok());
  EXPECT_FALSE(parse_geometry_override("stride").ok());
  auto ok = parse_geometry_override("stride=1x14x14,groups=1");
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(ok->stride, (std::vector<int64_t>{1, 14, 14}));
}

}  // namespace
}  // namespace patchfuse
