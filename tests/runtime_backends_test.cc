// Every built backend, both paths, every precision, against the double-precision oracle, at sizes
// around the kernels' tiles and for every family's geometry. One test body, run for all
// (backend, path, precision) combinations; a combination this build or CPU cannot run is skipped
// with the runtime's own reason.
#include <gtest/gtest.h>

#include <cmath>

#include "patchfuse/patchfuse.hpp"
#include "tests/support/model_builder.h"
#include "tests/support/test_util.h"
#include "tests/support/tolerance.h"

namespace patchfuse {
namespace {

using testing::Oracle;
using testing::TestModule;

struct Combo {
  pf_backend backend;
  pf_path path;
  pf_precision precision;
};

std::string combo_name(const ::testing::TestParamInfo<Combo>& info) {
  const char* precision[] = {"auto", "f32", "bf16", "f16"};
  return std::string(pf_backend_name(info.param.backend)) + (info.param.path == PF_PATH_FUSED ? "_fused_" : "_unfused_") +
         precision[info.param.precision];
}

std::vector<Combo> all_combos() {
  std::vector<Combo> v;
  for (pf_backend b : {PF_BACKEND_REFERENCE, PF_BACKEND_ONEDNN, PF_BACKEND_XNNPACK})
    for (pf_path p : {PF_PATH_FUSED, PF_PATH_UNFUSED})
      for (pf_precision q : {PF_PRECISION_AUTO, PF_PRECISION_F32, PF_PRECISION_BF16, PF_PRECISION_F16}) v.push_back({b, p, q});
  return v;
}

// Every family's geometry (DESIGN.md §2), stored in both layouts and the three dtypes; widths
// that are not multiples of the kernels' tiles.
const std::vector<TestModule>& geometries() {
  static const std::vector<TestModule> g = {
      {"qwen2_vl_bf16", 3, {2, 14, 14}, 72, false, DType::kBF16, Layout::kFusedLinear, {}},
      {"qwen3_vl_bias_f32", 3, {2, 16, 16}, 40, true, DType::kF32, Layout::kFusedLinear, {}},
      {"glm4v_bias_bf16_original", 3, {2, 14, 14}, 96, true, DType::kBF16, Layout::kOriginalConv, {}},
      {"f16_weights", 3, {2, 14, 14}, 33, true, DType::kF16, Layout::kFusedLinear, {}},
      // Row lengths that are not multiples of the vector widths: 588 (SigLIP's and a still image's,
      // a multiple of 4 but not 8 or 16), 294 (of 2 but not 4) and the odd 147.
      {"k588_still", 3, {1, 14, 14}, 24, true, DType::kF32, Layout::kFusedLinear, {}},
      {"k294", 3, {2, 7, 7}, 19, false, DType::kF32, Layout::kFusedLinear, {}},
      {"k147_odd", 3, {1, 7, 7}, 17, true, DType::kBF16, Layout::kOriginalConv, {}},
  };
  return g;
}

const std::vector<size_t> kSizes = {1, 2, 7, 8, 9, 63, 64, 65, 1024};

// auto resolves to f32, bf16 or f16 for each model, and that precision's own combination runs the
// same session: the two sweeps over every geometry and size skip it (the slowest tests under
// qemu). What auto resolves to is checked where it matters: frames, golden, onednn_isa, c_api.
constexpr const char* kAutoIsAnExplicitCombination =
    "auto resolves to f32, bf16 or f16, whose combinations run the same sessions";

using testing::element_tolerance;

struct Built {
  std::vector<uint8_t> bytes;
  ModuleView view;  // points into bytes
};

const Built& built(const TestModule& spec) {
  static std::map<std::string, std::unique_ptr<Built>> cache;
  auto& slot = cache[spec.name];
  if (!slot) {
    slot = std::make_unique<Built>();
    slot->bytes = testing::make_model(spec, 1234);
    slot->view = read_model(slot->bytes.data(), slot->bytes.size(), spec.name).value().modules.at(0);
  }
  return *slot;
}

class Backends : public ::testing::TestWithParam<Combo> {
 protected:
  // Creates the session or skips the test with the runtime's reason.
  std::optional<Session> open(const Model& model) {
    pf_session_options o = default_options();
    o.backend = GetParam().backend;
    o.path = GetParam().path;
    o.precision = GetParam().precision;
    auto s = Session::create(model, 0, o);
    if (!s) {
      EXPECT_EQ(s.status(), PF_UNSUPPORTED) << s.error();
      skip_reason_ = s.error();
      return std::nullopt;
    }
    return std::move(*s);
  }
  std::string skip_reason_;
};

TEST_P(Backends, MatchesDoubleOracleAtTileSizesForEveryGeometry) {
  if (GetParam().precision == PF_PRECISION_AUTO) GTEST_SKIP() << kAutoIsAnExplicitCombination;
  for (const TestModule& spec : geometries()) {
    SCOPED_TRACE(spec.name);
    const Built& b = built(spec);
    auto model = Model::open_memory(b.bytes.data(), b.bytes.size());
    ASSERT_TRUE(model) << model.error();
    auto session = open(*model);
    if (!session) GTEST_SKIP() << skip_reason_;
    const pf_session_info info = session->info();
    const int64_t k = b.view.patch_volume, out = b.view.geometry.embed_dim;
    for (size_t n : kSizes) {
      SCOPED_TRACE("N = " + std::to_string(n));
      const uint32_t seed = static_cast<uint32_t>(n * 7919 + k);
      const std::vector<float> x = testing::random_floats(n * static_cast<size_t>(k), seed);
      // Guard bytes on both sides of the output catch out-of-bounds writes.
      constexpr size_t kGuard = 64;
      const float sentinel = -12345.678f;
      std::vector<float> buf(n * static_cast<size_t>(out) + 2 * kGuard, sentinel);
      float* y = buf.data() + kGuard;
      ASSERT_EQ(session->run(x.data(), n, y), "");
      const Oracle ref = testing::oracle(b.view, x.data(), n);
      const double tol = element_tolerance(info.precision, k);
      size_t bad = 0, nonzero = 0;
      double worst = 0;
      for (size_t i = 0; i < ref.y.size(); ++i) {
        const double err = std::fabs(y[i] - ref.y[i]);
        worst = std::max(worst, err / ref.abs_sum[i]);
        bad += !(err <= tol * ref.abs_sum[i]);  // also counts NaN
        nonzero += y[i] != 0.0f;
      }
      EXPECT_EQ(bad, 0u) << "worst error " << worst << " x sum|x*w|, tolerance " << tol << ", seed " << seed;
      EXPECT_GT(nonzero, ref.y.size() * 9 / 10) << "output mostly zeros: comparison mistrusted";
      for (size_t g = 0; g < kGuard; ++g) {
        ASSERT_EQ(buf[g], sentinel) << "write before the output at " << g;
        ASSERT_EQ(buf[kGuard + ref.y.size() + g], sentinel) << "write past the output at " << g;
      }
    }
  }
}

TEST_P(Backends, NanInOneRowStaysInThatRow) {
  const Built& b = built(geometries()[1]);
  auto model = Model::open_memory(b.bytes.data(), b.bytes.size());
  auto session = open(*model);
  if (!session) GTEST_SKIP() << skip_reason_;
  const size_t n = 9, k = static_cast<size_t>(b.view.patch_volume), out = static_cast<size_t>(b.view.geometry.embed_dim);
  std::vector<float> x = testing::random_floats(n * k, 99);
  x[4 * k + 17] = std::nanf("");
  std::vector<float> y(n * out);
  ASSERT_EQ(session->run(x.data(), n, y.data()), "");
  // XNNPACK's 2022 kernels clamp with max/min even for an unbounded range, and max(NaN, -inf) is
  // -inf on x86 and ARM alike, so there a NaN input comes out as -inf: non-finite, but not NaN.
  const bool nan_becomes_inf = GetParam().backend == PF_BACKEND_XNNPACK;
  for (size_t i = 0; i < n; ++i) {
    for (size_t o = 0; o < out; ++o) {
      const float v = y[i * out + o];
      if (i != 4) {
        EXPECT_TRUE(std::isfinite(v)) << "row " << i << " col " << o;
      } else if (nan_becomes_inf) {
        EXPECT_FALSE(std::isfinite(v)) << "col " << o << " = " << v;
      } else {
        EXPECT_TRUE(std::isnan(v)) << "col " << o << " = " << v;
      }
    }
  }
}

// The caller's input ends exactly at a page boundary with an unmapped page after it: a kernel
// that over-reads the caller's memory faults here. Every geometry, so row lengths that are not a
// multiple of any vector width (147, 294, 588) are among them: those are where a kernel's tail
// would read past the row (none of XNNPACK 2022's kernels we can run does; xnnpack_backend.cc).
TEST_P(Backends, InputEndingAtAnUnmappedPageDoesNotFault) {
  if (GetParam().precision == PF_PRECISION_AUTO) GTEST_SKIP() << kAutoIsAnExplicitCombination;
  for (const TestModule& spec : geometries()) {
    SCOPED_TRACE(spec.name);
    const Built& b = built(spec);
    auto model = Model::open_memory(b.bytes.data(), b.bytes.size());
    auto session = open(*model);
    if (!session) GTEST_SKIP() << skip_reason_;
    const size_t k = static_cast<size_t>(b.view.patch_volume), out = static_cast<size_t>(b.view.geometry.embed_dim);
    for (size_t n : {size_t{1}, size_t{7}, size_t{300}}) {  // 300: rows run in place and staged (xnnpack)
      const std::vector<float> values = testing::random_floats(n * k, 5);
      const testing::BytesBeforeGuardPage guarded(values.data(), values.size() * sizeof(float));
      const auto* x = reinterpret_cast<const float*>(guarded.data());
      std::vector<float> y(n * out);
      EXPECT_EQ(session->run(x, n, y.data()), "");
      const Oracle ref = testing::oracle(b.view, x, n);
      for (size_t i = 0; i < ref.y.size(); ++i) {
        ASSERT_LE(std::fabs(y[i] - ref.y[i]), element_tolerance(session->info().precision, static_cast<int64_t>(k)) * ref.abs_sum[i]);
      }
    }
  }
}

// A batch size seen before reuses its cached primitives and must give the same bits.
TEST_P(Backends, RepeatedBatchSizesGiveIdenticalResults) {
  const Built& b = built(geometries()[2]);
  auto model = Model::open_memory(b.bytes.data(), b.bytes.size());
  auto session = open(*model);
  if (!session) GTEST_SKIP() << skip_reason_;
  const size_t k = static_cast<size_t>(b.view.patch_volume), out = static_cast<size_t>(b.view.geometry.embed_dim);
  const std::vector<float> x = testing::random_floats(65 * k, 3);
  std::vector<float> first(9 * out), again(9 * out), big(65 * out);
  ASSERT_EQ(session->run(x.data(), 9, first.data()), "");
  ASSERT_EQ(session->run(x.data(), 65, big.data()), "");
  ASSERT_EQ(session->run(x.data(), 9, again.data()), "");
  EXPECT_EQ(first, again);
}

INSTANTIATE_TEST_SUITE_P(AllCombinations, Backends, ::testing::ValuesIn(all_combos()), combo_name);

// The unfused path (the backend's convolution) agrees with the fused path (its GEMM).
TEST(RuntimePaths, UnfusedAgreesWithFused) {
  for (const TestModule& spec : geometries()) {
    const Built& b = built(spec);
    auto model = Model::open_memory(b.bytes.data(), b.bytes.size());
    const size_t n = 33, k = static_cast<size_t>(b.view.patch_volume), out = static_cast<size_t>(b.view.geometry.embed_dim);
    const std::vector<float> x = testing::random_floats(n * k, 21);
    const Oracle ref = testing::oracle(b.view, x.data(), n);
    for (pf_backend backend : {PF_BACKEND_REFERENCE, PF_BACKEND_ONEDNN, PF_BACKEND_XNNPACK}) {
      if (!pf_backend_available(backend)) continue;
      SCOPED_TRACE(spec.name + " " + pf_backend_name(backend));
      std::vector<float> y[2] = {std::vector<float>(n * out), std::vector<float>(n * out)};
      for (pf_path path : {PF_PATH_FUSED, PF_PATH_UNFUSED}) {
        pf_session_options o = default_options();
        o.backend = backend;
        o.path = path;
        o.precision = PF_PRECISION_F32;
        auto s = Session::create(*model, 0, o);
        ASSERT_TRUE(s) << s.error();
        ASSERT_EQ(s->run(x.data(), n, y[path].data()), "");
      }
      // Each path is within the f32 bound of the exact result, so they are within twice it.
      const double tol = 2 * element_tolerance(PF_PRECISION_F32, static_cast<int64_t>(k));
      for (size_t i = 0; i < ref.y.size(); ++i) ASSERT_LE(std::fabs(y[0][i] - y[1][i]), tol * ref.abs_sum[i]) << i;
    }
  }
}

}  // namespace
}  // namespace patchfuse
