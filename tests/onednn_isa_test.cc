// Which oneDNN kernel family a session runs, as the session reports it, against what this CPU and
// ONEDNN_MAX_CPU_ISA allow. ctest runs this file twice: as the CPU is, and capped to AVX2, so
// on an AVX-512 machine one ctest run exercises both kernel families and cannot pass vacuously
// (an ignored cap would report an avx512 ISA and fail the capped run).
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <set>
#include <sstream>

#include "patchfuse/patchfuse.hpp"
#include "tests/support/model_builder.h"
#include "tests/support/sessions.h"
#include "tests/support/tolerance.h"

namespace patchfuse {
namespace {

// oneDNN's ISA levels that our machines can reach, lowest first (ONEDNN_MAX_CPU_ISA spelling,
// lower-cased, as pf_session_info.isa reports them).
const std::vector<std::string> kLevels = {"avx2", "avx512_core", "avx512_core_vnni", "avx512_core_bf16",
                                          "avx512_core_amx"};

std::set<std::string> cpu_flags() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("flags", 0) != 0) continue;
    std::istringstream words(line.substr(line.find(':') + 1));
    return {std::istream_iterator<std::string>(words), std::istream_iterator<std::string>()};
  }
  return {};
}

// The highest level of kLevels this CPU has, by the flags oneDNN's own detection looks for.
std::string cpu_level() {
  const std::set<std::string> f = cpu_flags();
  auto has = [&](std::initializer_list<const char*> names) {
    return std::all_of(names.begin(), names.end(), [&](const char* n) { return f.count(n) > 0; });
  };
  if (!has({"avx512f", "avx512bw", "avx512vl", "avx512dq"})) return "avx2";
  if (!has({"avx512_vnni"})) return "avx512_core";
  if (!has({"avx512_bf16"})) return "avx512_core_vnni";
  if (!has({"amx_tile", "amx_bf16", "amx_int8"})) return "avx512_core_bf16";
  return "avx512_core_amx";
}

size_t level_index(const std::string& level) {
  return static_cast<size_t>(std::find(kLevels.begin(), kLevels.end(), level) - kLevels.begin());
}

// What oneDNN must report: the CPU's level, lowered to the cap when one is set.
std::string expected_isa() {
  std::string level = cpu_level();
  if (const char* cap = std::getenv("ONEDNN_MAX_CPU_ISA"); cap != nullptr && *cap != '\0') {
    std::string c = cap;
    std::transform(c.begin(), c.end(), c.begin(), [](unsigned char ch) { return std::tolower(ch); });
    if (level_index(c) < level_index(level)) level = c;
  }
  return level;
}

class OneDnnIsa : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!pf_backend_available(PF_BACKEND_ONEDNN)) GTEST_SKIP() << "backend onednn is not built into this library";
    if (cpu_flags().count("avx2") == 0) GTEST_SKIP() << "this CPU has no AVX2; the ISA table starts there";
    spec_ = {"qwen2_vl_bf16", 3, {2, 14, 14}, 80, true, DType::kBF16, Layout::kFusedLinear, {}, true};
    bytes_ = testing::make_model(spec_, 77);
    auto m = Model::open_memory(bytes_.data(), bytes_.size());
    ASSERT_TRUE(m) << m.error();
    model_.emplace(std::move(*m));
  }
  Expected<Session> session(pf_path path, pf_precision precision) const {
    return testing::make_session(*model_, PF_BACKEND_ONEDNN, path, precision);
  }
  testing::TestModule spec_;
  std::vector<uint8_t> bytes_;
  std::optional<Model> model_;
};

TEST_F(OneDnnIsa, SessionReportsTheIsaThisCpuAndCapAllow) {
  const std::string want = expected_isa();
  const char* cap = std::getenv("ONEDNN_MAX_CPU_ISA");
  std::printf("CPU level %s, ONEDNN_MAX_CPU_ISA=%s, expecting %s\n", cpu_level().c_str(), cap ? cap : "(unset)", want.c_str());
  for (pf_path path : {PF_PATH_FUSED, PF_PATH_UNFUSED}) {
    auto s = session(path, PF_PRECISION_F32);
    ASSERT_TRUE(s) << s.error();
    const pf_session_info info = s->info();
    EXPECT_EQ(std::string(info.isa), want) << info.detail;
  }
}

// The kernel family follows the ISA: brgemm needs AVX-512 in oneDNN 2.6, so at avx2 the matmul is
// gemm:jit and nothing names an AVX-512 or AMX kernel; from avx512_core up it is brg:avx512_core.
TEST_F(OneDnnIsa, KernelFamilyFollowsTheIsa) {
  const bool avx512 = level_index(expected_isa()) >= level_index("avx512_core");
  auto s = session(PF_PATH_FUSED, PF_PRECISION_F32);
  ASSERT_TRUE(s) << s.error();
  const std::string detail = s->info().detail;
  if (avx512) {
    EXPECT_NE(detail.find("brg:avx512_core"), std::string::npos) << detail;
  } else {
    EXPECT_NE(detail.find("gemm:jit"), std::string::npos) << detail;
    EXPECT_EQ(detail.find("avx512"), std::string::npos) << detail;
    EXPECT_EQ(detail.find("amx"), std::string::npos) << detail;
  }
}

