// Hugging Face's preprocessing as numbers: smart_resize against a table computed by Python itself
// (tests/fixtures/frames/smart_resize.json: halves to even, both bounds, both variants), the shared
// rule that ties a preprocessing to the weights, and the converter's errors for
// preprocessor_config.json.
#include <gtest/gtest.h>

#include <filesystem>
#include <tuple>
#include <nlohmann/json.hpp>

#include "converter/convert.h"
#include "converter/preprocessor_config.h"
#include "runtime/model/model_file.h"
#include "runtime/frames/preprocessing.h"
#include "tests/support/geometry.h"
#include "tests/support/test_util.h"

namespace patchfuse {
namespace {

const std::string kFixtures = PATCHFUSE_FRAMES_DIR;

TEST(Preprocessing, SmartResizeMatchesPython) {
  const auto table = nlohmann::json::parse(testing::read_bytes(kFixtures + "/smart_resize.json"));
  size_t videos = 0;
  for (const auto& row : table) {
    Preprocessing p;
    const ResizeVariant variant = row["variant"] == "glm4v" ? ResizeVariant::kGlm4v : ResizeVariant::kQwen2Vl;
    p.patch_size = row["patch_size"];
    const int64_t h = row["height"], w = row["width"];
    Result<std::pair<int64_t, int64_t>> got = make_error(Code::kInternal, "not computed");
    if (row.contains("frames")) {  // a video: the video rule; the image rule must not matter
      ++videos;
      p.min_pixels = 1;
      p.max_pixels = 2;
      p.video = VideoResize{variant, row["min_pixels"], row["max_pixels"], row["cap"]};
      got = video_resize_target(p, row["frames"], h, w);
    } else {
      p.resize = variant;
      p.min_pixels = row["min_pixels"];
      p.max_pixels = row["max_pixels"];
      got = smart_resize(p, h, w);
    }
    ASSERT_TRUE(got.ok()) << row.dump() << ": " << got.error().message;
    EXPECT_EQ(got->first, row["resized"][0].get<int64_t>()) << row.dump();
    EXPECT_EQ(got->second, row["resized"][1].get<int64_t>()) << row.dump();
  }
  EXPECT_GT(table.size() - videos, 50u);
  EXPECT_GT(videos, 300u);
}

// A video without a stored video rule is sized by the image rule (transformers without a video
// config); Qwen3-VL's and GLM-4V's video rule refuses fewer than temporal_patch_size frames, as
// transformers does; a Conv2d model sizes each frame as an image.
TEST(Preprocessing, VideoSizingRules) {
  Preprocessing p;
  p.min_pixels = 56 * 56;
  p.max_pixels = 28 * 28 * 1280;
  EXPECT_EQ(*video_resize_target(p, 8, 1080, 1920), *smart_resize(p, 1080, 1920));
  p.video = VideoResize{ResizeVariant::kGlm4v, 128 * 28 * 28, 28 * 28 * 768, false};
  EXPECT_NE(*video_resize_target(p, 8, 1080, 1920), *smart_resize(p, 1080, 1920));
  auto one = video_resize_target(p, 1, 1080, 1920);
  ASSERT_FALSE(one.ok());
  EXPECT_NE(one.error().message.find("1 frames; this video processor needs at least temporal_patch_size = 2"),
            std::string::npos) << one.error().message;
  EXPECT_FALSE(video_resize_target(p, 0, 1080, 1920).ok());
  p.resize = ResizeVariant::kFixed;
  p.video.reset();
  p.fixed_height = p.fixed_width = 384;
  EXPECT_EQ(*video_resize_target(p, 8, 1080, 1920), std::make_pair(int64_t{384}, int64_t{384}));
}

TEST(Preprocessing, SmartResizeRefusesExtremeAspectRatios) {
  Preprocessing p;
  p.min_pixels = 3136;
  p.max_pixels = 1003520;
  auto r = smart_resize(p, 10, 2500);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("aspect ratio above 200"), std::string::npos);
  EXPECT_FALSE(smart_resize(p, 0, 10).ok());
}

TEST(Preprocessing, RuleTiesPreprocessingToTheWeights) {
  ConvGeometry g;
  g.kernel = g.stride = {2, 14, 14};
  g.padding = {0, 0, 0};
  g.dilation = {1, 1, 1};
  g.in_channels = 3;
  g.embed_dim = 8;
  Preprocessing p;
  p.mean = {0.5f, 0.5f, 0.5f};
  p.std = {0.5f, 0.5f, 0.5f};
  p.min_pixels = 1;
  p.max_pixels = 10;
  EXPECT_TRUE(check_preprocessing(p, g, "m").ok());
  auto error_of = [&](Preprocessing q) {
    Status s = check_preprocessing(q, g, "m");
    return s.ok() ? std::string("(accepted)") : s.error().message;
  };
  Preprocessing q = p;
  q.patch_size = 16;
  EXPECT_NE(error_of(q).find("patch_size 16 disagrees with the weight's kernel (2,14,14)"), std::string::npos) << error_of(q);
  q = p;
  q.temporal_patch_size = 1;
  EXPECT_NE(error_of(q).find("temporal_patch_size 1 disagrees with the weight's kernel t 2"), std::string::npos);
  q = p;
  q.mean = {0.5f};
  EXPECT_NE(error_of(q).find("1 image_mean and 3 image_std values for a weight with in_channels 3"), std::string::npos);
  q = p;
  q.std[1] = 0;
  EXPECT_NE(error_of(q).find("image_std[1] = 0"), std::string::npos);
  q = p;
  q.min_pixels = 20;
  EXPECT_NE(error_of(q).find("min_pixels 20 and max_pixels 10"), std::string::npos);
  q = p;
  q.video = VideoResize{ResizeVariant::kGlm4v, 1, 10, true};
  EXPECT_EQ(error_of(q), "(accepted)");
  q.video->min_pixels = 11;
  EXPECT_NE(error_of(q).find("video min_pixels 11 and max_pixels 10"), std::string::npos) << error_of(q);
  q.video = VideoResize{ResizeVariant::kQwen2Vl, 1, 10, true};
  EXPECT_NE(error_of(q).find("caps video pixels per frame with the qwen2_vl video resize"), std::string::npos);
  q.video = VideoResize{ResizeVariant::kFixed, 1, 10, false};
  EXPECT_NE(error_of(q).find("video resize fixed must be qwen2_vl or glm4v"), std::string::npos);
}

class PreprocessorConfig : public ::testing::Test {
 protected:
  // A copy of the qwen2_vl frames checkpoint with `text` as its preprocessor_config.json.
  std::string convert_with(const std::string& text) {
    const std::string src = kFixtures + "/qwen2_vl";
    testing::write_bytes(dir_ / "config.json", testing::read_bytes(src + "/config.json"));
    testing::write_bytes(dir_ / "model.safetensors", testing::read_bytes(src + "/model.safetensors"));
    testing::write_text(dir_ / "preprocessor_config.json", text);
    ConvertOptions o;
    o.input = dir_.path();
    o.output = dir_ / "m.pfb";
    auto r = convert_checkpoint(o);
    EXPECT_FALSE(testing::file_exists(dir_ / "m.pfb") && !r.ok());
    return r.ok() ? "(accepted)" : r.error().message;
  }
  testing::TempDir dir_;
};

TEST_F(PreprocessorConfig, DefaultsAndSizeKeys) {
  EXPECT_EQ(convert_with(R"({"patch_size": 14})"), "(accepted)");
  auto p = load_preprocessor_config(dir_ / "preprocessor_config.json", "qwen2_vl").value();
  EXPECT_EQ(p.min_pixels, 56 * 56);
  EXPECT_EQ(p.max_pixels, 28 * 28 * 1280);
  EXPECT_EQ(p.resize, ResizeVariant::kQwen2Vl);
  EXPECT_FLOAT_EQ(p.mean[0], 0.48145466f);
  testing::write_text(dir_ / "pre.json", R"({"size": {"shortest_edge": 12544, "longest_edge": 100000}, "do_normalize": false})");
  p = load_preprocessor_config(dir_ / "pre.json", "glm4v").value();
  EXPECT_EQ(p.resize, ResizeVariant::kGlm4v);
  EXPECT_EQ(p.min_pixels, 12544);
  EXPECT_EQ(p.max_pixels, 100000);
  EXPECT_EQ(p.mean, std::vector<float>(3, 0.0f));
  EXPECT_EQ(p.std, std::vector<float>(3, 1.0f));
}

TEST_F(PreprocessorConfig, ContradictionsAndBadValuesAreErrors) {
  EXPECT_NE(convert_with(R"({"patch_size": 16})").find("patch_size 16 disagrees with the weight's kernel (2,14,14)"),
            std::string::npos);
  EXPECT_NE(convert_with(R"({"temporal_patch_size": 1})").find("temporal_patch_size 1 disagrees"), std::string::npos);
  EXPECT_NE(convert_with(R"({"image_mean": [0.5, 0.5], "image_std": [0.5, 0.5]})").find("in_channels 3"), std::string::npos);
  EXPECT_NE(convert_with(R"({"image_mean": [0.5, 0.5, 0.5], "image_std": [1, 1]})").find("image_mean has 3 values but image_std has 2"),
            std::string::npos);
  // Seen by fuzz_preprocessor_config: patch_size * merge_size overflowed in smart_resize.
  EXPECT_NE(convert_with(R"({"merge_size": 1844674407370955161})").find("merge_size 1844674407370955161 and patch_size 14 must be at most 64 and 32768"),
            std::string::npos);
  EXPECT_NE(convert_with(R"({"merge_size": "two"})").find("merge_size must be a positive integer, got \"two\""), std::string::npos);
  EXPECT_NE(convert_with(R"({"image_std": [0.5, 0, 0.5]})").find("image_std[1] = 0"), std::string::npos);
  EXPECT_NE(convert_with("[1, 2]").find("preprocessor_config.json: not a JSON object"), std::string::npos);
  EXPECT_NE(convert_with(R"({"image_mean": [0.5, 1e39, 0.5]})").find("image_mean must hold finite numbers within float range, got 1e+39"),
            std::string::npos)
      << convert_with(R"({"image_mean": [0.5, 1e39, 0.5]})");
  EXPECT_NE(convert_with(R"({"rescale_factor": "1/255"})").find("rescale_factor must hold finite numbers within float range, got \"1/255\""),
            std::string::npos);
  EXPECT_NE(convert_with(R"({"min_pixels": 100, "max_pixels": 10})").find("min_pixels 100 exceeds max_pixels 10"),
            std::string::npos);
}

// video_preprocessor_config.json: the video processor's own defaults and keys; one normalization and
// patch shape for images and videos, so a disagreement is an error naming both files and values.
TEST_F(PreprocessorConfig, VideoProcessors) {
  Preprocessing image = load_preprocessor_config(kFixtures + "/qwen3_vl/preprocessor_config.json", "qwen3_vl").value();
  const std::string image_path = "pre.json";
  const auto video = [&](const std::string& text) {
    testing::write_text(dir_ / "video.json", text);
    return load_video_preprocessor_config(dir_ / "video.json", image, image_path);
  };
  VideoResize v = load_video_preprocessor_config(kFixtures + "/qwen3_vl/video_preprocessor_config.json", image,
                                                 image_path).value();
  EXPECT_EQ(v.variant, ResizeVariant::kGlm4v);
  EXPECT_EQ(v.min_pixels, 128 * 32 * 32);
  EXPECT_EQ(v.max_pixels, 32 * 32 * 768);
  EXPECT_FALSE(v.cap_pixels_per_frame);
  v = video(R"({"video_processor_type": "Qwen3VLVideoProcessor", "cap_pixels_per_frame": true,
                "size": {"shortest_edge": 4096, "longest_edge": 25165824}})").value();  // 0.5/0.5, P 16 by default
  EXPECT_TRUE(v.cap_pixels_per_frame);
  EXPECT_EQ(v.max_pixels, 25165824);
  EXPECT_FALSE(video(R"({"video_processor_type": "Qwen3VLVideoProcessor", "cap_pixels_per_frame": null})")->cap_pixels_per_frame);

