// The shared fusion rules: candidate discovery, eligibility (each rule), transforms, fusion-config
// validation and conflicts.
#include "runtime/rules/fusion_rules.h"

#include <gtest/gtest.h>

#include "tests/support/geometry.h"

namespace patchfuse {
namespace {

const FusionFamily& patch() { return *find_family("patch_embeddings"); }

ConvGeometry qwen2_vl() {
  ConvGeometry g;
  g.kernel = g.stride = {2, 14, 14};
  g.padding = {0, 0, 0};
  g.dilation = {1, 1, 1};
  g.in_channels = 3;
  g.embed_dim = 1280;
  return g;
}

TEST(Candidates, ModulePathRegex) {
  EXPECT_EQ(candidate_module(patch(), "visual.patch_embed.proj.weight"), "visual.patch_embed");
  EXPECT_EQ(candidate_module(patch(), "model.visual.patch_embed.proj.weight"), "model.visual.patch_embed");
  EXPECT_EQ(candidate_module(patch(), "thinker.visual.patch_embed.proj.weight"), "thinker.visual.patch_embed");
  EXPECT_EQ(candidate_module(patch(), "patch_embed.proj.weight"), "patch_embed");  // (^|\.) at the start
  // Near misses: the regex is anchored on a whole path component.
  EXPECT_FALSE(candidate_module(patch(), "vision.patch_embedding.proj.weight"));
  EXPECT_FALSE(candidate_module(patch(), "visual.mypatch_embed.proj.weight"));
  EXPECT_FALSE(candidate_module(patch(), "a.patch_embed.b.proj.weight"));
  EXPECT_FALSE(candidate_module(patch(), "visual.patch_embed.proj.bias"));
  EXPECT_FALSE(candidate_module(patch(), "visual.patch_embed.linear_proj.weight"));
  EXPECT_FALSE(candidate_module(patch(), "visual.patch_embed.proj2.weight"));
  EXPECT_FALSE(candidate_module(patch(), ".proj.weight"));
}

// The Conv2d family's module is the conv itself: X.weight, with X one of the three names.
TEST(Candidates, Conv2dModuleIsTheConv) {
  const FusionFamily& c2 = *find_family("conv2d_patch_embeddings");
  EXPECT_EQ(candidate_module(c2, "vision_model.embeddings.patch_embedding.weight"), "vision_model.embeddings.patch_embedding");
  EXPECT_EQ(candidate_module(c2, "vision_tower.vision_model.embeddings.patch_embedding.weight"),
            "vision_tower.vision_model.embeddings.patch_embedding");
  EXPECT_EQ(candidate_module(c2, "vit.embeddings.patch_embeddings.projection.weight"), "vit.embeddings.patch_embeddings.projection");
  EXPECT_EQ(candidate_module(c2, "vision_tower.patch_conv.weight"), "vision_tower.patch_conv");
  EXPECT_EQ(candidate_module(c2, "vision_model.patch_embedding.weight"), "vision_model.patch_embedding");  // Mllama
  EXPECT_FALSE(candidate_module(c2, "vision_model.embeddings.patch_embedding.bias"));
  EXPECT_FALSE(candidate_module(c2, "vision_model.patch_embedding.linear.weight"));  // Llama 4: already a Linear
  EXPECT_FALSE(candidate_module(c2, "vit.embeddings.projection.weight"));
  EXPECT_FALSE(candidate_module(c2, "visual.patch_embed.proj.weight"));  // the Conv3d family's
  EXPECT_FALSE(candidate_module(patch(), "vision_model.embeddings.patch_embedding.weight"));
  EXPECT_EQ(conv_weight_name(c2, "m.patch_conv"), "m.patch_conv.weight");
  EXPECT_EQ(fused_weight_name(c2, "m.patch_conv"), "m.patch_conv.linear.weight");
  EXPECT_EQ(fused_bias_name(c2, "m.patch_conv"), "m.patch_conv.linear.bias");
}

TEST(Eligibility, Conv2dIsAConv3dOfDepthOne) {
  ConvGeometry g = testing::conv2d_geometry(16, 8, 3, 768);
  const FusionFamily& c2 = *find_family("conv2d_patch_embeddings");
  EXPECT_TRUE(check_eligible(c2, "m", g).ok());
  EXPECT_EQ(fused_weight_shape(g), (std::vector<int64_t>{768, 3 * 16 * 8}));
  EXPECT_FALSE(check_eligible(patch(), "m", g).ok()) << "rank 2 is not a Conv3d";
  const ConvGeometry lifted = as_conv3d(g);
  EXPECT_EQ(lifted.kernel, (std::vector<int64_t>{1, 16, 8}));
  EXPECT_EQ(lifted.stride, (std::vector<int64_t>{1, 16, 8}));
  EXPECT_EQ(lifted.padding, (std::vector<int64_t>{0, 0, 0}));
  EXPECT_EQ(lifted.dilation, (std::vector<int64_t>{1, 1, 1}));
  EXPECT_EQ(patch_volume(lifted), patch_volume(g));
  EXPECT_TRUE(eligibility_violations(lifted).empty());
  g.stride = {16, 16};
  ASSERT_FALSE(check_eligible(c2, "m", g).ok());
  EXPECT_NE(check_eligible(c2, "m", g).error().message.find("stride (16,16) must equal kernel (16,8)"), std::string::npos);
}

TEST(Eligibility, QwenGeometryIsEligible) {
  EXPECT_TRUE(eligibility_violations(qwen2_vl()).empty());
  EXPECT_TRUE(check_eligible(patch(), "visual.patch_embed", qwen2_vl()).ok());
}

TEST(Eligibility, EachRuleIsReportedByName) {
  ConvGeometry g = qwen2_vl();
  g.stride = {1, 14, 14};
  ASSERT_EQ(eligibility_violations(g).size(), 1u);
  EXPECT_EQ(eligibility_violations(g)[0], "stride (1,14,14) must equal kernel (2,14,14)");

  g = qwen2_vl();
  g.padding = {0, 1, 1};
  ASSERT_EQ(eligibility_violations(g).size(), 1u);
  EXPECT_EQ(eligibility_violations(g)[0], "padding (0,1,1) must be all 0");

  g = qwen2_vl();
  g.dilation = {1, 2, 1};
  ASSERT_EQ(eligibility_violations(g).size(), 1u);
  EXPECT_EQ(eligibility_violations(g)[0], "dilation (1,2,1) must be all 1");

  g = qwen2_vl();
  g.groups = 3;
  ASSERT_EQ(eligibility_violations(g).size(), 1u);
  EXPECT_EQ(eligibility_violations(g)[0], "groups 3 must be 1");

  g = qwen2_vl();
  g.stride = {2, 7, 7};
  g.padding = {1, 1, 1};
  g.dilation = {2, 2, 2};
  EXPECT_EQ(eligibility_violations(g).size(), 3u);
  const Status s = check_eligible(patch(), "visual.patch_embed", g);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().message.find("module visual.patch_embed is not eligible"), std::string::npos);
  EXPECT_NE(s.error().message.find("stride (2,7,7) must equal kernel (2,14,14)"), std::string::npos);
}

// Each rule at its boundary, in every spatial axis of both families: stride one more and one less
// than the kernel, padding 1, dilation 2, and groups 2 with channels divisible by 2 (so the
// geometry is valid and only the fusion rule refuses it). Exactly one violation each, by name.
TEST(Eligibility, EveryRuleAtItsBoundaryInEveryAxis) {
  const FusionFamily& c2 = *find_family("conv2d_patch_embeddings");
  struct Base {
    const FusionFamily& family;
    ConvGeometry g;
  };
  ConvGeometry conv3d = qwen2_vl();
  conv3d.in_channels = 4;  // divisible by 2, as embed_dim 1280 is
  ConvGeometry conv2d = testing::conv2d_geometry(16, 8, 4, 768);
  int checked = 0;
  for (const Base& base : {Base{patch(), conv3d}, Base{c2, conv2d}}) {
    ASSERT_TRUE(check_eligible(base.family, "m", base.g).ok());
    const auto one_violation = [&](const ConvGeometry& g, const std::string& rule) {
      ASSERT_TRUE(check_geometry(base.family, "m", g).ok()) << rule << ": the geometry itself is valid";
      const std::vector<std::string> v = eligibility_violations(g);
      ASSERT_EQ(v.size(), 1u) << rule;
      EXPECT_NE(v[0].find(rule), std::string::npos) << v[0];
      const Status s = check_eligible(base.family, "m", g);
      ASSERT_FALSE(s.ok()) << rule;
      EXPECT_NE(s.error().message.find(rule), std::string::npos) << s.error().message;
      ++checked;
    };
    for (size_t axis = 0; axis < base.g.kernel.size(); ++axis) {
      SCOPED_TRACE("axis " + std::to_string(axis));
      for (int64_t delta : {1, -1}) {
        ConvGeometry g = base.g;
        g.stride[axis] += delta;
        one_violation(g, "must equal kernel");
      }
      ConvGeometry g = base.g;
      g.padding[axis] = 1;
      one_violation(g, "must be all 0");
      g = base.g;
      g.dilation[axis] = 2;
      one_violation(g, "must be all 1");
    }
    ConvGeometry g = base.g;
    g.groups = 2;
    one_violation(g, "groups 2 must be 1");
  }
  EXPECT_EQ(checked, (3 * 4 + 1) + (2 * 4 + 1));
}

TEST(Eligibility, StructurallyInvalidGeometryIsRefused) {
  ConvGeometry g = qwen2_vl();
  g.kernel = {14, 14};
  EXPECT_FALSE(check_geometry(patch(), "m", g).ok());
  g = qwen2_vl();
  g.stride = {0, 14, 14};
  EXPECT_FALSE(check_geometry(patch(), "m", g).ok());
  g = qwen2_vl();
  g.padding = {-1, 0, 0};
  EXPECT_FALSE(check_geometry(patch(), "m", g).ok());
  g = qwen2_vl();
  g.groups = 2;  // 3 channels are not divisible by 2
  EXPECT_FALSE(check_geometry(patch(), "m", g).ok());
  g = qwen2_vl();
  g.kernel = {1 << 30, 1 << 30, 1 << 30};
  g.stride = g.kernel;
  EXPECT_FALSE(check_geometry(patch(), "m", g).ok());  // patch volume overflows
}

TEST(Transforms, NamesAndShapes) {
  const ConvGeometry g = qwen2_vl();
  EXPECT_EQ(conv_weight_name(patch(), "visual.patch_embed"), "visual.patch_embed.proj.weight");
  EXPECT_EQ(fused_weight_name(patch(), "visual.patch_embed"), "visual.patch_embed.linear_proj.weight");
  EXPECT_EQ(conv_bias_name(patch(), "m"), "m.proj.bias");
  EXPECT_EQ(fused_bias_name(patch(), "m"), "m.linear_proj.bias");
  EXPECT_EQ(fused_weight_shape(g), (std::vector<int64_t>{1280, 1176}));
  EXPECT_EQ(conv_weight_shape(g), (std::vector<int64_t>{1280, 3, 2, 14, 14}));
  EXPECT_EQ(*patch_volume(g), 1176);
  auto back = unfuse_weight_shape("w", {1280, 1176}, g);
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(*back, conv_weight_shape(g));
  EXPECT_FALSE(unfuse_weight_shape("w", {1280, 1175}, g).ok());
  EXPECT_FALSE(unfuse_weight_shape("w", {1176, 1280}, g).ok());  // same count, wrong embed_dim
  EXPECT_FALSE(unfuse_weight_shape("w", {1280, 3, 392}, g).ok());
  EXPECT_EQ(fused_class_name("PatchEmbed"), "FusedPatchEmbed");
  EXPECT_EQ(fused_class_name(""), "");
}

TEST(Transforms, GeometryFromWeight) {
  auto g = geometry_from_conv_weight(patch(), "w", {1152, 3, 2, 16, 16});
  ASSERT_TRUE(g.ok());
  EXPECT_EQ(g->embed_dim, 1152);
  EXPECT_EQ(g->in_channels, 3);
  EXPECT_EQ(g->kernel, (std::vector<int64_t>{2, 16, 16}));
  EXPECT_FALSE(geometry_from_conv_weight(patch(), "w", {1152, 3, 16, 16}).ok());
  EXPECT_FALSE(geometry_from_conv_weight(patch(), "w", {1152, 0, 2, 16, 16}).ok());
}

FusionValue bool_value(bool on) {
  FusionValue v;
  v.enabled = on;
  return v;
}

TEST(FusionConfig, DefaultAndMerge) {
  auto steps = validate_fusion_config(default_fusion_config());
  ASSERT_TRUE(steps.ok());
  ASSERT_EQ(steps->size(), 1u);  // DESIGN.md: {"patch_embeddings": true}
  EXPECT_EQ((*steps)[0].family->name, "patch_embeddings");
  EXPECT_TRUE((*steps)[0].enabled);
  // The user's entries first, in their order; defaults they did not mention after them.
  const FusionConfig merged = merge_with_default({{"conv2d_patch_embeddings", bool_value(false)}});  // user first
  ASSERT_EQ(merged.size(), 2u);
  EXPECT_EQ(merged[0].family, "conv2d_patch_embeddings");
  EXPECT_FALSE(merged[0].value.enabled);
  EXPECT_EQ(merged[1].family, "patch_embeddings");
  EXPECT_TRUE(merged[1].value.enabled);
}

TEST(FusionConfig, UnknownNameIsAnError) {
  auto r = validate_fusion_config({{"conv_bn", bool_value(true)}});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message, "Unknown fusion type: conv_bn");
}

