// The runtime against PyTorch: each golden fixture (tests/fixtures/golden, nn.Conv3d outputs) is
// converted with the converter library and run through the C API on every backend, path and
// precision this build and CPU offer.
#include <gtest/gtest.h>

#include <cmath>

#include "converter/convert.h"
#include "patchfuse/patchfuse.hpp"
#include "tests/support/test_util.h"
#include "tests/support/tolerance.h"
#include "cli/npy.h"

namespace patchfuse {
namespace {

class RuntimeGolden : public ::testing::TestWithParam<const char*> {};

TEST_P(RuntimeGolden, EveryBackendAndPathMatchesPytorchConv3d) {
  const std::string dir = std::string(PATCHFUSE_GOLDEN_DIR) + "/" + GetParam();
  testing::TempDir tmp;
  for (const char* fusion : {"true", "false"}) {  // fused model, and original layout fused at load
    ConvertOptions o;
    o.input = dir;
    o.output = tmp / (std::string(fusion) + ".pfb");
    FusionValue v;
    v.enabled = std::string(fusion) == "true";
    o.fusion = {{"patch_embeddings", v}};
    ASSERT_TRUE(convert_checkpoint(o).ok());
    auto model = Model::open_file(o.output);
    ASSERT_TRUE(model) << model.error();
    auto x = read_npy(dir + "/input.npy");
    auto expected = read_npy(dir + "/expected.npy");
    ASSERT_TRUE(x.ok() && expected.ok());
    const std::vector<double> want = expected->to_double();
    double max_ref = 0;
    for (double w : want) max_ref = std::max(max_ref, std::fabs(w));
    const size_t n = static_cast<size_t>(x->shape[0]);
    int ran = 0;
    for (pf_backend b : {PF_BACKEND_REFERENCE, PF_BACKEND_ONEDNN, PF_BACKEND_XNNPACK}) {
      for (pf_path path : {PF_PATH_FUSED, PF_PATH_UNFUSED}) {
        for (pf_precision p : {PF_PRECISION_AUTO, PF_PRECISION_F32, PF_PRECISION_BF16, PF_PRECISION_F16}) {
          pf_session_options opts = default_options();
          opts.backend = b;
          opts.path = path;
          opts.precision = p;
          auto s = Session::create(*model, 0, opts);
          if (!s) {
            EXPECT_EQ(s.status(), PF_UNSUPPORTED) << s.error();
            continue;
          }
          const pf_session_info info = s->info();
          SCOPED_TRACE(std::string(fusion) + " " + pf_backend_name(b) + " " + info.detail);
          std::vector<float> y(want.size());
          ASSERT_EQ(s->run(reinterpret_cast<const float*>(x->bytes.data()), n, y.data()), "");
          double max_err = 0;
          for (size_t i = 0; i < y.size(); ++i) max_err = std::max(max_err, std::fabs(y[i] - want[i]));
          EXPECT_LE(max_err, testing::max_relative_tolerance(info.precision) * max_ref) << "max |err| " << max_err << " max |ref| " << max_ref;
          ++ran;
        }
      }
    }
    EXPECT_GE(ran, 4) << "reference fused/unfused must always run";
  }
}

INSTANTIATE_TEST_SUITE_P(PytorchFixtures, RuntimeGolden,
                         ::testing::Values("qwen2_vl_f32", "qwen3_vl_bias_f32", "qwen3_omni_moe_bias_bf16"));

}  // namespace
}  // namespace patchfuse
