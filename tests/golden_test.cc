// PyTorch golden fixtures (tests/fixtures/golden, made by make_golden.py with nn.Conv3d and
// nn.Conv2d): the converted model's fused weight, applied as a plain matrix product in double, must
// reproduce PyTorch's conv output. This pins the flattening order (C, (t,) h, w, no permutation)
// against PyTorch rather than against our own code.
#include <gtest/gtest.h>

#include <cmath>

#include "converter/convert.h"
#include "runtime/model/model_file.h"
#include "tests/support/test_util.h"
#include "cli/npy.h"

namespace patchfuse {
namespace {

const char* const kCases[] = {"qwen2_vl_f32",          "qwen3_vl_bias_f32",    "qwen3_omni_moe_bias_bf16",
                              "siglip_so400m_bias_bf16", "siglip_p16_bias_bf16", "clip_l14_nobias_f16",
                              "vit_pair_bias_f32"};

class Golden : public ::testing::TestWithParam<const char*> {};

TEST_P(Golden, FusedLinearInDoubleMatchesPytorchConv) {
  const std::string dir = std::string(PATCHFUSE_GOLDEN_DIR) + "/" + GetParam();
  testing::TempDir tmp;
  ConvertOptions o;
  o.input = dir;
  o.output = tmp / "m.pfb";
  o.fusion = {{"conv2d_patch_embeddings", FusionValue{}}};  // the Conv2d cases' family (a FusionValue is `true`)
  auto report = convert_checkpoint(o);
  ASSERT_TRUE(report.ok()) << report.error().message;
  auto model = open_model_file(o.output);
  ASSERT_TRUE(model.ok()) << model.error().message;
  const ModuleView& m = model->view.modules.at(0);
  ASSERT_EQ(m.layout, Layout::kFusedLinear);

  auto x = read_npy(dir + "/input.npy");
  auto expected = read_npy(dir + "/expected.npy");
  ASSERT_TRUE(x.ok() && expected.ok());
  const int64_t n = x->shape.at(0), k = m.patch_volume, out = m.geometry.embed_dim;
  ASSERT_EQ(x->shape, (std::vector<int64_t>{n, k}));
  ASSERT_EQ(expected->shape, (std::vector<int64_t>{n, out}));
  const std::vector<double> xs = x->to_double(), want = expected->to_double();

  double max_ref = 0, max_err = 0;
  size_t nonzero = 0;
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t o_ = 0; o_ < out; ++o_) {
      double acc = m.bias ? load_as_f32(m.bias->data, m.dtype, static_cast<size_t>(o_)) : 0.0;
      for (int64_t j = 0; j < k; ++j) {
        acc += xs[static_cast<size_t>(i * k + j)] * load_as_f32(m.weight.data, m.dtype, static_cast<size_t>(o_ * k + j));
      }
      const double ref = want[static_cast<size_t>(i * out + o_)];
      max_ref = std::max(max_ref, std::fabs(ref));
      max_err = std::max(max_err, std::fabs(acc - ref));
      nonzero += ref != 0.0;
    }
  }
  // Both sides compute in double from the same stored values; only the summation order differs,
  // so the error is at double rounding level: 1e-12 of the output's magnitude is ample.
  EXPECT_LE(max_err, 1e-12 * max_ref) << GetParam() << " max_err " << max_err << " max|ref| " << max_ref;
  EXPECT_GT(nonzero, static_cast<size_t>(n * out * 9 / 10)) << "reference is mostly zeros: comparison mistrusted";
}

INSTANTIATE_TEST_SUITE_P(PytorchFixtures, Golden, ::testing::ValuesIn(kCases));

}  // namespace
}  // namespace patchfuse
