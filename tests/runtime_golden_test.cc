// The runtime against PyTorch: each golden fixture (tests/fixtures/golden, nn.Conv3d and nn.Conv2d
// outputs) is converted with the converter library and run through the C API on every backend,
// path and precision this build and CPU offer; Conv2d fixtures also through the frames API on their
// uint8 image; and one checkpoint holding both families' modules.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>

#include "cli/npy.h"
#include "converter/convert.h"
#include "patchfuse/patchfuse.hpp"
#include "tests/support/test_util.h"
#include "tests/support/tolerance.h"

namespace patchfuse {
namespace {

std::string fixture(const std::string& name) { return std::string(PATCHFUSE_GOLDEN_DIR) + "/" + name; }

// Converts `dir` with every family set to `fused`, or in the given family order.
Model convert(const std::string& dir, const std::string& out, bool fused,
              const std::vector<std::string>& families = {"patch_embeddings", "conv2d_patch_embeddings"}) {
  ConvertOptions o;
  o.input = dir;
  o.output = out;
  FusionValue v;
  v.enabled = fused;
  for (const std::string& f : families) o.fusion.push_back({f, v});
  auto r = convert_checkpoint(o);
  EXPECT_TRUE(r.ok()) << r.error().message;
  auto model = Model::open_file(out);
  EXPECT_TRUE(model) << model.error();
  return std::move(*model);
}

std::vector<double> load(const std::string& path) {
  auto a = read_npy(path);
  EXPECT_TRUE(a.ok()) << path;
  return a.ok() ? a->to_double() : std::vector<double>();
}

// Runs `run` on a session for every backend x path x precision (x threads) this build and CPU
// offer and checks its output against `want` at the bound of the precision the session reports.
// Returns how many sessions ran.
int on_every_session(const Model& model, size_t module, const std::vector<double>& want, std::initializer_list<int> threads,
                     const std::function<void(Session&, std::vector<float>&)>& run) {
  int ran = 0;
  for (pf_backend b : {PF_BACKEND_REFERENCE, PF_BACKEND_ONEDNN, PF_BACKEND_XNNPACK}) {
    for (pf_path path : {PF_PATH_FUSED, PF_PATH_UNFUSED}) {
      for (pf_precision p : {PF_PRECISION_AUTO, PF_PRECISION_F32, PF_PRECISION_BF16, PF_PRECISION_F16}) {
        for (int t : threads) {
          pf_session_options opts = default_options();
          opts.backend = b;
          opts.path = path;
          opts.precision = p;
          opts.threads = t;
          auto s = Session::create(model, module, opts);
          if (!s) {
            EXPECT_EQ(s.status(), PF_UNSUPPORTED) << s.error();
            continue;
          }
          const pf_session_info info = s->info();
          SCOPED_TRACE(std::string(pf_backend_name(b)) + " " + info.detail + " threads " + std::to_string(t));
          std::vector<float> y(want.size());
          run(*s, y);
          EXPECT_TRUE(testing::within_bound(y, want, info.precision));
          ++ran;
        }
      }
    }
  }
  return ran;
}

class RuntimeGolden : public ::testing::TestWithParam<const char*> {};

TEST_P(RuntimeGolden, EveryBackendAndPathMatchesPytorch) {
  const std::string dir = fixture(GetParam());
  testing::TempDir tmp;
  for (bool fused : {true, false}) {  // fused model, and original layout fused at load
    SCOPED_TRACE(fused ? "fused model" : "original-layout model");
    const Model model = convert(dir, tmp / "m.pfb", fused);
    auto x = read_npy(dir + "/input.npy");
    ASSERT_TRUE(x.ok());
    const std::vector<double> want = load(dir + "/expected.npy");
    const size_t n = static_cast<size_t>(x->shape[0]);
    const int ran = on_every_session(model, 0, want, {1}, [&](Session& s, std::vector<float>& y) {
      ASSERT_EQ(s.run(reinterpret_cast<const float*>(x->bytes.data()), n, y.data()), "");
    });
    EXPECT_GE(ran, 4) << "reference fused/unfused must always run";
  }
}

INSTANTIATE_TEST_SUITE_P(PytorchFixtures, RuntimeGolden,
                         ::testing::Values("qwen2_vl_f32", "qwen3_vl_bias_f32", "qwen3_omni_moe_bias_bf16",
                                           "siglip_so400m_bias_bf16", "siglip_p16_bias_bf16", "clip_l14_nobias_f16",
                                           "vit_pair_bias_f32"));

// The Conv2d fixtures' uint8 image through the frames API: normalization folded into the weights,
// patches in raster order, pixels past the last whole patch dropped (58 x 44 at P 14), against
// PyTorch's Conv2d on the processor's pixel_values; on 1 and 2 threads.
class RuntimeGoldenFrames : public ::testing::TestWithParam<const char*> {};

TEST_P(RuntimeGoldenFrames, EveryBackendMatchesPytorchConv2dOnTheImage) {
  const std::string dir = fixture(GetParam());
  testing::TempDir tmp;
  const Model model = convert(dir, tmp / "m.pfb", true);
  ASSERT_EQ(model.module(0).has_preprocessing, 1);
  auto image = read_npy(dir + "/image.npy");
  ASSERT_TRUE(image.ok());
  ASSERT_EQ(image->descr, "|u1");
  const size_t h = static_cast<size_t>(image->shape[0]), w = static_cast<size_t>(image->shape[1]);
  const uint8_t* frame = image->bytes.data();
  const std::vector<double> want = load(dir + "/expected.npy");
  // The processor's size is the image's: pf_model_frame_size gives it for any input size.
  int64_t th = 0, tw = 0;
  ASSERT_EQ(pf_model_frame_size(model.get(), 0, 1000, 3000, &th, &tw), PF_OK);
  EXPECT_EQ(th, static_cast<int64_t>(h));
  EXPECT_EQ(tw, static_cast<int64_t>(w));
  const int ran = on_every_session(model, 0, want, {1, 2}, [&](Session& s, std::vector<float>& y) {
    pf_grid grid{};
    ASSERT_EQ(s.run_frames(&frame, 1, h, w, w * 3, y.data(), &grid), "");
    const int64_t p = model.module(0).kernel[0];
    EXPECT_EQ(grid.t, 1);
    EXPECT_EQ(grid.h, static_cast<int64_t>(h) / p);
    EXPECT_EQ(grid.w, static_cast<int64_t>(w) / p);
  });
  EXPECT_GE(ran, 8);
}

INSTANTIATE_TEST_SUITE_P(PytorchFixtures, RuntimeGoldenFrames,
                         ::testing::Values("siglip_so400m_bias_bf16", "siglip_p16_bias_bf16", "clip_l14_nobias_f16"));

// Frames need square patches: the ViT fixture's (16, 8) kernel converts with a note and takes
// pixel_values only, saying why.
TEST(RuntimeGoldenFrames, NonSquarePatchesTakePixelValuesOnly) {
  testing::TempDir tmp;
  ConvertOptions o;
  o.input = fixture("vit_pair_bias_f32");
  o.output = tmp / "m.pfb";
  o.fusion = {{"conv2d_patch_embeddings", FusionValue{}}};
  auto r = convert_checkpoint(o);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_TRUE(testing::has_note(r->notes, "kernel (16,8) is not square"));
  auto model = Model::open_file(o.output);
  ASSERT_TRUE(model) << model.error();
  EXPECT_EQ(model->module(0).has_preprocessing, 0);
}

// One checkpoint holding a Conv3d and a Conv2d patch embedding: both families convert in the
// user's order (the .pfb's modules and fusion config follow it) and each module matches PyTorch.
TEST(RuntimeGoldenTwoFamilies, BothFamiliesInUserOrder) {
  const std::string dir = fixture("two_families");
  testing::TempDir tmp;
  const std::string conv3d = "visual.patch_embed", conv2d = "vision_model.embeddings.patch_embedding";
  for (const auto& order : {std::vector<std::string>{"conv2d_patch_embeddings", "patch_embeddings"},
                            std::vector<std::string>{"patch_embeddings", "conv2d_patch_embeddings"}}) {
    SCOPED_TRACE(order[0] + " first");
    const Model model = convert(dir, tmp / "m.pfb", true, order);
    ASSERT_EQ(model.module_count(), 2u);
    const bool conv2d_first = order[0] == "conv2d_patch_embeddings";
    EXPECT_EQ(std::string(model.module(0).path), conv2d_first ? conv2d : conv3d);
    EXPECT_EQ(std::string(model.module(1).path), conv2d_first ? conv3d : conv2d);
    for (size_t m = 0; m < 2; ++m) {
      const pf_module_info info = model.module(m);
      const std::string kind = info.spatial_rank == 2 ? "conv2d" : "conv3d";
      EXPECT_EQ(std::string(info.family), info.spatial_rank == 2 ? "conv2d_patch_embeddings" : "patch_embeddings");
      auto x = read_npy(dir + "/input_" + kind + ".npy");
      ASSERT_TRUE(x.ok());
      const std::vector<double> want = load(dir + "/expected_" + kind + ".npy");
      const int ran = on_every_session(model, m, want, {1}, [&](Session& s, std::vector<float>& y) {
        ASSERT_EQ(s.run(reinterpret_cast<const float*>(x->bytes.data()), static_cast<size_t>(x->shape[0]), y.data()), "");
      });
      EXPECT_GE(ran, 4);
    }
  }
}

}  // namespace
}  // namespace patchfuse
