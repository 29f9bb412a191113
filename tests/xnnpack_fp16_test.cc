// XNNPACK f16 on ARM runs where the CPU has ARMv8.2 FP16 arithmetic and is refused with a clear
// message where it does not. ctest runs this twice under qemu with QEMU_CPU set (max: has FP16;
// cortex-a53: ARMv8.0, has not) and PATCHFUSE_EXPECT_FP16 saying which outcome is right.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>

#include "patchfuse/patchfuse.hpp"
#include "tests/support/model_builder.h"

namespace patchfuse {
namespace {

TEST(XnnpackFp16, AvailableExactlyWhenTheCpuHasFp16Arithmetic) {
  const char* expect = std::getenv("PATCHFUSE_EXPECT_FP16");
  if (expect == nullptr) GTEST_SKIP() << "run by ctest under qemu with QEMU_CPU and PATCHFUSE_EXPECT_FP16 set";
  if (!pf_backend_available(PF_BACKEND_XNNPACK)) GTEST_SKIP() << "xnnpack backend not built";
  const testing::TestModule spec{"f16", 3, {2, 14, 14}, 24, true, DType::kF16, Layout::kFusedLinear, {}};
  const std::vector<uint8_t> bytes = testing::make_model(spec, 3);
  auto model = Model::open_memory(bytes.data(), bytes.size());
  ASSERT_TRUE(model);
  pf_session_options o = default_options();
  o.backend = PF_BACKEND_XNNPACK;
  o.precision = PF_PRECISION_F16;
  auto s = Session::create(*model, 0, o);
  if (std::string(expect) == "1") {
    ASSERT_TRUE(s) << s.error();
    EXPECT_EQ(s->info().precision, PF_PRECISION_F16);
    const ModuleView view = read_model(bytes.data(), bytes.size(), "m").value().modules[0];
    const std::vector<float> x = testing::random_floats(5 * 1176, 8);
    std::vector<float> y(5 * 24);
    ASSERT_EQ(s->run(x.data(), 5, y.data()), "");
    const testing::Oracle ref = testing::oracle(view, x.data(), 5);
    for (size_t i = 0; i < y.size(); ++i) {
      EXPECT_LE(std::fabs(y[i] - ref.y[i]), 1e-2 * ref.abs_sum[i]) << i;  // f16 bound, as in runtime_backends_test
    }
  } else {
    ASSERT_FALSE(s);
    EXPECT_EQ(s.status(), PF_UNSUPPORTED);
    EXPECT_NE(s.error().find("precision f16 is not available on backend xnnpack"), std::string::npos) << s.error();
    EXPECT_NE(s.error().find("ARMv8.2 FP16"), std::string::npos) << s.error();
    // auto precision falls back to f32 and says why.
    o.precision = PF_PRECISION_AUTO;
    auto fallback = Session::create(*model, 0, o);
    ASSERT_TRUE(fallback) << fallback.error();
    EXPECT_EQ(fallback->info().precision, PF_PRECISION_F32);
    EXPECT_NE(std::string(fallback->info().note).find("computing in f32"), std::string::npos);
  }
}

}  // namespace
}  // namespace patchfuse
