// patchfuse-convert end to end, through the real binary: the issue's acceptance checks, the
// fuse -> export round trip for every architecture in the table, determinism, exit codes, and
// malformed inputs that must give exit 1, one line on stderr and no output file.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <sys/resource.h>
#include <unistd.h>

#include <cstring>

#include "converter/architectures.h"
#include "converter/convert.h"
#include "converter/export.h"
#include "converter/fusion_flags.h"
#include "converter/safetensors.h"
#include "converter/sample_checkpoint.h"
#include "runtime/rules/fusion_rules.h"
#include "tests/support/test_util.h"

namespace patchfuse {
namespace {

using testing::CommandResult;
using testing::TempDir;

CommandResult convert_cli(const std::string& args) { return testing::run_command(std::string(PATCHFUSE_CONVERT_BIN) + " " + args); }

void make_sample(const std::string& dir, const std::string& model_type, DType dtype, int shards, int64_t embed_dim) {
  SampleSpec spec;
  spec.arch = find_architecture(model_type);
  spec.dtype = dtype;
  spec.shards = shards;
  spec.embed_dim = embed_dim;
  ASSERT_TRUE(write_sample_checkpoint(dir, spec).ok());
}

// One line, naming the tool, and nothing but the error.
void expect_one_line_error(const CommandResult& r, const std::string& needle) {
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_EQ(r.err.rfind("patchfuse-convert: error: ", 0), 0u) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  EXPECT_NE(r.err.find(needle), std::string::npos) << r.err;
}

// The bytes of tensor `name` in a safetensors file, checked against dtype and shape.
std::vector<uint8_t> tensor_bytes(const std::string& file, const std::string& name, std::string* dtype = nullptr,
                                  std::vector<int64_t>* shape = nullptr) {
  auto st = SafetensorsFile::open(file);
  EXPECT_TRUE(st.ok());
  if (!st.ok()) return {};
  const SafetensorsEntry* e = st->find(name);
  EXPECT_NE(e, nullptr) << name;
  if (e == nullptr) return {};
  if (dtype) *dtype = e->dtype;
  if (shape) *shape = e->shape;
  return std::vector<uint8_t>(st->data(*e), st->data(*e) + (e->end - e->begin));
}

TEST(ConvertCli, Qwen2VlShardedBf16AcceptanceCheck) {
  TempDir dir;
  make_sample(dir / "ckpt", "qwen2_vl", DType::kBF16, 2, 0);  // real size: 1280 x 3 x 2 x 14 x 14
  ASSERT_TRUE(testing::file_exists(dir / "ckpt/model.safetensors.index.json"));
  const CommandResult c = convert_cli("convert " + dir / "ckpt" + " -o " + (dir / "m.pfb"));
  ASSERT_EQ(c.exit_code, 0) << c.err;

  const CommandResult i = convert_cli("inspect --json " + (dir / "m.pfb"));
  ASSERT_EQ(i.exit_code, 0) << i.err;
  const auto j = nlohmann::json::parse(i.out);
  EXPECT_EQ(j["inspect_version"], 1) << "the documented version of this JSON (docs/converter.md)";
  ASSERT_EQ(j["modules"].size(), 1u);
  const auto& m = j["modules"][0];
  EXPECT_EQ(m["path"], "visual.patch_embed");
  // Version 1's documented module keys are all there (a build step may rely on each).
  for (const char* key : {"path", "family", "class_name", "layout", "geometry", "patch_volume", "dtype", "source_dtype", "weight",
                          "bias", "preprocessing", "encoder_input", "blocks"}) {
    EXPECT_TRUE(m.contains(key)) << key;
  }
  EXPECT_EQ(m["blocks"]["inputs"], nlohmann::json::array({"rotary_cos", "rotary_sin", "cu_seqlens"}));
  EXPECT_EQ(m["layout"], "fused_linear");
  EXPECT_EQ(m["class_name"], "FusedPatchEmbed");
  EXPECT_EQ(m["weight"]["name"], "visual.patch_embed.linear_proj.weight");
  EXPECT_EQ(m["weight"]["shape"], nlohmann::json::array({1280, 1176}));
  EXPECT_EQ(m["weight"]["dtype"], "BF16");
  EXPECT_EQ(m["weight"]["offset"].get<size_t>() % 64, 0u);
  EXPECT_TRUE(m["bias"].is_null());
  EXPECT_EQ(j["model_type"], "qwen2_vl");
  EXPECT_EQ(j["fusion_config"], nlohmann::json::parse(R"({"patch_embeddings":true})"));

  const CommandResult e = convert_cli("export " + (dir / "m.pfb") + " -o " + (dir / "back.safetensors"));
  ASSERT_EQ(e.exit_code, 0) << e.err;
  std::string dtype;
  std::vector<int64_t> shape;
  const auto back = tensor_bytes(dir / "back.safetensors", "visual.patch_embed.proj.weight", &dtype, &shape);
  EXPECT_EQ(dtype, "BF16");
  EXPECT_EQ(shape, (std::vector<int64_t>{1280, 3, 2, 14, 14}));
  EXPECT_EQ(back, tensor_bytes(dir / "ckpt/model-00001-of-00002.safetensors", "visual.patch_embed.proj.weight"));

  const CommandResult h = convert_cli("inspect " + (dir / "m.pfb"));
  EXPECT_EQ(h.exit_code, 0);
  EXPECT_NE(h.out.find("visual.patch_embed.linear_proj.weight [1280, 1176] BF16"), std::string::npos) << h.out;
}

// fuse -> export gives back the original bytes, for every architecture, F32 and BF16, one or
// several shards, with and without bias (the table decides which have one). Through
// convert_checkpoint and export_model, the calls the tool makes, and through the tool itself once
// per family: its glue is the same for all, and 56 round trips as processes took 23-30 s under
// qemu and ASan.
TEST(ConvertCli, RoundTripIsByteIdenticalForEveryArchitecture) {
  int through_the_tool = 0;
  for (const Architecture& a : architectures()) {
    for (DType dtype : {DType::kF32, DType::kBF16}) {
      SCOPED_TRACE(std::string(a.model_type) + " " + dtype_name(dtype));
      TempDir dir;
      const int shards = dtype == DType::kF32 ? 1 : 2;
      make_sample(dir / "ckpt", std::string(a.model_type), dtype, shards, 24);
      if ((a.model_type == "qwen2_vl" && dtype == DType::kF32) || (a.model_type == "siglip" && dtype == DType::kBF16)) {
        ++through_the_tool;
        ASSERT_EQ(convert_cli("convert " + dir / "ckpt" + " -o " + (dir / "m.pfb") + " --fusion " + std::string(a.family)).exit_code, 0);
        const CommandResult e = convert_cli("export " + (dir / "m.pfb") + " -o " + (dir / "back.safetensors"));
        ASSERT_EQ(e.exit_code, 0) << e.err;
      } else {
        ConvertOptions options;
        options.input = dir / "ckpt";
        options.output = dir / "m.pfb";
        options.fusion = parse_fusion_flags({std::string(a.family)});
        const auto c = convert_checkpoint(options);
        ASSERT_TRUE(c.ok()) << c.error().message;
        const auto e = export_model(dir / "m.pfb", dir / "back.safetensors");
        ASSERT_TRUE(e.ok()) << e.error().message;
      }
      const std::string shard0 = dir / (shards == 1 ? "ckpt/model.safetensors" : "ckpt/model-00001-of-00002.safetensors");
      const std::string shard_last = dir / (shards == 1 ? "ckpt/model.safetensors" : "ckpt/model-00002-of-00002.safetensors");
      const FusionFamily& family = *find_family(a.family);
      const std::string pe(a.patch_embed_path), weight = conv_weight_name(family, pe), bias = conv_bias_name(family, pe);
      EXPECT_EQ(tensor_bytes(dir / "back.safetensors", weight), tensor_bytes(shard0, weight));
      auto st = SafetensorsFile::open(dir / "back.safetensors");
      ASSERT_TRUE(st.ok());
      EXPECT_EQ(st->entries().size(), a.bias ? 2u : 1u);
      if (a.bias) {
        EXPECT_EQ(tensor_bytes(dir / "back.safetensors", bias), tensor_bytes(shard_last, bias));
      }
    }
  }
  EXPECT_EQ(through_the_tool, 2);  // a Conv3d checkpoint in f32, a sharded Conv2d one in bf16
}

// SigLIP2 and Llama 4 already embed patches with a Linear: the converter says so and writes nothing.
TEST(ConvertCli, AlreadyLinearPatchEmbeddingsAreRefusedWithTheReason) {
  for (const char* type : {"siglip2", "llama4"}) {
    TempDir dir;
    make_sample(dir / "ckpt", "siglip", DType::kF32, 1, 16);
    testing::write_text(dir / "ckpt/config.json", std::string(R"({"model_type":")") + type + R"(","vision_config":{}})");
    const CommandResult r = convert_cli("convert " + dir / "ckpt" + " -o " + (dir / "m.pfb"));
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_NE(r.err.find(std::string("model_type '") + type + "': "), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("is already the fused form, so there is nothing to fuse"), std::string::npos) << r.err;
    EXPECT_FALSE(testing::file_exists(dir / "m.pfb"));
  }
}

// DESIGN.md's default fusion config is {"patch_embeddings": true}: a Conv2d checkpoint converts
// when its family is named, and without it the error says which flag to pass.
TEST(ConvertCli, Conv2dFamilyIsNamedOnTheCommandLine) {
  TempDir dir;
  make_sample(dir / "ckpt", "siglip", DType::kBF16, 1, 16);
  const CommandResult r = convert_cli("convert " + dir / "ckpt" + " -o " + (dir / "m.pfb"));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("model_type 'siglip' has a 'conv2d_patch_embeddings' module "
                       "(vision_model.embeddings.patch_embedding): pass --fusion conv2d_patch_embeddings"),
            std::string::npos)
      << r.err;
  EXPECT_FALSE(testing::file_exists(dir / "m.pfb"));
  ASSERT_EQ(convert_cli("convert " + dir / "ckpt" + " -o " + (dir / "m.pfb") + " --fusion conv2d_patch_embeddings").exit_code, 0);
  const auto j = nlohmann::json::parse(convert_cli("inspect --json " + (dir / "m.pfb")).out);
  EXPECT_EQ(j["fusion_config"], nlohmann::json::parse(R"({"conv2d_patch_embeddings":true,"patch_embeddings":true})"));
  EXPECT_EQ(j["modules"][0]["weight"]["name"], "vision_model.embeddings.patch_embedding.linear.weight");
  EXPECT_EQ(j["modules"][0]["class_name"], "FusedConv2d");
  // =false keeps the conv layout (the runtime fuses it at load time or runs the 2-D convolution).
  ASSERT_EQ(convert_cli("convert " + dir / "ckpt" + " -o " + (dir / "c.pfb") + " --fusion conv2d_patch_embeddings=false").exit_code, 0);
  const auto c = nlohmann::json::parse(convert_cli("inspect --json " + (dir / "c.pfb")).out);
  EXPECT_EQ(c["modules"][0]["layout"], "original_conv");
  EXPECT_EQ(c["modules"][0]["weight"]["name"], "vision_model.embeddings.patch_embedding.weight");
  EXPECT_EQ(c["modules"][0]["weight"]["shape"], nlohmann::json::array({16, 3, 14, 14}));
}

// A processor that sizes images by their longest edge (Pixtral, Idefics3, ...) converts with a
// note; the model takes pixel_values only.
TEST(ConvertCli, ProcessorWithoutAFixedSizeIsNoted) {
  TempDir dir;
  make_sample(dir / "ckpt", "pixtral", DType::kF32, 1, 16);
  const CommandResult r = convert_cli("convert " + dir / "ckpt" + " -o " + (dir / "m.pfb") + " --fusion conv2d_patch_embeddings");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE((r.out + r.err).find("not to one fixed size, and patchfuse does not reproduce that resize: the model takes "
                                 "pixel_values only"),
            std::string::npos)
      << r.out << r.err;
  const auto j = nlohmann::json::parse(convert_cli("inspect --json " + (dir / "m.pfb")).out);
  EXPECT_EQ(j["modules"][0]["weight"]["name"], "patch_conv.linear.weight");
  EXPECT_TRUE(j["modules"][0]["preprocessing"].is_null());
}

// inspect lists the steps of each model type's encoder input, as text and as JSON, in Hugging
// Face's order, with the tensors found beside the patch embedding (ViT's naming one level up).
TEST(ConvertCli, InspectListsTheEncoderInputSteps) {
  const std::vector<std::pair<const char*, const char*>> cases = {
      {"qwen2_vl", "none (the patch embedding is the encoder input)"},
      {"qwen2_5_vl", "window order (112 px windows of 2x2 merge groups)"},
      {"qwen3_vl", "+ position (model.visual.pos_embed.weight, 48x48, bilinear_align_corners)"},
      {"glm4v", "RMSNorm (model.visual.post_conv_layernorm.weight, eps 1e-05), + position "
                "(model.visual.embeddings.position_embedding.weight, 24x24, grid_sample_bicubic)"},
      {"clip", "class row first (vision_model.embeddings.class_embedding), + position "
               "(vision_model.embeddings.position_embedding.weight, 16x16, bicubic), LayerNorm (vision_model.pre_layrnorm.weight"},
      {"dinov2", "class row first (embeddings.cls_token), + position (embeddings.position_embeddings, 37x37, bicubic)"},
      {"mllama", "not computed: its tile and position terms are gated"}};
  for (const auto& [type, steps] : cases) {
    SCOPED_TRACE(type);
    TempDir dir;
    make_sample(dir / "ckpt", type, DType::kF32, 1, 16);
    const Architecture& a = *find_architecture(type);
    ASSERT_EQ(convert_cli("convert " + dir / "ckpt" + " -o " + (dir / "m.pfb") + " --fusion " + std::string(a.family)).exit_code, 0);
    const CommandResult text = convert_cli("inspect " + (dir / "m.pfb"));
    EXPECT_NE(text.out.find(std::string("  encoder input  ") + steps), std::string::npos) << text.out;
    const auto j = nlohmann::json::parse(convert_cli("inspect --json " + (dir / "m.pfb")).out)["modules"][0]["encoder_input"];
    EXPECT_NE(j["steps"].get<std::string>().find(steps), std::string::npos) << j.dump();
  }
}

// inspect shows how videos are sized: the stored video rule, or "as images" without one.
TEST(ConvertCli, InspectShowsTheVideoRule) {
  TempDir dir;
  for (const char* preset : {"qwen2_vl", "qwen3_vl"}) {
    const std::string model = dir / (std::string(preset) + ".pfb");
    ASSERT_EQ(convert_cli("convert " + std::string(PATCHFUSE_FRAMES_DIR) + "/" + preset + " -o " + model).exit_code, 0);
    const auto video = nlohmann::json::parse(convert_cli("inspect --json " + model).out)["modules"][0]["preprocessing"]["video"];
    if (std::string(preset) == "qwen2_vl") {
      EXPECT_EQ(video, "as images");
    } else {
      EXPECT_EQ(video, nlohmann::json::parse(R"({"smart_resize": "glm4v", "min_pixels": 131072, "max_pixels": 786432,
                                                 "cap_pixels_per_frame": false})"));
      EXPECT_NE(convert_cli("inspect " + model).out.find(R"("video":{"smart_resize":"glm4v")"), std::string::npos);
    }
  }
}

// The resize the runtime reproduces: the processor's filter and crop from the file, the semantics
// from --resize / --video-resize (defaults pil and torch), all shown by inspect; torch refuses a
// filter it does not have, naming the flag, the file and the filter.
TEST(ConvertCli, ResizeSemanticsAreStoredAndShown) {
  TempDir dir;
  const std::string clip = std::string(PATCHFUSE_IMAGES_DIR) + "/e2e/clip";
  ASSERT_EQ(convert_cli("convert " + clip + " -o " + (dir / "a.pfb") + " --fusion conv2d_patch_embeddings").exit_code, 0);
  auto pre = nlohmann::json::parse(convert_cli("inspect --json " + (dir / "a.pfb")).out)["modules"][0]["preprocessing"];
  EXPECT_EQ(pre["resample"], "bicubic");
  EXPECT_EQ(pre["resize"], nlohmann::json::parse(R"({"image": "pil", "video": "torch"})"));
  EXPECT_EQ(pre["resize_to"], nlohmann::json::parse(R"({"shortest_edge": 224})"));
  EXPECT_EQ(pre["center_crop"], true);
  EXPECT_EQ(pre["size"], nlohmann::json::parse(R"({"height": 224, "width": 224})"));
  ASSERT_EQ(convert_cli("convert " + clip + " -o " + (dir / "b.pfb") +
                        " --fusion conv2d_patch_embeddings --resize torch --video-resize pil").exit_code, 0);
  pre = nlohmann::json::parse(convert_cli("inspect --json " + (dir / "b.pfb")).out)["modules"][0]["preprocessing"];
  EXPECT_EQ(pre["resize"], nlohmann::json::parse(R"({"image": "torch", "video": "pil"})"));
  EXPECT_NE(convert_cli("inspect " + (dir / "b.pfb")).out.find(R"("resize":{"image":"torch","video":"pil"})"), std::string::npos);

  ASSERT_EQ(std::system(("cp -r '" + clip + "' '" + (dir / "lanczos") + "'").c_str()), 0);
  auto config = nlohmann::json::parse(testing::read_bytes(dir / "lanczos/preprocessor_config.json"));
  config["resample"] = 1;
  testing::write_text(dir / "lanczos/preprocessor_config.json", config.dump());
  ASSERT_EQ(convert_cli("convert " + (dir / "lanczos") + " -o " + (dir / "c.pfb") + " --fusion conv2d_patch_embeddings").exit_code, 0);
  pre = nlohmann::json::parse(convert_cli("inspect --json " + (dir / "c.pfb")).out)["modules"][0]["preprocessing"];
  EXPECT_EQ(pre["resize"], nlohmann::json::parse(R"({"image": "pil", "video": "pil"})")) << "torch has no lanczos";
  const CommandResult r = convert_cli("convert " + (dir / "lanczos") + " -o " + (dir / "d.pfb") +
                                      " --fusion conv2d_patch_embeddings --resize torch");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("--resize torch: " + (dir / "lanczos/preprocessor_config.json") +
                       "'s resample 1 (lanczos) is not one of torch's interpolations"),
            std::string::npos)
      << r.err;
  EXPECT_FALSE(testing::file_exists(dir / "d.pfb"));
  EXPECT_EQ(convert_cli("convert " + clip + " -o " + (dir / "e.pfb") + " --resize cubic").exit_code, 2);
}

TEST(ConvertCli, OriginalLayoutWithFusionDisabled) {
  TempDir dir;
  make_sample(dir / "ckpt", "glm4v", DType::kBF16, 1, 32);
  ASSERT_EQ(convert_cli("convert " + dir / "ckpt" + " -o " + (dir / "m.pfb") + " --fusion patch_embeddings=false").exit_code, 0);
  const auto j = nlohmann::json::parse(convert_cli("inspect --json " + (dir / "m.pfb")).out);
  EXPECT_EQ(j["modules"][0]["layout"], "original_conv");
  EXPECT_EQ(j["modules"][0]["class_name"], "Glm4vVisionPatchEmbed");
  EXPECT_EQ(j["modules"][0]["weight"]["name"], "model.visual.patch_embed.proj.weight");
  EXPECT_EQ(j["modules"][0]["weight"]["shape"], nlohmann::json::array({32, 3, 2, 14, 14}));
  EXPECT_EQ(j["modules"][0]["bias"]["name"], "model.visual.patch_embed.proj.bias");
  EXPECT_EQ(j["fusion_config"], nlohmann::json::parse(R"({"patch_embeddings":false})"));
  ASSERT_EQ(convert_cli("export " + (dir / "m.pfb") + " -o " + (dir / "back.safetensors")).exit_code, 0);
  EXPECT_EQ(tensor_bytes(dir / "back.safetensors", "model.visual.patch_embed.proj.weight"),
            tensor_bytes(dir / "ckpt/model.safetensors", "model.visual.patch_embed.proj.weight"));
}

TEST(ConvertCli, DeterministicOutput) {
  TempDir dir;
  make_sample(dir / "ckpt", "qwen3_vl", DType::kBF16, 2, 40);
  ASSERT_EQ(convert_cli("convert " + dir / "ckpt" + " -o " + (dir / "a.pfb")).exit_code, 0);
  ASSERT_EQ(convert_cli("convert " + dir / "ckpt" + " -o " + (dir / "b.pfb")).exit_code, 0);
  EXPECT_EQ(testing::read_bytes(dir / "a.pfb"), testing::read_bytes(dir / "b.pfb"));
}

TEST(ConvertCli, DtypeConversionSaysWhenLossy) {
  TempDir dir;
  make_sample(dir / "ckpt", "qwen3_vl", DType::kF32, 1, 16);
  const CommandResult bf = convert_cli("convert " + dir / "ckpt" + " -o " + (dir / "bf.pfb") + " --dtype bf16");
  ASSERT_EQ(bf.exit_code, 0) << bf.err;
  EXPECT_NE(bf.err.find("model.visual.patch_embed.proj.weight: F32 -> BF16 is lossy"), std::string::npos) << bf.err;
  auto j = nlohmann::json::parse(convert_cli("inspect --json " + (dir / "bf.pfb")).out);
  EXPECT_EQ(j["modules"][0]["dtype"], "BF16");
  EXPECT_EQ(j["modules"][0]["source_dtype"], "F32");
  EXPECT_EQ(j["modules"][0]["bias"]["dtype"], "BF16");

  // BF16 -> F32 is exact and says so.
  make_sample(dir / "ckpt16", "qwen3_vl", DType::kBF16, 1, 16);
  const CommandResult up = convert_cli("convert " + dir / "ckpt16" + " -o " + (dir / "f32.pfb") + " --dtype f32");
  ASSERT_EQ(up.exit_code, 0);
  EXPECT_NE(up.err.find("BF16 -> F32 is exact"), std::string::npos) << up.err;
  const CommandResult f16 = convert_cli("convert " + dir / "ckpt16" + " -o " + (dir / "f16.pfb") + " --dtype f16");
  ASSERT_EQ(f16.exit_code, 0);
  EXPECT_NE(f16.err.find("BF16 -> F16"), std::string::npos) << f16.err;
}

TEST(ConvertCli, SingleFileInputWithConfigFlagAndGeometryOverride) {
  TempDir dir;
  make_sample(dir / "ckpt", "qwen2_5_vl", DType::kBF16, 1, 16);
  testing::write_text(dir / "other.json", R"({"model_type":"my_vlm","vision_config":{"patch_size":14,"in_chans":3}})");
  const CommandResult unknown =
      convert_cli("convert " + dir / "ckpt/model.safetensors" + " -o " + (dir / "m.pfb") + " --config " + (dir / "other.json"));
  expect_one_line_error(unknown, "model_type 'my_vlm' is not a known architecture");
  EXPECT_FALSE(testing::file_exists(dir / "m.pfb"));
  const CommandResult ok = convert_cli("convert " + dir / "ckpt/model.safetensors" + " -o " + (dir / "m.pfb") + " --config " +
                                       (dir / "other.json") + " --geometry stride=2x14x14");
  ASSERT_EQ(ok.exit_code, 0) << ok.err;
  const auto j = nlohmann::json::parse(convert_cli("inspect --json " + (dir / "m.pfb")).out);
  EXPECT_EQ(j["model_type"], "my_vlm");
  EXPECT_EQ(j["modules"][0]["class_name"], "");
}

TEST(ConvertCli, SeveralPatchEmbeddingsAreAllConvertedAndIneligibleOnesListed) {
  TempDir dir;
  make_sample(dir / "ckpt", "qwen2_vl", DType::kF32, 1, 8);
  // Add a second encoder's patch embedding with a 2x28x28 kernel next to the first one.
  auto st = SafetensorsFile::open(dir / "ckpt/model.safetensors");
  ASSERT_TRUE(st.ok());
  std::vector<TensorToWrite> tensors;
  for (const SafetensorsEntry& e : st->entries()) {
    tensors.push_back({e.name, *dtype_from_name(e.dtype), e.shape, st->data(e), static_cast<size_t>(e.end - e.begin)});
  }
  const std::vector<uint8_t> second(8 * 3 * 2 * 14 * 14 * 4, 0);
  tensors.push_back({"audio.patch_embed.proj.weight", DType::kF32, {8, 3, 2, 14, 14}, second.data(), second.size()});
  testing::write_bytes(dir / "two.safetensors", serialize_safetensors(tensors, {}));
  const CommandResult two = convert_cli("convert " + dir / "two.safetensors" + " --config " + (dir / "ckpt/config.json") + " -o " +
                                        (dir / "two.pfb"));
  ASSERT_EQ(two.exit_code, 0) << two.err;
  const auto j = nlohmann::json::parse(convert_cli("inspect --json " + (dir / "two.pfb")).out);
  ASSERT_EQ(j["modules"].size(), 2u);
  EXPECT_EQ(j["modules"][0]["path"], "audio.patch_embed");
  EXPECT_EQ(j["modules"][1]["path"], "visual.patch_embed");

  // With an ineligible override, every module is skipped and listed: that is an error.
  const CommandResult none = convert_cli("convert " + dir / "two.safetensors" + " --config " + (dir / "ckpt/config.json") + " -o " +
                                         (dir / "none.pfb") + " --geometry stride=1x14x14");
  expect_one_line_error(none, "none of the 2 patch embeddings is eligible");
  EXPECT_NE(none.err.find("stride (1,14,14) must equal kernel (2,14,14)"), std::string::npos);
  EXPECT_FALSE(testing::file_exists(dir / "none.pfb"));
}

// A 10 GiB shard (sparse on disk) beside the patch embedding: conversion must read only the
// headers and the tensors it needs, so its peak memory stays near the patch embedding's size.
// (Time is a benchmark's business; memory is deterministic enough to assert.)
TEST(ConvertCli, LargeShardedCheckpointTouchesOnlyThePatchEmbedding) {
  if (sizeof(void*) < 8) GTEST_SKIP() << "a 32-bit process cannot map a 10 GiB shard (the converter is a host tool)";
  TempDir dir;
  make_sample(dir / "ckpt", "qwen2_vl", DType::kBF16, 2, 0);
  const uint64_t big = 10ull << 30;
  const std::string header = R"({"model.layers.0.mlp.weight":{"dtype":"BF16","shape":[)" + std::to_string(big / 2) +
                             R"(],"data_offsets":[0,)" + std::to_string(big) + "]}}";
  std::string head(8, '\0');
  for (int i = 0; i < 8; ++i) head[i] = static_cast<char>(header.size() >> (8 * i));
  head += header;
  testing::write_text(dir / "ckpt/model-big.safetensors", head);
  ASSERT_EQ(::truncate((dir / "ckpt/model-big.safetensors").c_str(), static_cast<off_t>(head.size() + big)), 0);
  auto index = nlohmann::json::parse(testing::read_bytes(dir / "ckpt/model.safetensors.index.json"));
  index["weight_map"]["model.layers.0.mlp.weight"] = "model-big.safetensors";
  testing::write_text(dir / "ckpt/model.safetensors.index.json", index.dump());

  const CommandResult r = convert_cli("convert " + dir / "ckpt" + " -o " + (dir / "m.pfb"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  if (testing::kSanitized) GTEST_SKIP() << "sanitizer shadow memory: the peak-RSS bound holds in ordinary builds only";
  // The weight is 2.9 MB; the converter keeps a few copies of it (mapped, converted, built).
  EXPECT_LT(r.peak_rss_mb, 64.0) << "peak RSS " << r.peak_rss_mb << " MB while a 10 GiB shard sat beside the weights";
}

// ---- malformed inputs: exit 1, one line naming the problem, no output file left behind -------

class ConvertCliBadInput : public ::testing::Test {
 protected:
  void SetUp() override { make_sample(dir_ / "ckpt", "qwen2_vl", DType::kBF16, 1, 8); }
  std::string ckpt() const { return dir_ / "ckpt"; }
  std::string weights() const { return dir_ / "ckpt/model.safetensors"; }
  std::string out() const { return dir_ / "out/m.pfb"; }
  void expect_failure(const std::string& extra_args, const std::string& needle) {
    ASSERT_EQ(std::system(("mkdir -p '" + (dir_ / "out") + "'").c_str()), 0);
    const CommandResult r = convert_cli("convert " + ckpt() + " -o " + out() + " " + extra_args);
    expect_one_line_error(r, needle);
    EXPECT_TRUE(testing::list_dir(dir_ / "out").empty()) << "a failed command left files behind";
  }
  // Replaces the header of the sample's safetensors file, keeping its data.
  void rewrite_header(const std::string& header_json, size_t data_bytes) {
    std::vector<uint8_t> f(8);
    std::string h = header_json;
    for (int i = 0; i < 8; ++i) f[i] = static_cast<uint8_t>(h.size() >> (8 * i));
    f.insert(f.end(), h.begin(), h.end());
    f.resize(f.size() + data_bytes, 0);
    testing::write_bytes(weights(), f);
  }
  TempDir dir_;
};

TEST_F(ConvertCliBadInput, TruncatedSafetensors) {
  auto bytes = testing::read_bytes(weights());
  bytes.resize(5);
  testing::write_bytes(weights(), bytes);
  expect_failure("", "truncated safetensors file (5 bytes)");
}

TEST_F(ConvertCliBadInput, HeaderLengthBeyondFile) {
  auto bytes = testing::read_bytes(weights());
  bytes.resize(200);
  testing::write_bytes(weights(), bytes);
  expect_failure("", "runs past the end of the file (200 bytes)");
}

TEST_F(ConvertCliBadInput, TensorPastTheData) {
  rewrite_header(R"({"visual.patch_embed.proj.weight":{"dtype":"BF16","shape":[8,3,2,14,14],"data_offsets":[0,18816]}})", 100);
  expect_failure("", "run past the data section (100 bytes)");
}

TEST_F(ConvertCliBadInput, OverlappingTensors) {
  rewrite_header(R"({"visual.patch_embed.proj.weight":{"dtype":"BF16","shape":[8,3,2,14,14],"data_offsets":[0,18816]},)"
                 R"("visual.x":{"dtype":"BF16","shape":[8],"data_offsets":[100,116]}})",
                 18816);
  expect_failure("", "overlap");
}

TEST_F(ConvertCliBadInput, DtypeShapeByteCountMismatch) {
  rewrite_header(R"({"visual.patch_embed.proj.weight":{"dtype":"F32","shape":[8,3,2,14,14],"data_offsets":[0,18816]}})",
                 18816);
  expect_failure("", "hold 18816 bytes but shape (8,3,2,14,14) x F32 needs 37632");
}

TEST_F(ConvertCliBadInput, UnsupportedWeightDtype) {
  rewrite_header(R"({"visual.patch_embed.proj.weight":{"dtype":"I16","shape":[8,3,2,14,14],"data_offsets":[0,18816]}})",
                 18816);
  expect_failure("", "has dtype I16; patch-embedding weights must be F32, F16 or BF16");
}

TEST_F(ConvertCliBadInput, ConfigMissingEveryGeometryField) {
  testing::write_text(dir_ / "ckpt/config.json", R"({"model_type":"qwen2_vl","vision_config":{"depth":2}})");
  expect_failure("", "none is present");
}

TEST_F(ConvertCliBadInput, ConfigDisagreesWithWeight) {
  testing::write_text(dir_ / "ckpt/config.json", R"({"model_type":"qwen2_vl","vision_config":{"patch_size":16}})");
  expect_failure("", "patch_size (16,16) disagrees with visual.patch_embed.proj.weight kernel (h,w) (14,14)");
}

TEST_F(ConvertCliBadInput, IneligibleConv) {
  testing::write_text(dir_ / "ckpt/config.json", R"({"model_type":"my_vlm","vision_config":{"patch_size":14}})");
  expect_failure("--geometry stride=2x14x14,padding=0x1x1",
                 "none of the 1 patch embeddings is eligible; skipped visual.patch_embed: not eligible for "
                 "'patch_embeddings' fusion: padding (0,1,1) must be all 0");
}

// Each rule at its boundary in each axis, through the converter (--geometry on an architecture it
// does not know): stride one off the kernel, padding 1, dilation 2, groups 2 (the weight's 3 input
// channels per group make 6, and embed_dim 8 divides by 2, so the geometry is valid and only the
// rule refuses it). Each is the one-line refusal naming the rule, with no file written.
TEST_F(ConvertCliBadInput, IneligibleAtEveryRuleBoundary) {
  testing::write_text(dir_ / "ckpt/config.json", R"({"model_type":"my_vlm","vision_config":{"patch_size":14}})");
  const std::string kernel[3] = {"2", "14", "14"};
  for (int axis = 0; axis < 3; ++axis) {
    SCOPED_TRACE("axis " + std::to_string(axis));
    const auto dims = [&](const std::string& a, const std::string& b, const std::string& c) { return a + "x" + b + "x" + c; };
    const auto with = [&](std::string base[3], const std::string& v) {
      std::string d[3] = {base[0], base[1], base[2]};
      d[axis] = v;
      return dims(d[0], d[1], d[2]);
    };
    std::string k[3] = {kernel[0], kernel[1], kernel[2]}, zeros[3] = {"0", "0", "0"}, ones[3] = {"1", "1", "1"};
    for (int delta : {1, -1}) {
      const std::string stride = with(k, std::to_string(std::stoi(kernel[axis]) + delta));
      expect_failure("--geometry stride=" + stride, "must equal kernel (2,14,14)");
    }
    expect_failure("--geometry stride=2x14x14,padding=" + with(zeros, "1"), "must be all 0");
    expect_failure("--geometry stride=2x14x14,dilation=" + with(ones, "2"), "must be all 1");
  }
  expect_failure("--geometry stride=2x14x14,groups=2", "groups 2 must be 1");
}

TEST_F(ConvertCliBadInput, UnknownFusionName) { expect_failure("--fusion conv_bn=true", "Unknown fusion type: conv_bn"); }

TEST_F(ConvertCliBadInput, InvalidFusionValue) {
  expect_failure("--fusion patch_embeddings=maybe", "value of 'patch_embeddings' must be true, false or an options mapping, got 'maybe'");
}

TEST_F(ConvertCliBadInput, NoPatchEmbedding) {
  rewrite_header(R"({"visual.blocks.0.proj.weight":{"dtype":"BF16","shape":[8],"data_offsets":[0,16]}})", 16);
  expect_failure("", "no patch embedding found");
}

TEST_F(ConvertCliBadInput, MissingConfig) {
  ASSERT_EQ(std::remove((dir_ / "ckpt/config.json").c_str()), 0);
  expect_failure("", "config.json: cannot read the model config (pass --config CONFIG.json): cannot open");
}

// A Hugging Face hub snapshot (every file a link into blobs/) converts; the cache root, the
// model's entry and a link whose blob is missing each say what to pass or what is missing.
TEST_F(ConvertCliBadInput, HubCacheLayout) {
  const std::string hub = dir_ / "hub", entry = hub + "/models--org--m", snap = entry + "/snapshots/abc123";
  ASSERT_EQ(std::system(("mkdir -p '" + snap + "' '" + entry + "/blobs' '" + (dir_ / "out") + "'").c_str()), 0);
  for (const char* name : {"config.json", "preprocessor_config.json", "model.safetensors"}) {
    const std::string blob = entry + "/blobs/" + name + ".blob";
    testing::write_bytes(blob, testing::read_bytes(ckpt() + "/" + name));
    ASSERT_EQ(::symlink((std::string("../../blobs/") + name + ".blob").c_str(), (snap + "/" + name).c_str()), 0);
  }
  const CommandResult ok = convert_cli("convert " + snap + " -o " + out());
  ASSERT_EQ(ok.exit_code, 0) << ok.err;
  EXPECT_EQ(testing::read_bytes(out()), [&] {
    convert_cli("convert " + ckpt() + " -o " + (dir_ / "out/plain.pfb"));
    return testing::read_bytes(dir_ / "out/plain.pfb");
  }());
  expect_one_line_error(convert_cli("convert " + hub + " -o " + (dir_ / "x.pfb")),
                        "a Hugging Face hub cache; pass models--ORG--NAME/snapshots/<revision> (models here: models--org--m)");
  expect_one_line_error(convert_cli("convert " + entry + " -o " + (dir_ / "x.pfb")),
                        "a Hugging Face hub cache entry; pass one of its snapshots/<revision> folders (here: abc123)");
  ASSERT_EQ(std::remove((entry + "/blobs/model.safetensors.blob").c_str()), 0);
  expect_one_line_error(convert_cli("convert " + snap + " -o " + (dir_ / "x.pfb")),
                        "model.safetensors is a link to ../../blobs/model.safetensors.blob, which does not exist");
  EXPECT_FALSE(testing::file_exists(dir_ / "x.pfb"));
}

// --strict: a complete checkpoint converts as without it; one that would only take pixel_values
// (no preprocessor config) is refused with that note as the one-line error, and nothing written.
TEST_F(ConvertCliBadInput, StrictRefusesAMissingCapability) {
  ASSERT_EQ(std::system(("mkdir -p '" + (dir_ / "out") + "'").c_str()), 0);
  const CommandResult ok = convert_cli("convert " + ckpt() + " -o " + out() + " --strict");
  ASSERT_EQ(ok.exit_code, 0) << ok.err;
  EXPECT_EQ(ok.err, "");
  std::remove(out().c_str());
  ASSERT_EQ(std::remove((dir_ / "ckpt/preprocessor_config.json").c_str()), 0);
  expect_failure("--strict", "--strict: no preprocessor_config.json beside");
  const CommandResult lenient = convert_cli("convert " + ckpt() + " -o " + out());
  ASSERT_EQ(lenient.exit_code, 0) << lenient.err;
  EXPECT_NE(lenient.err.find("note: no preprocessor_config.json"), std::string::npos);
}

TEST_F(ConvertCliBadInput, RefusesToOverwriteTheInput) {
  const auto before = testing::read_bytes(weights());
  const CommandResult r = convert_cli("convert " + ckpt() + " -o " + weights());
  expect_one_line_error(r, "refusing to overwrite an input");
  EXPECT_EQ(testing::read_bytes(weights()), before);
}

TEST_F(ConvertCliBadInput, ExportAndInspectOfABadModel) {
  testing::write_bytes(dir_ / "bad.pfb", {'n', 'o', 'p', 'e', 'x', 'x', 'x', 'x', 0, 0});
  expect_one_line_error(convert_cli("inspect " + (dir_ / "bad.pfb")), "is not 'PFB1'");
  ASSERT_EQ(std::system(("mkdir -p '" + (dir_ / "out") + "'").c_str()), 0);
  expect_one_line_error(convert_cli("export " + (dir_ / "bad.pfb") + " -o " + (dir_ / "out/x.safetensors")), "is not 'PFB1'");
  EXPECT_TRUE(testing::list_dir(dir_ / "out").empty());
  // A safetensors file is not a model: its identifier bytes (part of its header length, NULs
  // included) are escaped, so the message keeps its point.
  expect_one_line_error(convert_cli("inspect " + weights()), "' is not 'PFB1'; not a patchfuse model");
  EXPECT_NE(convert_cli("inspect " + weights()).err.find("\\x00"), std::string::npos);
}

TEST(ConvertCliUsage, ExitCodeTwoForUsageErrors) {
  EXPECT_EQ(convert_cli("").exit_code, 2);
  EXPECT_EQ(convert_cli("convert").exit_code, 2);                  // INPUT and -o missing
  EXPECT_EQ(convert_cli("convert x -o y --dtype f8").exit_code, 2);  // not one of keep|f32|f16|bf16
  EXPECT_EQ(convert_cli("convert x -o y --geometry stride").exit_code, 2);
  EXPECT_EQ(convert_cli("frobnicate").exit_code, 2);
  const CommandResult help = convert_cli("--help");
  EXPECT_EQ(help.exit_code, 0);
  EXPECT_NE(help.out.find("convert"), std::string::npos);
}

}  // namespace
}  // namespace patchfuse
