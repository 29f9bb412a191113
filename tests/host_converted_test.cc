// A model converted at build time by patchfuse_convert() (cmake/PatchfuseConvert.cmake) with the
// host's patchfuse-convert, run by this build's runtime: in a cross build, the ARM runtime on a
// model from the x86 converter. Compared with PyTorch's Conv3d output for the same fixture.
#include <gtest/gtest.h>

#include <cmath>

#include "patchfuse/patchfuse.hpp"
#include "tests/support/tolerance.h"
#include "cli/npy.h"

namespace patchfuse {
namespace {

TEST(HostConvertedModel, EveryBackendAndPathMatchesPytorch) {
  auto model = Model::open_file(PATCHFUSE_HOST_MODEL);
  ASSERT_TRUE(model) << model.error();
  auto x = read_npy(std::string(PATCHFUSE_GOLDEN_CASE) + "/input.npy");
  auto expected = read_npy(std::string(PATCHFUSE_GOLDEN_CASE) + "/expected.npy");
  ASSERT_TRUE(x.ok() && expected.ok());
  const std::vector<double> want = expected->to_double();
  double max_ref = 0;
  for (double w : want) max_ref = std::max(max_ref, std::fabs(w));
  int ran = 0;
  for (pf_backend b : {PF_BACKEND_REFERENCE, PF_BACKEND_ONEDNN, PF_BACKEND_XNNPACK}) {
    if (!pf_backend_available(b)) continue;
    for (pf_path path : {PF_PATH_FUSED, PF_PATH_UNFUSED}) {
      pf_session_options o = default_options();
      o.backend = b;
      o.path = path;
      o.precision = PF_PRECISION_F32;
      auto s = Session::create(*model, 0, o);
      ASSERT_TRUE(s) << s.error();
      std::vector<float> y(want.size());
      ASSERT_EQ(s->run(reinterpret_cast<const float*>(x->bytes.data()), static_cast<size_t>(x->shape[0]), y.data()), "");
      double max_err = 0;
      for (size_t i = 0; i < y.size(); ++i) max_err = std::max(max_err, std::fabs(y[i] - want[i]));
      EXPECT_LE(max_err, testing::max_relative_tolerance(PF_PRECISION_F32) * max_ref) << pf_backend_name(b) << (path == PF_PATH_FUSED ? " fused" : " unfused");
      ++ran;
    }
  }
  EXPECT_GE(ran, 2);
}

}  // namespace
}  // namespace patchfuse
