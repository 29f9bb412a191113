// XNNPACK f16 on ARM runs where the CPU has ARMv8.2 FP16 arithmetic and is refused with a clear
// message where it does not; auto takes it only where it outruns f32. ctest runs this twice under qemu with QEMU_CPU set (max: has FP16;
// cortex-a53: ARMv8.0, has not) and PATCHFUSE_EXPECT_FP16 saying which outcome is right.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <optional>

#include "patchfuse/patchfuse.hpp"
#include "tests/support/model_builder.h"

namespace patchfuse {
namespace {

// An f16 model and XNNPACK options asking for f16.
class XnnpackFp16 : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!pf_backend_available(PF_BACKEND_XNNPACK)) GTEST_SKIP() << "xnnpack backend not built";
    const testing::TestModule spec{"f16", 3, {2, 14, 14}, 24, true, DType::kF16, Layout::kFusedLinear, {}};
    bytes_ = testing::make_model(spec, 3);
    auto m = Model::open_memory(bytes_.data(), bytes_.size());
    ASSERT_TRUE(m) << m.error();
    model_.emplace(std::move(*m));
    o_.backend = PF_BACKEND_XNNPACK;
    o_.precision = PF_PRECISION_F16;
  }
  std::vector<uint8_t> bytes_;
  std::optional<Model> model_;
  pf_session_options o_ = default_options();
};

TEST_F(XnnpackFp16, AvailableExactlyWhenTheCpuHasFp16Arithmetic) {
  const char* expect = std::getenv("PATCHFUSE_EXPECT_FP16");
  if (expect == nullptr) GTEST_SKIP() << "run by ctest under qemu with QEMU_CPU and PATCHFUSE_EXPECT_FP16 set";
  auto s = Session::create(*model_, 0, o_);
  if (std::string(expect) == "1") {
    ASSERT_TRUE(s) << s.error();
    EXPECT_EQ(s->info().precision, PF_PRECISION_F16);
    o_.precision = PF_PRECISION_AUTO;  // f16 arithmetic outruns f32: auto computes an f16 model in f16
    auto automatic = Session::create(*model_, 0, o_);
    ASSERT_TRUE(automatic) << automatic.error();
    EXPECT_EQ(automatic->info().precision, PF_PRECISION_F16);
    const ModuleView view = read_model(bytes_.data(), bytes_.size(), "m").value().modules[0];
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
    o_.precision = PF_PRECISION_AUTO;
    auto fallback = Session::create(*model_, 0, o_);
    ASSERT_TRUE(fallback) << fallback.error();
    EXPECT_EQ(fallback->info().precision, PF_PRECISION_F32);
    EXPECT_NE(std::string(fallback->info().note).find("computing in f32"), std::string::npos);
  }
}

// On x86-64 XNNPACK's f16 runs (widened to f32) when asked for, but auto computes an f16 model in
// f32, which is faster there, and says why.
TEST_F(XnnpackFp16, AutoComputesF32OnX86) {
#if !defined(__x86_64__)
  GTEST_SKIP() << "x86-64 only";
#endif
  auto f16 = Session::create(*model_, 0, o_);
  ASSERT_TRUE(f16) << f16.error();
  EXPECT_EQ(f16->info().precision, PF_PRECISION_F16);
  o_.precision = PF_PRECISION_AUTO;
  auto automatic = Session::create(*model_, 0, o_);
  ASSERT_TRUE(automatic) << automatic.error();
  EXPECT_EQ(automatic->info().precision, PF_PRECISION_F32);
  const std::string note = automatic->info().note;
  EXPECT_NE(note.find("widen every value to f32"), std::string::npos) << note;
  EXPECT_NE(note.find("computing in f32"), std::string::npos) << note;
}

}  // namespace
}  // namespace patchfuse
