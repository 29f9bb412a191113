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

#include "converter/model_writer.h"
#include "patchfuse/patchfuse.hpp"
#include "runtime/frames/weight_transforms.h"
#include "runtime/model/model_view.h"
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

// /proc/cpuinfo's vendor_id: "GenuineIntel", "AuthenticAMD".
std::string cpu_vendor() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("vendor_id", 0) != 0) continue;
    std::istringstream words(line.substr(line.find(':') + 1));
    std::string vendor;
    words >> vendor;
    return vendor;
  }
  return "";
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

// What oneDNN must report: the CPU's level, lowered to the cap when one is set. AVX2_VNNI (AVX-VNNI,
// VEX-coded, on Alder Lake and later Intel cores) is a branch of its own above avx2: under that
// cap oneDNN reports avx2_vnni where the CPU has avx_vnni, else avx2.
std::string expected_isa() {
  std::string level = cpu_level();
  if (const char* cap = std::getenv("ONEDNN_MAX_CPU_ISA"); cap != nullptr && *cap != '\0') {
    std::string c = cap;
    std::transform(c.begin(), c.end(), c.begin(), [](unsigned char ch) { return std::tolower(ch); });
    if (c == "avx2_vnni") return cpu_flags().count("avx_vnni") ? "avx2_vnni" : "avx2";
    if (level_index(c) < level_index(level)) level = c;
  }
  return level;
}

// The expected ISA's place in kLevels (avx2_vnni has no AVX-512: it ranks with avx2).
size_t expected_rank() {
  const std::string isa = expected_isa();
  return level_index(isa == "avx2_vnni" ? "avx2" : isa);
}

// Whether the expected ISA sums u8 x s8 products into int32 exactly (VNNI, AVX-VNNI or AMX).
bool expect_vnni() { return expected_isa() == "avx2_vnni" || expected_rank() >= level_index("avx512_core_vnni"); }

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
  const bool avx512 = expected_rank() >= level_index("avx512_core");
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
// it, asking is PF_UNSUPPORTED and auto computes a bf16 model in f32, saying why. auto takes
// bf16 only where it outruns f32: on AMX, and on AMD's AVX512-BF16; on Intel's AVX512-BF16
// without AMX (or capped below it) it computes in f32 and says why.
TEST_F(OneDnnIsa, Bf16FollowsTheIsa) {
  const bool bf16 = expected_rank() >= level_index("avx512_core_bf16");
  const bool faster = expected_rank() >= level_index("avx512_core_amx") || (bf16 && cpu_vendor() == "AuthenticAMD");
  auto s = session(PF_PATH_FUSED, PF_PRECISION_BF16);
  auto automatic = session(PF_PATH_FUSED, PF_PRECISION_AUTO);
  ASSERT_TRUE(automatic) << automatic.error();
  if (bf16) {
    ASSERT_TRUE(s) << s.error();
    const std::string detail = s->info().detail;
    EXPECT_TRUE(detail.find("avx512_core_bf16") != std::string::npos || detail.find("amx") != std::string::npos) << detail;
    const std::string note = automatic->info().note;
    EXPECT_EQ(automatic->info().precision, faster ? PF_PRECISION_BF16 : PF_PRECISION_F32) << note;
    if (!faster) {
      EXPECT_NE(note.find("twice an f32 one's time"), std::string::npos) << note;
      EXPECT_NE(note.find("computing in f32"), std::string::npos) << note;
    }
  } else {
    ASSERT_FALSE(s);
    EXPECT_EQ(s.status(), PF_UNSUPPORTED);
    EXPECT_NE(s.error().find("AVX512-BF16"), std::string::npos) << s.error();
    EXPECT_EQ(automatic->info().precision, PF_PRECISION_F32);
    EXPECT_NE(std::string(automatic->info().note).find("computing in f32"), std::string::npos) << automatic->info().note;
  }
}

