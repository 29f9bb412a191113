// The encoder input against PyTorch: each fixture of tests/fixtures/encoder_input (a model type's
// embedding module re-implemented from transformers' source in float64) is converted with the
// converter library and run through the C API with PF_OUTPUT_ENCODER_INPUT on every backend,
// path and precision this build and CPU offer: pixel_values rows with their grid
// (pf_session_run_grid), uint8 frames (pf_session_run_frames, int8 included). Then the errors:
// a checkpoint without the tensors, refused model types, grids the model refuses, a run without
// a grid, a model converted before the steps were stored.
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <functional>
#include <nlohmann/json.hpp>

#include "cli/npy.h"
#include "converter/convert.h"
#include "converter/sample_checkpoint.h"
#include "patchfuse/patchfuse.hpp"
#include "tests/support/convert_fixture.h"
#include "tests/support/model_builder.h"
#include "tests/support/test_util.h"
#include "tests/support/tolerance.h"

namespace patchfuse {
namespace {

std::string fixture(const std::string& name) { return std::string(PATCHFUSE_ENCODER_INPUT_DIR) + "/" + name; }

// The bound for f32: max |y - torch| within 1e-5 of max |torch| (observed below 1e-6:
// the conv in f32, the terms in double rounded once). Other precisions: tolerance.h's bounds.
double bound(pf_precision p) { return p == PF_PRECISION_F32 ? 1e-5 : testing::max_relative_tolerance(p); }

::testing::AssertionResult close_to(const std::vector<float>& y, const std::vector<double>& want, pf_precision p) {
  if (y.size() != want.size()) return ::testing::AssertionFailure() << y.size() << " values against " << want.size();
  const testing::OutputError e = testing::output_error(y, want);
  if (e.max_ref > 0 && e.max_err <= bound(p) * e.max_ref) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "max |err| " << e.max_err << " = " << e.relative() << " of max |ref| "
                                       << e.max_ref << ", above the bound " << bound(p);
}


pf_session_options encoder_options(pf_backend b = PF_BACKEND_REFERENCE) {
  pf_session_options o = default_options();
  o.backend = b;
  o.output_stage = PF_OUTPUT_ENCODER_INPUT;
  return o;
}

std::string precision_name_of(pf_precision p) {
  switch (p) {
    case PF_PRECISION_F32: return "f32";
    case PF_PRECISION_BF16: return "bf16";
    case PF_PRECISION_F16: return "f16";
    case PF_PRECISION_INT8: return "int8";
    case PF_PRECISION_AUTO: return "auto";
  }
  return "?";
}

// Runs `run` on every backend x path x precision x threads this build and CPU offer with the
// encoder-input stage; returns how many sessions ran.
int on_every_session(const Model& model, const std::vector<pf_precision>& precisions, const std::vector<double>& want,
                     const std::function<void(Session&, std::vector<float>&)>& run) {
  int ran = 0;
  for (pf_backend b : {PF_BACKEND_REFERENCE, PF_BACKEND_ONEDNN, PF_BACKEND_XNNPACK, PF_BACKEND_GEMMLOWP}) {
    for (pf_path path : {PF_PATH_FUSED, PF_PATH_UNFUSED}) {
      for (pf_precision p : precisions) {
        for (int threads : {1, 2}) {
          pf_session_options o = encoder_options(b);
          o.path = path;
          o.precision = p;
          o.threads = threads;
          auto s = Session::create(model, 0, o);
          if (!s) {
            EXPECT_EQ(s.status(), PF_UNSUPPORTED) << s.error();
            continue;
          }
          const pf_session_info info = s->info();
          EXPECT_EQ(info.output_stage, PF_OUTPUT_ENCODER_INPUT);
          SCOPED_TRACE(std::string(pf_backend_name(b)) + " " + info.detail + " " + precision_name_of(info.precision) +
                       " threads " + std::to_string(threads));
          std::vector<float> y(want.size(), -12345.0f);  // every value must be written
          run(*s, y);
          EXPECT_TRUE(close_to(y, want, info.precision));
          ++ran;
        }
      }
    }
  }
  return ran;
}

class EncoderInput : public ::testing::TestWithParam<const char*> {};

TEST_P(EncoderInput, EveryBackendPathAndPrecisionMatchesPytorch) {
  const std::string dir = fixture(GetParam());
  testing::TempDir tmp;
  const Model model = testing::convert_fixture_dir(dir, tmp / "m.pfb");
  const pf_module_info info = model.module(0);
  ASSERT_NE(info.encoder_input, nullptr);
  nlohmann::json cases;
  std::ifstream(dir + "/cases.json") >> cases;
  for (const auto& c : cases) {
    const std::string name = c["name"];
    SCOPED_TRACE(name);
    const pf_grid grid{c["grid"][0], c["grid"][1], c["grid"][2]};
    auto want_npy = read_npy(dir + "/expected_" + name + ".npy");
    ASSERT_TRUE(want_npy.ok());
    const std::vector<double> want = want_npy->to_double();
    {  // the output's size: class rows included
      auto s = Session::create(model, 0, encoder_options());
      ASSERT_TRUE(s) << s.error();
      auto rows = s->output_rows(grid);
      ASSERT_TRUE(rows) << rows.error();
      EXPECT_EQ(*rows, grid.t * (info.class_rows + grid.h * grid.w));
      EXPECT_EQ(static_cast<size_t>(*rows * info.embed_dim), want.size());
    }
    if (c.contains("rows")) {
      auto x = read_npy(dir + "/" + c["rows"].get<std::string>());
      ASSERT_TRUE(x.ok());
      const auto* input = reinterpret_cast<const float*>(x->bytes.data());
      const int ran = on_every_session(model, {PF_PRECISION_F32, PF_PRECISION_BF16, PF_PRECISION_F16}, want,
                                       [&](Session& s, std::vector<float>& y) { ASSERT_EQ(s.run_grid(input, grid, y.data()), ""); });
      EXPECT_GE(ran, 4) << "reference fused/unfused at 1 and 2 threads must always run";
    } else {
      auto frames = read_npy(dir + "/" + c["frames"].get<std::string>());
      ASSERT_TRUE(frames.ok());
      ASSERT_EQ(frames->descr, "|u1");
      const auto t = static_cast<size_t>(frames->shape[0]), h = static_cast<size_t>(frames->shape[1]),
                 w = static_cast<size_t>(frames->shape[2]);
      std::vector<const uint8_t*> ptrs;
      for (size_t f = 0; f < t; ++f) ptrs.push_back(frames->bytes.data() + f * h * w * 3);
      const int ran = on_every_session(model, {PF_PRECISION_F32, PF_PRECISION_BF16, PF_PRECISION_F16, PF_PRECISION_INT8},
                                       want, [&](Session& s, std::vector<float>& y) {
                                         pf_grid got{};
                                         ASSERT_EQ(s.run_frames(ptrs.data(), t, h, w, w * 3, y.data(), &got), "");
                                         EXPECT_EQ(got.t, grid.t);
                                         EXPECT_EQ(got.h, grid.h);
                                         EXPECT_EQ(got.w, grid.w);
                                       });
      EXPECT_GE(ran, 4);
    }
    if (c.contains("window_index")) {
      auto s = Session::create(model, 0, encoder_options());
      ASSERT_TRUE(s);
      auto order = s->window_order(grid);
      ASSERT_TRUE(order) << order.error();
      EXPECT_EQ(order->window_index, c["window_index"].get<std::vector<int64_t>>());
      EXPECT_EQ(order->cu_window_seqlens, c["cu_window_seqlens"].get<std::vector<int64_t>>());
      for (size_t k = 0; k < order->window_index.size(); ++k) {
        EXPECT_EQ(order->reverse_index[static_cast<size_t>(order->window_index[k])], static_cast<int64_t>(k));
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(PytorchFixtures, EncoderInput,
                         ::testing::Values("qwen2_5_vl", "qwen3_vl", "qwen3_vl_bf16", "glm4v", "siglip", "clip", "dinov2",
                                           "pixtral"));

// Grid terms are cached per grid: grids of one height and of others, seen again, each give
// PyTorch's rows (a cache keyed on less than the whole grid would hand 4x4 the terms of 4x6), and
// the patches stage of the same model is the conv alone.
TEST(EncoderInputCache, GridsSeenAgainGiveTheirOwnRows) {
  const std::string dir = fixture("qwen3_vl");
  testing::TempDir tmp;
  const Model model = testing::convert_fixture_dir(dir, tmp / "m.pfb");
  auto s = Session::create(model, 0, encoder_options());
  ASSERT_TRUE(s);
  const std::map<std::string, pf_grid> grids = {{"smaller", {1, 4, 6}}, {"t3", {3, 4, 4}}, {"larger", {1, 16, 12}}};
  for (const char* name : {"smaller", "t3", "larger", "smaller", "t3", "larger"}) {
    SCOPED_TRACE(name);
    auto x = read_npy(dir + "/rows_" + name + ".npy");
    auto want = read_npy(dir + "/expected_" + name + ".npy");
    ASSERT_TRUE(x.ok() && want.ok());
    std::vector<float> y(want->to_double().size());
    ASSERT_EQ(s->run_grid(reinterpret_cast<const float*>(x->bytes.data()), grids.at(name), y.data()), "");
    EXPECT_TRUE(close_to(y, want->to_double(), PF_PRECISION_F32));
    auto patches = Session::create(model, 0, default_options());
    ASSERT_TRUE(patches);
    std::vector<float> conv(static_cast<size_t>(x->shape[0]) * 20);
    ASSERT_EQ(patches->run(reinterpret_cast<const float*>(x->bytes.data()), static_cast<size_t>(x->shape[0]), conv.data()), "");
    EXPECT_FALSE(close_to(conv, want->to_double(), PF_PRECISION_F32)) << "the patches stage adds no position term";
  }
}

// A checkpoint without a step's tensor converts; the session names it when asked for the encoder input.
TEST(EncoderInputErrors, AMissingTensorIsNamedBySessionCreate) {
  testing::TempDir tmp;
  const Model model = testing::convert_fixture_dir(std::string(PATCHFUSE_GOLDEN_DIR) + "/qwen3_vl_bias_f32", tmp / "m.pfb");
  EXPECT_NE(std::string(model.module(0).encoder_input).find("missing from the checkpoint: model.visual.pos_embed.weight"),
            std::string::npos)
      << model.module(0).encoder_input;
  auto s = Session::create(model, 0, encoder_options());
  ASSERT_FALSE(s);
  EXPECT_EQ(s.status(), PF_UNSUPPORTED);
  EXPECT_NE(s.error().find("the checkpoint had no model.visual.pos_embed.weight"), std::string::npos) << s.error();
  EXPECT_TRUE(Session::create(model, 0, default_options())) << "the patches stage needs none of it";
}

// Model types whose encoder input is not computed say why, at session creation.
TEST(EncoderInputErrors, RefusedModelTypesSayWhy) {
  for (const auto& [type, why] : {std::pair{"mllama", "aspect-ratio id"}, std::pair{"idefics3", "bucketized"},
                                  std::pair{"smolvlm", "bucketized"}, std::pair{"phi4_multimodal", "bucketized"}}) {
    SCOPED_TRACE(type);
    testing::TempDir tmp;
    SampleSpec spec;
    spec.arch = find_architecture(type);
    spec.embed_dim = 16;
    ASSERT_TRUE(write_sample_checkpoint(tmp / "ckpt", spec).ok());
    const Model model = testing::convert_fixture_dir(tmp / "ckpt", tmp / "m.pfb");
    auto s = Session::create(model, 0, encoder_options());
    ASSERT_FALSE(s);
    EXPECT_EQ(s.status(), PF_UNSUPPORTED);
    EXPECT_NE(s.error().find(why), std::string::npos) << s.error();
  }
}

TEST(EncoderInputErrors, GridsTheModelRefusesAndRunsWithoutAGrid) {
  testing::TempDir tmp;
  const Model model = testing::convert_fixture_dir(fixture("qwen3_vl"), tmp / "m.pfb");
  auto s = Session::create(model, 0, encoder_options());
  ASSERT_TRUE(s);
  std::vector<float> x(5 * 8 * 96), y(5 * 8 * 20);
  // h = 5 is not a whole number of 2x2 merge blocks.
  EXPECT_NE(s->run_grid(x.data(), pf_grid{1, 5, 8}, y.data()).find("grid 1x5x8: h and w must be multiples of the merge size 2"),
            std::string::npos);
  EXPECT_EQ(s->output_rows(pf_grid{1, 5, 8}).status(), PF_INVALID_ARGUMENT);
  EXPECT_EQ(s->output_rows(pf_grid{0, 4, 4}).status(), PF_INVALID_ARGUMENT);
  EXPECT_NE(s->run(x.data(), 40, y.data()).find("needs the rows' grid"), std::string::npos);
  EXPECT_EQ(pf_session_run_grid(s->get(), x.data(), nullptr, y.data()), PF_INVALID_ARGUMENT);
  // Qwen3-VL has no window attention.
  EXPECT_EQ(s->window_order(pf_grid{1, 4, 4}).status(), PF_UNSUPPORTED);
  size_t groups = 0, bounds = 0;
  EXPECT_EQ(pf_session_window_index(s->get(), nullptr, nullptr, nullptr, 0, nullptr, 0, &groups, &bounds), PF_INVALID_ARGUMENT);
  // An unknown stage value.
  pf_session_options o = encoder_options();
  o.output_stage = static_cast<pf_output_stage>(7);
  pf_session* raw = nullptr;
  EXPECT_EQ(pf_session_create(model.get(), 0, &o, &raw), PF_INVALID_ARGUMENT);
  EXPECT_NE(std::string(pf_last_error()).find("output_stage value 7"), std::string::npos);
}

TEST(EncoderInputErrors, WindowIndexCapacityTooSmallStillGivesTheCounts) {
  testing::TempDir tmp;
  const Model model = testing::convert_fixture_dir(fixture("qwen2_5_vl"), tmp / "m.pfb");
  auto s = Session::create(model, 0, default_options());  // any stage answers
  ASSERT_TRUE(s);
  std::vector<int64_t> index(3), cu(3);
  size_t groups = 0, bounds = 0;
  const pf_grid grid{1, 12, 20};
  EXPECT_EQ(pf_session_window_index(s->get(), &grid, index.data(), nullptr, index.size(), cu.data(), cu.size(), &groups,
                                    &bounds),
            PF_INVALID_ARGUMENT);
  EXPECT_EQ(groups, 60u);
  EXPECT_EQ(bounds, 7u);  // 2 x 3 windows of up to 4 x 4 groups, plus the leading 0
  // Each side is allowed, their product is past the bound: refused by rule, not by failing to
  // allocate 2^39 indexes twice.
  const auto huge = s->window_order(pf_grid{1 << 20, 1 << 20, 2});
  EXPECT_NE(huge.error().find("window order: grid 1048576x1048576x2 is more than 2^32 patches"), std::string::npos)
      << huge.error();
}

// A .pfb written without the encoder_input table (as before it existed) loads, runs patches and
// says why it cannot give the encoder input.
TEST(EncoderInputErrors, OlderModelsKeepPatchesOnly) {
  testing::TempDir tmp;
  testing::TestModule spec;
  spec.embed_dim = 24;
  const std::vector<uint8_t> bytes = testing::make_model(spec, 7);
  auto model = Model::open_memory(bytes.data(), bytes.size());
  ASSERT_TRUE(model) << model.error();
  EXPECT_EQ(model->module(0).encoder_input, nullptr);
  auto s = Session::create(*model, 0, encoder_options());
  ASSERT_FALSE(s);
  EXPECT_NE(s.error().find("stores no encoder input steps"), std::string::npos) << s.error();
  EXPECT_TRUE(Session::create(*model, 0, default_options()));
}

}  // namespace
}  // namespace patchfuse