// bf16 is offered exactly when the ISA oneDNN runs at has it, and then runs a bf16 kernel; below
// it, asking is PF_UNSUPPORTED and auto computes a bf16 model in f32, saying why.
TEST_F(OneDnnIsa, Bf16FollowsTheIsa) {
  const bool bf16 = level_index(expected_isa()) >= level_index("avx512_core_bf16");
  auto s = session(PF_PATH_FUSED, PF_PRECISION_BF16);
  auto automatic = session(PF_PATH_FUSED, PF_PRECISION_AUTO);
  ASSERT_TRUE(automatic) << automatic.error();
  if (bf16) {
    ASSERT_TRUE(s) << s.error();
    const std::string detail = s->info().detail;
    EXPECT_TRUE(detail.find("avx512_core_bf16") != std::string::npos || detail.find("amx") != std::string::npos) << detail;
    EXPECT_EQ(automatic->info().precision, PF_PRECISION_BF16);
  } else {
    ASSERT_FALSE(s);
    EXPECT_EQ(s.status(), PF_UNSUPPORTED);
    EXPECT_NE(s.error().find("AVX512-BF16"), std::string::npos) << s.error();
    EXPECT_EQ(automatic->info().precision, PF_PRECISION_F32);
    EXPECT_NE(std::string(automatic->info().note).find("computing in f32"), std::string::npos) << automatic->info().note;
  }
}

// int8 is offered exactly when the ISA has VNNI (or AMX), runs a VNNI/AMX kernel and stays within
// the int8 bound of the f32 frames path; below it (avx2, avx512_core: u8 x s8 pairs saturate in
// int16) asking is PF_UNSUPPORTED, saying why. auto never picks it.
TEST_F(OneDnnIsa, Int8FollowsTheIsa) {
  const bool vnni = level_index(expected_isa()) >= level_index("avx512_core_vnni");
  auto s = session(PF_PATH_FUSED, PF_PRECISION_INT8);
  auto automatic = session(PF_PATH_FUSED, PF_PRECISION_AUTO);
  ASSERT_TRUE(automatic) << automatic.error();
  EXPECT_NE(automatic->info().precision, PF_PRECISION_INT8);
  if (!vnni) {
    ASSERT_FALSE(s);
    EXPECT_EQ(s.status(), PF_UNSUPPORTED);
    EXPECT_NE(s.error().find("without VNNI or AMX"), std::string::npos) << s.error();
    EXPECT_NE(s.error().find("saturation"), std::string::npos) << s.error();
    return;
  }
  ASSERT_TRUE(s) << s.error();
  const std::string detail = s->info().detail;
  EXPECT_TRUE(detail.find("brg:avx512_core_vnni") != std::string::npos || detail.find("amx_int8") != std::string::npos)
      << detail;
  // A seeded 56 x 84 frame (6 x 4 patches) through the int8 and the f32 frames path.
  auto f32 = session(PF_PATH_FUSED, PF_PRECISION_F32);
  ASSERT_TRUE(f32) << f32.error();
  std::vector<uint8_t> frame(56 * 84 * 3);
  for (size_t i = 0; i < frame.size(); ++i) frame[i] = static_cast<uint8_t>((i * 2654435761u) >> 24);
  const uint8_t* f = frame.data();
  const size_t out = static_cast<size_t>(spec_.embed_dim);
  std::vector<float> y(24 * out), want(24 * out);
  ASSERT_EQ(s->run_frames(&f, 1, 56, 84, 84 * 3, y.data()), "");
  ASSERT_EQ(f32->run_frames(&f, 1, 56, 84, 84 * 3, want.data()), "");
  EXPECT_TRUE(testing::within_bound(y, want, PF_PRECISION_INT8));
}

// Whatever the ISA, the result is right: each path and precision offered against the oracle.
TEST_F(OneDnnIsa, ResultsMatchTheOracleAtThisIsa) {
  const std::vector<uint8_t>& b = bytes_;
  const ModuleView view = read_model(b.data(), b.size(), "m").value().modules.at(0);
  const size_t n = 65, out = static_cast<size_t>(view.geometry.embed_dim);
  const std::vector<float> x = testing::random_floats(n * static_cast<size_t>(view.patch_volume), 5);
  const testing::Oracle ref = testing::oracle(view, x.data(), n);
  int ran = 0;
  for (pf_path path : {PF_PATH_FUSED, PF_PATH_UNFUSED}) {
    for (pf_precision p : {PF_PRECISION_F32, PF_PRECISION_BF16}) {
      auto s = session(path, p);
      if (!s) continue;  // bf16 below avx512_core_bf16: Bf16FollowsTheIsa checks the refusal
      std::vector<float> y(n * out);
      ASSERT_EQ(s->run(x.data(), n, y.data()), "");
      const double tol = testing::element_tolerance(s->info().precision, view.patch_volume);
      for (size_t i = 0; i < y.size(); ++i) ASSERT_LE(std::fabs(y[i] - ref.y[i]), tol * ref.abs_sum[i]) << s->info().detail;
      ++ran;
    }
  }
  EXPECT_GE(ran, 2);
}

}  // namespace
}  // namespace patchfuse