  const auto error_of = [&](const std::string& text) {
    auto r = video(text);
    return r.ok() ? std::string("(accepted)") : r.error().message;
  };
  EXPECT_NE(error_of(R"({"video_processor_type": "Qwen3VLVideoProcessor", "image_mean": [0.4, 0.5, 0.5]})")
                .find("video.json: image_mean [0.4, 0.5, 0.5] disagrees with pre.json's [0.5, 0.5, 0.5]"),
            std::string::npos)
      << error_of(R"({"video_processor_type": "Qwen3VLVideoProcessor", "image_mean": [0.4, 0.5, 0.5]})");
  EXPECT_NE(error_of(R"({"video_processor_type": "Qwen3VLVideoProcessor", "merge_size": 1})")
                .find("merge_size 1 disagrees with pre.json's 2"),
            std::string::npos);
  // Qwen2VLVideoProcessor's defaults are CLIP's and P 14: they disagree with this Qwen3-VL image config.
  EXPECT_NE(error_of(R"({"video_processor_type": "Qwen2VLVideoProcessor"})").find("image_mean"), std::string::npos);
  EXPECT_NE(error_of(R"({"video_processor_type": "LlavaOnevisionVideoProcessor"})")
                .find("video_processor_type 'LlavaOnevisionVideoProcessor' is not one patchfuse reproduces"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"size": {"shortest_edge": 4096}})").find("video.json: video_processor_type is missing"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"video_processor_type": "Qwen3VLVideoProcessor", "min_pixels": 10, "max_pixels": 5})")
                .find("min_pixels 10 exceeds max_pixels 5"),
            std::string::npos);

  // Qwen2-VL: Qwen2VLVideoProcessor's bounds unless min_pixels / max_pixels are given.
  image = load_preprocessor_config(kFixtures + "/qwen2_vl/preprocessor_config.json", "qwen2_vl").value();
  v = video(R"({"video_processor_type": "Qwen2VLVideoProcessor"})").value();
  EXPECT_EQ(v.variant, ResizeVariant::kQwen2Vl);
  EXPECT_EQ(v.min_pixels, 128 * 28 * 28);
  EXPECT_EQ(v.max_pixels, 28 * 28 * 768);
  v = video(R"({"video_processor_type": "Qwen2VLVideoProcessor", "max_pixels": 200000, "cap_pixels_per_frame": true})").value();
  EXPECT_EQ(v.max_pixels, 200000);
  EXPECT_FALSE(v.cap_pixels_per_frame) << "only Qwen3VLVideoProcessor has the option";
}