TEST(FusionConfig, InvalidValueNamesTheFamily) {
  FusionValue v;
  v.kind = FusionValue::Kind::kInvalid;
  v.text = "42";
  auto r = validate_fusion_config({{"patch_embeddings", v}});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("'patch_embeddings' must be true, false or an options mapping, got 42"),
            std::string::npos);
}

TEST(FusionConfig, OptionsMappingEnablesAndUnknownOptionsFail) {
  FusionValue empty;
  empty.kind = FusionValue::Kind::kOptions;
  auto ok = validate_fusion_config({{"patch_embeddings", empty}});
  ASSERT_TRUE(ok.ok());
  EXPECT_TRUE((*ok)[0].enabled);
  FusionValue opts = empty;
  opts.options = {{"tile", "8"}};
  auto bad = validate_fusion_config({{"patch_embeddings", opts}});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("has no option 'tile'"), std::string::npos);
}

TEST(FusionConfig, DuplicateFamilyIsAnError) {
  auto r = validate_fusion_config({{"patch_embeddings", bool_value(true)}, {"patch_embeddings", bool_value(false)}});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("given twice"), std::string::npos);
}

TEST(FusionConfig, UserOrderIsKeptAndConflictsFailFast) {
  // The real registry, plus a second entry that rewrites the same tensors as the Conv2d family.
  std::vector<FusionFamily> registry = fusion_families();
  FusionFamily twin = *find_family("conv2d_patch_embeddings");
  twin.name = "conv2d_patch_embeddings_v2";
  twin.fused_child = "linear_v2";
  registry.push_back(twin);

  auto ordered = validate_fusion_config(
      {{"conv2d_patch_embeddings", bool_value(true)}, {"patch_embeddings", bool_value(true)}}, registry);
  ASSERT_TRUE(ordered.ok()) << ordered.error().message;  // the two real families never clash
  EXPECT_EQ((*ordered)[0].family->name, "conv2d_patch_embeddings");
  EXPECT_EQ((*ordered)[1].family->name, "patch_embeddings");

  auto clash = validate_fusion_config(
      {{"conv2d_patch_embeddings", bool_value(true)}, {"conv2d_patch_embeddings_v2", bool_value(true)}}, registry);
  ASSERT_FALSE(clash.ok());
  EXPECT_EQ(clash.error().message,
            "fusion config: families 'conv2d_patch_embeddings' and 'conv2d_patch_embeddings_v2' both transform the "
            "source pattern '(^|\\.)(patch_embedding|patch_embeddings\\.projection|patch_conv)$ -> {weight,bias}'");
  // A disabled family transforms nothing, so it cannot conflict.
  EXPECT_TRUE(validate_fusion_config({{"conv2d_patch_embeddings", bool_value(true)},
                                      {"conv2d_patch_embeddings_v2", bool_value(false)}},
                                     registry)
                  .ok());
}

}  // namespace
}  // namespace patchfuse
