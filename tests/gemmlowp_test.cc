// The gemmlowp backend: int8 frames whose integer sums equal the reference backend's exactly, so
// the outputs agree bit for bit (both apply scale * (acc + bias) in double); the kernel this CPU
// gets (gemmlowp's variant, or on aarch64 cores with the dot product patchfuse's SDOT kernel;
// under qemu QEMU_CPU picks the emulated core, PATCHFUSE_EXPECT_GEMMLOWP_VARIANT says what it must
// be); the SDOT kernel alone on edge shapes; and auto choosing the backend for int8 where XNNPACK
// is auto's backend (ARM). Against PyTorch on the fixtures: frames_test (Int8MatchesPytorchWithinItsBound).
#include <gtest/gtest.h>

#include <cstdlib>
#include <sstream>
#ifdef PATCHFUSE_SDOT_GEMM
#include <sys/auxv.h>

#include "runtime/backends/gemmlowp/sdot_gemm.h"
#endif

#include "patchfuse/patchfuse.hpp"
#include "tests/support/model_builder.h"
#include "tests/support/sessions.h"
#include "tests/support/tolerance.h"

namespace patchfuse {
namespace {

using testing::TestModule;

class Gemmlowp : public ::testing::Test {
 protected:
  void SetUp() override {
#if defined(__aarch64__) || defined(__arm__)
    ASSERT_TRUE(pf_backend_available(PF_BACKEND_GEMMLOWP)) << "ARM builds must have ARM's int8 backend";
#else
    if (!pf_backend_available(PF_BACKEND_GEMMLOWP)) GTEST_SKIP() << "backend gemmlowp is not built or not available";
#endif
  }
  static Model open(const std::vector<uint8_t>& bytes) { return std::move(*Model::open_memory(bytes.data(), bytes.size())); }
};

std::vector<uint8_t> seeded_frame(size_t bytes, uint32_t seed) {
  std::vector<uint8_t> f(bytes);
  for (size_t i = 0; i < f.size(); ++i) f[i] = static_cast<uint8_t>(((i + seed) * 2654435761u) >> 24);
  return f;
}

// The variant is the one this CPU (or the emulated one) has, and the session says which.
TEST_F(Gemmlowp, RunsTheVariantThisCpuHas) {
  const TestModule spec{"qwen2_vl", 3, {2, 14, 14}, 32, true, DType::kF32, Layout::kFusedLinear, {}, true};
  const std::vector<uint8_t> bytes = testing::make_model(spec, 5);
  const Model m = open(bytes);
  auto s = testing::make_session(m, PF_BACKEND_GEMMLOWP, PF_PATH_FUSED, PF_PRECISION_INT8);
  ASSERT_TRUE(s) << s.error();
  const pf_session_info info = s->info();
  std::printf("gemmlowp: isa %s, %s\n", info.isa, info.detail);
  const std::string built = PATCHFUSE_GEMMLOWP_VARIANTS;  // CMake's list, ','-separated
  const bool sdot = std::string(info.isa) == "neon_dotprod";
#ifdef PATCHFUSE_SDOT_GEMM
  const char* cap = std::getenv("PATCHFUSE_MAX_CPU_ISA");  // neon or baseline: no dot product
  const bool capped = cap != nullptr && (std::string(cap) == "neon" || std::string(cap) == "baseline");
  EXPECT_EQ(sdot, (getauxval(AT_HWCAP) & HWCAP_ASIMDDP) != 0 && !capped)
      << "the SDOT kernel exactly where the core has the dot product and PATCHFUSE_MAX_CPU_ISA allows it";
#endif
  if (sdot) {
    EXPECT_NE(std::string(info.detail).find("SDOT"), std::string::npos) << info.detail;
  } else {
    EXPECT_NE(("," + built + ",").find("," + std::string(info.isa) + ","), std::string::npos) << built;
    EXPECT_NE(std::string(info.detail).find("DefaultL8R8BitDepthParams"), std::string::npos) << info.detail;
  }
  EXPECT_STREQ(info.note, "") << "exact int32 sums: 8-bit weights, no note";
  if (const char* want = std::getenv("PATCHFUSE_EXPECT_GEMMLOWP_VARIANT")) {
    EXPECT_STREQ(info.isa, want) << info.detail;
  }
}

// Bit for bit the reference backend's int8 output, on geometries whose row length is a multiple
// of nothing (K = 147 and 294 with 7-pixel patches) and Qwen2-VL's (588 still, 1176 video), output
// counts that are not multiples of any kernel width, row counts from 24 to 560, 1 to 3 threads,
// and the all-255 frame with weights at +-127 where any lossy accumulation would show.
TEST_F(Gemmlowp, IntegerSumsEqualTheReferenceBitForBit) {
  struct Case {
    TestModule spec;
    size_t height, width, t;
  };
  const Case cases[] = {
      {{"p14", 3, {2, 14, 14}, 80, true, DType::kF32, Layout::kFusedLinear, {}, true}, 56, 84, 1},
      {{"p14", 3, {2, 14, 14}, 80, true, DType::kF32, Layout::kFusedLinear, {}, true}, 224, 280, 1},
      {{"p14", 3, {2, 14, 14}, 80, true, DType::kF32, Layout::kFusedLinear, {}, true}, 56, 84, 2},
      {{"p7", 3, {2, 7, 7}, 37, false, DType::kF32, Layout::kFusedLinear, {}, true}, 70, 98, 1},
      {{"p7", 3, {2, 7, 7}, 37, true, DType::kF32, Layout::kFusedLinear, {}, true}, 98, 126, 3},
  };
  int compared = 0;
  for (const Case& c : cases) {
    const std::vector<uint8_t> bytes = testing::make_model(c.spec, 11);
    const Model m = open(bytes);
    auto reference = testing::make_session(m, PF_BACKEND_REFERENCE, PF_PATH_FUSED, PF_PRECISION_INT8);
    ASSERT_TRUE(reference) << reference.error();
    for (int threads : {1, 2, 3}) {
      auto s = testing::make_session(m, PF_BACKEND_GEMMLOWP, PF_PATH_FUSED, PF_PRECISION_INT8, 0, threads);
      ASSERT_TRUE(s) << s.error();
      for (uint32_t seed : {1u, 0u}) {  // 0: the all-255 frame
        std::ostringstream trace;
        trace << c.spec.name << " " << c.t << "x" << c.height << "x" << c.width << " threads " << threads << " seed " << seed;
        SCOPED_TRACE(trace.str());
        const size_t frame = c.height * c.width * 3;
        std::vector<uint8_t> frames = seed ? seeded_frame(frame * c.t, seed) : std::vector<uint8_t>(frame * c.t, 255);
        std::vector<const uint8_t*> p;
        for (size_t f = 0; f < c.t; ++f) p.push_back(frames.data() + f * frame);
        auto grid = s->frames_grid(c.t, c.height, c.width);
        ASSERT_TRUE(grid) << grid.error();
        const size_t n = static_cast<size_t>(grid->t * grid->h * grid->w), out = static_cast<size_t>(c.spec.embed_dim);
        std::vector<float> want(n * out), got(n * out, -1.0f);
        ASSERT_EQ(reference->run_frames(p.data(), c.t, c.height, c.width, c.width * 3, want.data()), "");
        ASSERT_EQ(s->run_frames(p.data(), c.t, c.height, c.width, c.width * 3, got.data()), "");
        for (size_t i = 0; i < got.size(); ++i) ASSERT_EQ(got[i], want[i]) << "row " << i / out << " output " << i % out;
        ++compared;
      }
    }
  }
  EXPECT_EQ(compared, 5 * 3 * 2);
}

#ifdef PATCHFUSE_SDOT_GEMM
// The SDOT kernel on its own, against the sums in int64: k below, at and past 16 (rows read past
// k), outputs past a block of 16, row counts that leave a partial tile of 4, and the extremes
// (pixels 0 and 255 against weights -127 and 127) where a lossy or offset-wrong sum would show.
TEST(SdotGemm, SumsEqualInt64SumsOnEdgeShapes) {
  if ((getauxval(AT_HWCAP) & HWCAP_ASIMDDP) == 0) GTEST_SKIP() << "this core has no dot product";
  uint32_t state = 7;
  const auto next = [&state] { return state = state * 1664525u + 1013904223u, state >> 24; };
  int compared = 0;
  for (int k : {1, 5, 16, 17, 32, 147, 588}) {
    for (int outputs : {1, 16, 17, 37}) {
      for (int n : {1, 3, 4, 5, 9}) {
        for (int extreme : {0, 1}) {
          std::vector<int8_t> q(static_cast<size_t>(outputs) * k);
          // 16 bytes after the last row, as the kernel's contract asks; not zeros, so that a weight
          // past k that were not zero would show.
          std::vector<uint8_t> x(static_cast<size_t>(n) * k + 16, 0xab);
          for (size_t i = 0; i < q.size(); ++i) q[i] = static_cast<int8_t>(extreme ? (i % 2 ? 127 : -127) : static_cast<int>(next() % 255) - 127);
          for (size_t i = 0; i + 16 < x.size(); ++i) x[i] = static_cast<uint8_t>(extreme ? (i % 3 ? 255 : 0) : next());
          std::vector<int8_t> packed(sdot_packed_bytes_neon_dotprod(outputs, k));
          std::vector<int32_t> start((outputs + 15) / 16 * 16), acc(static_cast<size_t>(n) * outputs + 1, 12345);
          sdot_pack_neon_dotprod(q.data(), outputs, k, packed.data(), start.data());
          sdot_gemm_neon_dotprod(packed.data(), start.data(), outputs, k, x.data(), n, acc.data());
          for (int i = 0; i < n; ++i) {
            for (int o = 0; o < outputs; ++o) {
              int64_t want = 0;
              for (int j = 0; j < k; ++j) want += int64_t{x[static_cast<size_t>(i) * k + j]} * q[static_cast<size_t>(o) * k + j];
              ASSERT_EQ(acc[static_cast<size_t>(i) * outputs + o], want) << "k " << k << " outputs " << outputs << " n " << n
                                                                         << " row " << i << " output " << o;
            }
          }
          EXPECT_EQ(acc.back(), 12345) << "nothing written past the last row";
          ++compared;
        }
      }
    }
  }
  EXPECT_EQ(compared, 7 * 4 * 5 * 2);
}
#endif

// auto takes the first backend that computes the precision asked for: for int8 on ARM, where
// XNNPACK (auto's f32 backend) refuses it, that is gemmlowp; on x86-64 oneDNN keeps it.
TEST_F(Gemmlowp, AutoPicksAnInt8Backend) {
  const TestModule spec{"qwen2_vl", 3, {2, 14, 14}, 16, false, DType::kF32, Layout::kFusedLinear, {}, true};
  const std::vector<uint8_t> bytes = testing::make_model(spec, 3);
  const Model m = open(bytes);
  auto s = testing::make_session(m, PF_BACKEND_AUTO, PF_PATH_FUSED, PF_PRECISION_INT8);
  ASSERT_TRUE(s) << s.error();
  const pf_backend want = pf_backend_available(PF_BACKEND_ONEDNN) ? PF_BACKEND_ONEDNN : PF_BACKEND_GEMMLOWP;
  EXPECT_EQ(s->info().backend, want) << s->info().detail;
  // f32 is not gemmlowp's: asking for it names the reason, and auto f32 stays on the float backend.
  auto f32 = testing::make_session(m, PF_BACKEND_GEMMLOWP, PF_PATH_FUSED, PF_PRECISION_F32);
  ASSERT_FALSE(f32);
  EXPECT_EQ(f32.status(), PF_UNSUPPORTED);
  EXPECT_NE(f32.error().find("integer GEMM"), std::string::npos) << f32.error();
  auto automatic = testing::make_session(m, PF_BACKEND_AUTO, PF_PATH_FUSED, PF_PRECISION_AUTO);
  ASSERT_TRUE(automatic) << automatic.error();
  EXPECT_NE(automatic->info().backend, PF_BACKEND_GEMMLOWP);
}

}  // namespace
}  // namespace patchfuse