// The converter finds video_preprocessor_config.json beside config.json (or --video-preprocessor)
// and stores the rule; without one, videos are sized like images.
TEST_F(PreprocessorConfig, ConverterStoresTheVideoRule) {
  const std::string src = kFixtures + "/qwen3_vl";
  for (const char* f : {"config.json", "model.safetensors", "preprocessor_config.json", "video_preprocessor_config.json"}) {
    testing::write_bytes(dir_ / f, testing::read_bytes(src + "/" + f));
  }
  ConvertOptions o;
  o.input = dir_.path();
  o.output = dir_ / "m.pfb";
  ASSERT_TRUE(convert_checkpoint(o).ok());
  const ModelFile model = open_model_file(o.output).value();
  const std::optional<VideoResize>& v = model.view.modules.at(0).preprocessing->video;
  ASSERT_TRUE(v.has_value());
  EXPECT_EQ(v->variant, ResizeVariant::kGlm4v);
  EXPECT_EQ(v->max_pixels, 32 * 32 * 768);

  std::filesystem::remove(dir_ / "video_preprocessor_config.json");
  ASSERT_TRUE(convert_checkpoint(o).ok());
  EXPECT_FALSE(open_model_file(o.output).value().view.modules.at(0).preprocessing->video.has_value());

  testing::write_text(dir_ / "elsewhere.json", R"({"video_processor_type": "Qwen3VLVideoProcessor", "patch_size": 14})");
  o.video_preprocessor = dir_ / "elsewhere.json";
  std::filesystem::remove(o.output);
  auto r = convert_checkpoint(o);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("elsewhere.json: patch_size 14 disagrees with"), std::string::npos) << r.error().message;
  EXPECT_FALSE(testing::file_exists(o.output));

  std::filesystem::remove(dir_ / "preprocessor_config.json");
  r = convert_checkpoint(o);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("--video-preprocessor " + o.video_preprocessor +
                                   ": the model has no smart_resize preprocessing for it to go with"),
            std::string::npos)
      << r.error().message;
}