// int8 is offered on every ISA: with 8-bit weights where the ISA has VNNI (or AMX) and a VNNI/AMX
// kernel runs; below it (avx2, avx512_core: u8 x s8 pairs are added in int16 with saturation)
// with 7-bit weights, which the session's note says. Either way within the int8 bound of the f32
// frames path. auto never picks it.
TEST_F(OneDnnIsa, Int8FollowsTheIsa) {
  const bool vnni = expect_vnni();
  auto s = session(PF_PATH_FUSED, PF_PRECISION_INT8);
  auto automatic = session(PF_PATH_FUSED, PF_PRECISION_AUTO);
  ASSERT_TRUE(automatic) << automatic.error();
  EXPECT_NE(automatic->info().precision, PF_PRECISION_INT8);
  ASSERT_TRUE(s) << s.error();
  const std::string detail = s->info().detail, note = s->info().note;
  if (vnni) {
    // A kernel of the VNNI ISA itself (vpdpbusd) or AMX: jit_uni_int8_1x1:avx2_vnni,
    // brgconv_1x1:avx512_core_vnni, brgconv_1x1:avx512_core_amx_int8.
    EXPECT_TRUE(detail.find(expected_isa() == "avx2_vnni" ? "avx2_vnni" : "avx512_core_vnni") != std::string::npos ||
                detail.find("amx_int8") != std::string::npos)
        << detail;
    EXPECT_EQ(note, "") << "8-bit weights need no note";
  } else {
    EXPECT_NE(note.find("int8 weights are 7-bit (-63..63)"), std::string::npos) << note;
    EXPECT_NE(note.find("saturation"), std::string::npos) << note;
  }
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

// The exactness claim behind the weight width, measured as the refusal was: all-255 pixels times
// weights that quantize to +-max_q everywhere (constant magnitude per output channel, mean 0 and
// std 1 so the folding keeps it), where a saturating int16 pair sum would show at once (8-bit
// weights on avx2 came out 49% low). The expected output is computed in double from the same
// quantization, so the sums must be exact: agreement to f32 rounding.
TEST_F(OneDnnIsa, Int8SumsAreExactAtTheWeightWidthItUses) {
  ModuleRecord m;
  m.path = "visual.patch_embed";
  m.family = find_family("patch_embeddings");
  m.geometry.kernel = m.geometry.stride = {2, 14, 14};
  m.geometry.padding = {0, 0, 0};
  m.geometry.dilation = {1, 1, 1};
  m.geometry.in_channels = 3;
  m.geometry.embed_dim = 16;
  const size_t k = 1176, out = 16;
  std::vector<float> w(out * k);
  for (size_t o = 0; o < out; ++o) {
    for (size_t j = 0; j < k; ++j) w[o * k + j] = (o % 2 ? -1.0f : 1.0f) * 0.001f * static_cast<float>(o + 1);
  }
  m.weight = {"visual.patch_embed.linear_proj.weight", {16, 1176}, DType::kF32,
              std::vector<uint8_t>(reinterpret_cast<const uint8_t*>(w.data()), reinterpret_cast<const uint8_t*>(w.data() + w.size()))};
  Preprocessing p;
  p.mean = {0, 0, 0};
  p.std = {1, 1, 1};
  p.min_pixels = 3136;
  p.max_pixels = 1003520;
  m.preprocessing = p;
  const std::vector<uint8_t> bytes = build_model("qwen2_vl", validate_fusion_config(default_fusion_config()).value(), {m});
  auto model = Model::open_memory(bytes.data(), bytes.size());
  ASSERT_TRUE(model) << model.error();
  auto s = testing::make_session(*model, PF_BACKEND_ONEDNN, PF_PATH_FUSED, PF_PRECISION_INT8);
  ASSERT_TRUE(s) << s.error();
  const int max_q = std::string(s->info().note).find("7-bit") != std::string::npos ? 63 : 127;
  EXPECT_EQ(max_q, expect_vnni() ? 127 : 63) << s->info().isa;

  const std::vector<uint8_t> frame(56 * 56 * 3, 255);
  const uint8_t* f = frame.data();
  std::vector<float> y(16 * out);
  ASSERT_EQ(s->run_frames(&f, 1, 56, 56, 56 * 3, y.data()), "");
  const ModuleView view = read_model(bytes.data(), bytes.size(), "m.pfb").value().modules.at(0);
  const Int8Weights q = quantize_int8(fold_normalization(conv_weights(view), *view.preprocessing, true), max_q);
  double worst = 0, max_ref = 0;
  for (size_t o = 0; o < out; ++o) {
    for (size_t j = 0; j < k / 2; ++j) ASSERT_EQ(std::abs(q.weight[o * (k / 2) + j]), max_q) << "not an extreme weight";
    double acc = 0;
    for (size_t j = 0; j < k / 2; ++j) acc += 255.0 * q.weight[o * (k / 2) + j];
    const double want = static_cast<double>(q.scale[o]) * (acc + static_cast<double>(q.bias[o]));
    for (size_t r = 0; r < 16; ++r) worst = std::max(worst, std::fabs(y[r * out + o] - want));
    max_ref = std::max(max_ref, std::fabs(want));
  }
  // f32 rounding of the epilogue only (scale * (acc + bias) in f32): 1e-6 of max |ref| (observed ~1e-7).
  EXPECT_LE(worst, 1e-6 * max_ref) << "max |diff| " << worst << " of max |ref| " << max_ref << " with max_q " << max_q
                                   << " on " << s->info().detail;
}

// oneDNN's int8 1x1 convolution prefers a weights layout by N and thread count (on AMX and VNNI
// one of two; at avx2 always the same), so a session holds the weights in each layout a batch
// size asked for. A frame's top rows are the first rows of its merge-group order: each prefix of
// a tall random frame (N = 12, 24, ..., 468 at Qwen2-VL's real 1280 outputs, 1 and 2 threads)
// must give the tall frame's first N outputs. The integer sums are exact, so only the f32
// epilogue may differ: 1e-6 of max |y| (observed 0). Weights used in a layout they were not
// packed in come out as garbage (tried: VNNI fails at N = 12, AMX at 2 threads).
TEST_F(OneDnnIsa, Int8GivesTheSameRowsWhateverTheBatchSize) {
  const testing::TestModule spec{"qwen2_vl_1280", 3, {2, 14, 14}, 1280, true, DType::kF32, Layout::kFusedLinear, {}, true};
  const std::vector<uint8_t> bytes = testing::make_model(spec, 78);
  auto model = Model::open_memory(bytes.data(), bytes.size());
  ASSERT_TRUE(model) << model.error();
  const size_t width = 84, tall = 1120, out = 1280, cols = width / 14;
  std::vector<uint8_t> frame(tall * width * 3);
  for (size_t i = 0; i < frame.size(); ++i) frame[i] = static_cast<uint8_t>((i * 2654435761u) >> 24);
  const uint8_t* f = frame.data();
  for (int threads : {1, 2}) {
    auto s = testing::make_session(*model, PF_BACKEND_ONEDNN, PF_PATH_FUSED, PF_PRECISION_INT8, 0, threads);
    ASSERT_TRUE(s) << s.error();
    std::vector<float> whole(tall / 14 * cols * out);
    ASSERT_EQ(s->run_frames(&f, 1, tall, width, width * 3, whole.data()), "");
    for (size_t height = 28; height < tall; height += 28) {
      const size_t n = height / 14 * cols;
      std::vector<float> y(n * out);
      ASSERT_EQ(s->run_frames(&f, 1, height, width, width * 3, y.data()), "");
      const std::vector<double> want(whole.begin(), whole.begin() + static_cast<std::ptrdiff_t>(n * out));
      const testing::OutputError e = testing::output_error(y, want);
      EXPECT_LE(e.max_err, 1e-6 * e.max_ref) << "N = " << n << ", " << threads << " threads, on " << s->info().detail;
    }
  }
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