// Fixed-size processors (Conv2d models): the centre crop when there is one, else size; mean and
// std must be given; a processor without one fixed size is kUnsupported, not an error.
TEST_F(PreprocessorConfig, FixedSizeProcessors) {
  testing::write_text(dir_ / "siglip.json",
                      R"({"image_processor_type": "SiglipImageProcessor", "image_mean": [0.5, 0.5, 0.5],
                          "image_std": [0.5, 0.5, 0.5], "size": {"height": 384, "width": 384}})");
  auto p = load_preprocessor_config(dir_ / "siglip.json", "siglip").value();
  EXPECT_EQ(p.resize, ResizeVariant::kFixed);
  EXPECT_EQ(p.fixed_height, 384);
  EXPECT_EQ(p.fixed_width, 384);
  EXPECT_EQ(p.temporal_patch_size, 1);
  EXPECT_EQ(p.merge_size, 1);
  EXPECT_EQ(p.patch_size, 0) << "left to the weight's kernel";
  EXPECT_EQ(resize_target(p, 1080, 1920).value(), std::make_pair(int64_t{384}, int64_t{384}));

  // CLIP: shortest_edge resize, then the crop decides.
  testing::write_text(dir_ / "clip.json",
                      R"({"image_processor_type": "CLIPImageProcessor", "image_mean": [0.1, 0.2, 0.3],
                          "image_std": [0.3, 0.2, 0.1], "size": {"shortest_edge": 336}, "do_center_crop": true,
                          "crop_size": {"height": 336, "width": 320}})");
  p = load_preprocessor_config(dir_ / "clip.json", "clip").value();
  EXPECT_EQ(std::make_pair(p.fixed_height, p.fixed_width), std::make_pair(int64_t{336}, int64_t{320}));
  EXPECT_EQ(p.shortest_edge, 336) << "the resize before the crop is kept";
  EXPECT_EQ(p.resample, Resample::kBicubic) << "CLIPImageProcessor's default";
  // A 480x640 photo: its short side to 336 (long side int(336 * 640 / 480) = 448), then the crop.
  const ResizeSpec clip = frame_resize_spec(p, 0, 480, 640).value();
  EXPECT_EQ(std::make_tuple(clip.resized_h, clip.resized_w, clip.top, clip.left, clip.out_h, clip.out_w),
            std::make_tuple(size_t{336}, size_t{448}, int64_t{0}, int64_t{64}, size_t{336}, size_t{320}));
  testing::write_text(dir_ / "vit.json", R"({"image_mean": [0.5, 0.5, 0.5], "image_std": [0.5, 0.5, 0.5], "size": 224})");
  p = load_preprocessor_config(dir_ / "vit.json", "vit").value();  // no type: the architecture's processor
  EXPECT_EQ(p.resize, ResizeVariant::kFixed);
  EXPECT_EQ(p.fixed_height, 224);
  EXPECT_EQ(p.resample, Resample::kBilinear) << "ViTImageProcessor's default";
  EXPECT_EQ(p.shortest_edge, 0);
  testing::write_text(dir_ / "lanczos.json", R"({"image_processor_type": "SiglipImageProcessor", "image_mean": [0.5, 0.5, 0.5],
                                                 "image_std": [0.5, 0.5, 0.5], "size": 224, "resample": 1})");
  EXPECT_EQ(load_preprocessor_config(dir_ / "lanczos.json", "siglip").value().resample, Resample::kLanczos);
  for (const char* bad : {R"("resample": 6)", R"("resample": "bicubic")", R"("do_center_crop": true)",
                          R"("size": {"shortest_edge": 224})"}) {
    testing::write_text(dir_ / "bad.json", std::string(R"({"image_processor_type": "CLIPImageProcessor", "image_mean": [0.5, 0.5, 0.5],
                                                            "image_std": [0.5, 0.5, 0.5], "size": 224, )") + bad + "}");
    const auto e = load_preprocessor_config(dir_ / "bad.json", "clip");
    ASSERT_FALSE(e.ok()) << bad;
    EXPECT_NE(e.error().message.find(dir_ / "bad.json"), std::string::npos) << e.error().message;
  }

  testing::write_text(dir_ / "pixtral.json",
                      R"({"image_processor_type": "PixtralImageProcessor", "image_mean": [0.5, 0.5, 0.5],
                          "image_std": [0.5, 0.5, 0.5], "size": {"longest_edge": 1024}})");
  auto r = load_preprocessor_config(dir_ / "pixtral.json", "pixtral");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, Code::kUnsupported);
  EXPECT_NE(r.error().message.find(R"(PixtralImageProcessor sizes images by {"longest_edge":1024}, not to one fixed size)"),
            std::string::npos)
      << r.error().message;
  testing::write_text(dir_ / "nomean.json", R"({"image_processor_type": "SiglipImageProcessor", "size": 224})");
  r = load_preprocessor_config(dir_ / "nomean.json", "siglip");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, Code::kInvalidModel);
  EXPECT_NE(r.error().message.find("image_mean is missing; SiglipImageProcessor has no default"), std::string::npos);

  // The rule: merge and temporal sizes 1, a size of at least one patch.
  const ConvGeometry g = testing::conv2d_geometry(14, 14, 3, 8);
  p = load_preprocessor_config(dir_ / "siglip.json", "siglip").value();
  p.patch_size = 14;
  EXPECT_TRUE(check_preprocessing(p, g, "m").ok());
  p.fixed_width = 10;
  EXPECT_NE(check_preprocessing(p, g, "m").error().message.find("size 384x10 must be at least one patch (14)"),
            std::string::npos);
}

// A fixed-size model's grid is nn.Conv2d's: whole patches only, one image per frame.
TEST(Preprocessing, FixedGridDropsPartialPatches) {
  Preprocessing p;
  p.resize = ResizeVariant::kFixed;
  p.patch_size = 14;
  p.temporal_patch_size = p.merge_size = 1;
  p.fixed_height = p.fixed_width = 384;
  const FrameGrid g = frame_grid(p, 2, 384, 390).value();
  EXPECT_EQ(g.t, 2);
  EXPECT_EQ(g.h, 27);
  EXPECT_EQ(g.w, 27);
  auto small = frame_grid(p, 1, 13, 100);
  ASSERT_FALSE(small.ok());
  EXPECT_NE(small.error().message.find("size 13x100 (height x width) is smaller than one patch (14); Hugging Face "
                                       "resizes this image to 384x384"),
            std::string::npos)
      << small.error().message;
}

}  // namespace
}  // namespace patchfuse
