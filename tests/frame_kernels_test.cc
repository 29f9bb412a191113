// Every frames kernel form this CPU has (frames/kernels/dispatch.cc's table), in one process,
// against the portable form byte for byte: the plane splits, the gather rows (f32 and bf16 bits),
// and the resize passes through the Resizer on sizes around each form's block width. The portable
// forms themselves are held to Pillow and the processors' pixel_values by resize_test,
// frames_test and images_test, which also walk every level. A level above what the CPU has (or
// what PATCHFUSE_MAX_CPU_ISA allows) is skipped, saying so.
#include "runtime/frames/kernels/kernels.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <iterator>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "runtime/frames/resize.h"
#include "runtime/frames/resize_tables.h"
#include "tests/support/test_util.h"

namespace patchfuse {
namespace {

std::vector<uint8_t> random_bytes(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<uint8_t> v(n);
  for (auto& b : v) b = static_cast<uint8_t>(rng());
  return v;
}

class FrameKernels : public ::testing::TestWithParam<SimdLevel> {
 protected:
  void SetUp() override {
    if (GetParam() > simd_level()) {
      GTEST_SKIP() << simd_level_name(GetParam()) << ": above this process's level " << simd_level_name(simd_level())
                   << " (the CPU's, capped by PATCHFUSE_MAX_CPU_ISA)";
    }
  }
  const patchfuse::FrameKernels& form() const { return frame_kernels(GetParam()); }
  static const patchfuse::FrameKernels& portable() { return frame_kernels(SimdLevel::kBaseline); }
};

// Each level runs the forms named for it: the session prints these names.
TEST_P(FrameKernels, EachLevelRunsItsNamedForms) {
  const SimdLevel level = GetParam();
  EXPECT_EQ(form().level, level);
  const std::string name = simd_level_name(level);
  if (level == SimdLevel::kBaseline) {
    EXPECT_STREQ(form().resize.name, "portable");
    EXPECT_EQ(form().resize.horizontal, nullptr) << "the portable resize is the Resizer's own scalar passes";
    EXPECT_STREQ(form().planes.name, "portable");
    EXPECT_STREQ(form().gather.name, "portable");
    return;
  }
  EXPECT_EQ(form().resize.name, name);
  EXPECT_NE(form().resize.horizontal, nullptr);
  EXPECT_NE(form().resize.vertical, nullptr);
#if defined(__x86_64__)
  // AVX-512 adds resize forms, and VBMI a plane split and rows straight from RGB rows.
  const bool vbmi = level == SimdLevel::kAvx512Vbmi;
  const char* rows = vbmi ? "avx512_vbmi" : "avx2";
  EXPECT_EQ(form().resize.block, level >= SimdLevel::kAvx512 ? 16u : 8u);
  EXPECT_EQ(form().resize.window, vbmi ? 16u : 4u);
  EXPECT_EQ(form().resize.quads, level >= SimdLevel::kAvx512Vnni) << "VNNI's vpdpbusd takes quads";
  EXPECT_NE(form().resize.wide.run, nullptr) << "windows of 9 to 64 taps";
  EXPECT_EQ(form().resize.wide.quads, level >= SimdLevel::kAvx512Vnni);
  EXPECT_EQ(form().resize.wide.blocks, vbmi) << "vpermt2b places a block's windows";
  EXPECT_STREQ(form().planes.name, rows);
  EXPECT_EQ(form().gather.rgb_u8 != nullptr, vbmi);
  EXPECT_EQ(form().gather.rgb_f32 != nullptr, vbmi);
  EXPECT_EQ(form().gather.rgb_bf16 != nullptr, vbmi);
#else
  const char* rows = "neon";
  EXPECT_EQ(form().resize.block, 8u);
  EXPECT_EQ(form().resize.quads, level == SimdLevel::kNeonDotprod);
  EXPECT_NE(form().resize.wide.run, nullptr) << "windows of 9 to 64 taps";
  EXPECT_EQ(form().resize.wide.quads, level == SimdLevel::kNeonDotprod);
  EXPECT_STREQ(form().planes.name, rows);
#endif
  EXPECT_STREQ(form().gather.name, rows);
}

// Widths 0 to 70 cover each split's vector width (16, 32) with every tail; the bytes after each
// plane's width stay untouched.
TEST_P(FrameKernels, PlaneSplitsAreThePortableSplits) {
  constexpr size_t kGuard = 64;
  for (const size_t bytes : {3u, 4u}) {
    const SplitFn split = bytes == 3 ? form().planes.rgb : form().planes.rgba;
    const SplitFn oracle = bytes == 3 ? portable().planes.rgb : portable().planes.rgba;
    for (size_t width = 0; width <= 70; ++width) {
      const auto src = random_bytes(width * bytes + 1, static_cast<uint32_t>(width * 7 + bytes));
      std::vector<uint8_t> got(3 * (width + kGuard), 0xA5), want(got.size(), 0xA5);
      const size_t stride = width + kGuard;
      split(src.data(), width, got.data(), got.data() + stride, got.data() + 2 * stride);
      oracle(src.data(), width, want.data(), want.data() + stride, want.data() + 2 * stride);
      ASSERT_EQ(got, want) << bytes << " bytes a pixel, width " << width;
    }
  }
}

// The rows of one merge row from planes of random bytes: patch sizes 14 and 16 (the vector rows)
// and 8 (the portable row inside each form), merges 1 and 2, one or two time steps.
TEST_P(FrameKernels, GatherRowsAreThePortableRows) {
  for (const int64_t P : {8, 14, 16}) {
    for (const int64_t M : {1, 2}) {
      for (const int64_t tps : {1, 2}) {
        const int64_t channels = 3, grid_w = 4 * M, k = channels * tps * P * P;
        const auto width = static_cast<size_t>(grid_w * P);
        const auto planes = random_bytes(static_cast<size_t>(tps * channels * P) * width + 16,
                                         static_cast<uint32_t>(P * 100 + M * 10 + tps));
        const auto rows = static_cast<size_t>(M * grid_w * k) + 32;  // the block's rows and a guard
        for (int64_t mh = 0; mh < M; ++mh) {
          SCOPED_TRACE(::testing::Message() << "P " << P << " M " << M << " tps " << tps << " mh " << mh);
          const MergeRow row{planes.data(), width, P, M, grid_w, channels, tps, mh, k};
          std::vector<float> got(rows, -7.0f), want(rows, -7.0f);
          form().gather.f32(row, got.data());
          portable().gather.f32(row, want.data());
          ASSERT_EQ(got, want);
          std::vector<uint16_t> got16(rows, 0xBEEF), want16(rows, 0xBEEF);
          form().gather.bf16(row, got16.data());
          portable().gather.bf16(row, want16.data());
          ASSERT_EQ(got16, want16);
        }
      }
    }
  }
}

// The rows straight from RGB rows (forms that have them) against the portable rows from the
// portable planes of the same rows: patch sizes 1, 8, 14 and 16 (all the form takes), merges 1
// and 2, one or two time steps, rows at odd addresses; the guard after the block stays untouched.
TEST_P(FrameKernels, RgbRowsAreThePortableRows) {
  const GatherForm& g = form().gather;
  if (g.rgb_u8 == nullptr) GTEST_SKIP() << simd_level_name(GetParam()) << " gathers from planes only";
  for (const int64_t P : {1, 8, 14, 16}) {
    for (const int64_t M : {1, 2}) {
      for (const int64_t tps : {1, 2}) {
        const int64_t channels = 3, grid_w = 3 * M, k = channels * tps * P * P;
        const auto width = static_cast<size_t>(grid_w * P), stride = width * 3 + 5;
        const auto image = random_bytes(static_cast<size_t>(tps * P) * stride + 1, static_cast<uint32_t>(P * 10 + M + tps));
        std::vector<const uint8_t*> rows;
        std::vector<uint8_t> planes(static_cast<size_t>(tps * channels * P) * width + 16);
        for (int64_t t = 0; t < tps; ++t) {
          for (int64_t y = 0; y < P; ++y) {
            rows.push_back(image.data() + 1 + static_cast<size_t>(t * P + y) * stride);
            uint8_t* plane = planes.data() + static_cast<size_t>(t * channels * P + y) * width;
            const size_t plane_stride = static_cast<size_t>(P) * width;
            portable().planes.rgb(rows.back(), width, plane, plane + plane_stride, plane + 2 * plane_stride);
          }
        }
        const auto n = static_cast<size_t>(M * grid_w * k) + 32;  // the block's rows and a guard
        for (int64_t mh = 0; mh < M; ++mh) {
          SCOPED_TRACE(::testing::Message() << "P " << P << " M " << M << " tps " << tps << " mh " << mh);
          const MergeRow from_planes{planes.data(), width, P, M, grid_w, channels, tps, mh, k};
          const RgbMergeRow from_rgb{rows.data(), P, M, grid_w, tps, mh, k};
          std::vector<uint8_t> got8(n, 0xA5), want8(n, 0xA5);
          g.rgb_u8(from_rgb, got8.data());
          emit_rows_u8_portable(from_planes, want8.data());
          ASSERT_EQ(got8, want8);
          std::vector<float> got(n, -7.0f), want(n, -7.0f);
          g.rgb_f32(from_rgb, got.data());
          portable().gather.f32(from_planes, want.data());
          ASSERT_EQ(got, want);
          std::vector<uint16_t> got16(n, 0xBEEF), want16(n, 0xBEEF);
          g.rgb_bf16(from_rgb, got16.data());
          portable().gather.bf16(from_planes, want16.data());
          ASSERT_EQ(got16, want16);
        }
      }
    }
  }
}

std::vector<uint8_t> resize(const ResizeSpec& spec, const std::vector<uint8_t>& src,
                            const patchfuse::FrameKernels& kernels, std::string* kernel,
                            PixelFormat format = PixelFormat::kRgb, int* rgb_rows = nullptr) {
  const Resizer r = Resizer::create(spec, kernels).value();
  *kernel = r.kernel();
  ImageView v;
  v.format = format;
  v.width = spec.src_w;
  v.height = spec.src_h;
  v.planes[0] = src.data();
  v.row_stride[0] = spec.src_w * 3;
  if (rgb_rows != nullptr) *rgb_rows += r.reads_rgb_rows(v);
  std::vector<uint8_t> scratch(r.scratch_bytes(v));
  std::vector<uint8_t> out(spec.out_h * spec.out_w * 3 + 48, 0x5A);  // and a guard
  r.run(v, 0, spec.out_h, scratch.data(), out.data());
  return out;
}

// Pillow's five filters with taps (nearest has none), output widths around the form's block (one
// less, equal, one more, several blocks and a tail), scales 0.3 to 3 and 5.5 (some blocks' windows
// do not fit a vector and take the scalar loop: box at 5.5 in every form), heights whose
// vertical windows have 2 to about 30 taps, and the resized row whole or centre-cropped by 5
// columns a side (CLIP's processors crop; the kept columns then start past the first), from RGB
// and BGR rows.
TEST_P(FrameKernels, ResizesAreThePortableResizes) {
  const size_t block = form().resize.block;
  int vector_runs = 0, rgb_runs = 0;
  for (const Resample filter :
       {Resample::kBox, Resample::kBilinear, Resample::kHamming, Resample::kBicubic, Resample::kLanczos}) {
    for (const size_t out_w : {block - 1, block, block + 1, 3 * block + 5, size_t{97}}) {
      for (const double scale : {0.3, 0.75, 1.0, 1.6, 2.2, 3.0, 5.5}) {
        for (const size_t crop : {0u, 5u}) {
          ResizeSpec spec;
          spec.filter = filter;
          spec.resized_w = out_w + 2 * crop;
          spec.out_w = out_w;
          spec.left = static_cast<int64_t>(crop);
          spec.src_w = std::max<size_t>(1, static_cast<size_t>(static_cast<double>(spec.resized_w) * scale));
          spec.src_h = static_cast<size_t>(9 * scale) + 1 + out_w % 5 * 4;
          spec.resized_h = spec.out_h = 9;
          const auto src = random_bytes(spec.src_h * spec.src_w * 3, static_cast<uint32_t>(out_w * 1000 + scale * 10));
          SCOPED_TRACE(::testing::Message() << resample_name(filter) << " " << spec.src_h << "x" << spec.src_w << " -> "
                                          << spec.out_h << "x" << spec.resized_w << ", " << crop << " cropped a side");
          std::string kernel, oracle_kernel;
          const auto got = resize(spec, src, form(), &kernel);
          const auto want = resize(spec, src, portable(), &oracle_kernel);
          EXPECT_EQ(oracle_kernel, "portable");
          EXPECT_EQ(kernel, form().resize.name);
          vector_runs += kernel != "portable";
          ASSERT_EQ(got, want);
          // BGR: VBMI's form reads those rows as they are, where the portable one converts them.
          ASSERT_EQ(resize(spec, src, form(), &kernel, PixelFormat::kBgr, &rgb_runs),
                    resize(spec, src, portable(), &oracle_kernel, PixelFormat::kBgr))
              << "BGR";
        }
      }
    }
  }
  if (GetParam() != SimdLevel::kBaseline) {
    EXPECT_EQ(vector_runs, 5 * 5 * 7 * 2) << "every case ran the vector form";
  }
  if (form().resize.horizontal_rgb != nullptr) {
    EXPECT_GT(rgb_runs, 0) << "some cases resampled the rows with no plane split";
  }
}

// Coefficients the Resizer may hand a vector pass (|k| < 2^23, resize.cc) beyond what Pillow's
// normalized filters make: per output one extreme tap, among them the first whose quad digits do
// not fit (k = 8355712: the passes must leave it to exact code), the rest random with random
// signs, |k| summing to 2^23 at most so that every sum fits int32 as Pillow's do.
std::vector<int32_t> extreme_taps(size_t outputs, size_t taps, const std::vector<int32_t>& counts, uint32_t seed) {
  static constexpr int32_t kExtremes[] = {(1 << 23) - 1, -(1 << 23), 8355712, 1 << 22, 5};
  std::mt19937 rng(seed);
  std::vector<int32_t> k(outputs * taps, 0);
  for (size_t o = 0; o < outputs; ++o) {
    const auto count = static_cast<size_t>(counts[o]);
    const size_t at = rng() % count;
    const int32_t e = kExtremes[rng() % std::size(kExtremes)];
    int64_t budget = (int64_t{1} << 23) - std::abs(int64_t{e});
    for (size_t i = 0; i < count; ++i) {
      if (i == at) continue;
      const auto v = static_cast<int32_t>(budget > 0 ? static_cast<int64_t>(rng() % static_cast<uint64_t>(budget / 2 + 1)) : 0);
      budget -= v;
      k[o * taps + i] = rng() % 2 ? v : -v;
    }
    k[o * taps + at] = e;
  }
  return k;
}

// A horizontal axis of `outputs` windows `step` pixels apart, every third of `taps` taps and the
// others of 1 to taps, with extreme_taps' coefficients.
AxisFilter extreme_axis(size_t outputs, size_t taps, size_t step, uint32_t seed) {
  AxisFilter h;
  h.taps = taps;
  h.first.resize(outputs);
  h.count.resize(outputs);
  std::mt19937 rng(seed);
  for (size_t c = 0; c < outputs; ++c) {
    h.first[c] = static_cast<int32_t>(c * step);
    h.count[c] = static_cast<int32_t>(c % 3 == 0 ? taps : 1 + rng() % taps);
  }
  h.fixed = extreme_taps(outputs, taps, h.count, seed);
  return h;
}

// The vertical pass straight, against the portable one: 1 to kPilMaxTaps taps (whole quads and
// pairs, and not), rows of 1 to 200 values (whole 64-value steps and tails), extreme coefficients.
TEST_P(FrameKernels, VerticalPassTakesEveryCoefficientTheResizerPasses) {
  if (GetParam() == SimdLevel::kBaseline) GTEST_SKIP() << "the portable form has no vertical kernel";
  static_assert(kPilMaxTaps == 256, "the counts below end at kPilMaxTaps");
  for (const int32_t count : {1, 2, 3, 4, 5, 7, 8, 9, 16, 17, 33, 64, 65, 73, 255, 256}) {
    for (const size_t n : {size_t{1}, size_t{63}, size_t{64}, size_t{65}, size_t{200}}) {
      for (uint32_t trial = 0; trial < 6; ++trial) {
        const auto seed = static_cast<uint32_t>(count * 1000 + n * 10 + trial);
        const auto pixels = random_bytes(static_cast<size_t>(count) * n, seed);
        std::vector<const uint8_t*> rows;
        for (int32_t i = 0; i < count; ++i) rows.push_back(pixels.data() + static_cast<size_t>(i) * n);
        const auto k = extreme_taps(1, static_cast<size_t>(count), {count}, seed);
        std::vector<uint8_t> got(n + 64, 0xA5), want(n + 64, 0xA5);  // and a guard
        form().resize.vertical(rows.data(), k.data(), count, n, got.data());
        pil_vertical_from_portable(rows.data(), k.data(), count, 0, n, want.data());
        ASSERT_EQ(got, want) << count << " taps, " << n << " values, trial " << trial;
      }
    }
  }
}

// The horizontal passes (one row, and two where the form has them) straight from their tables,
// against the 8-tap portable loop: 1 to 8 taps an output at consecutive and spread positions,
// blocks and a tail, extreme coefficients (a block whose digits do not fit runs the exact loop).
TEST_P(FrameKernels, HorizontalPassTakesEveryCoefficientTheResizerPasses) {
  if (GetParam() == SimdLevel::kBaseline) GTEST_SKIP() << "the portable form has no horizontal kernel";
  const ResizeForm& f = form().resize;
  const size_t outputs = 5 * f.block + 3;
  for (const size_t taps : {1u, 2u, 3u, 4u, 5u, 8u}) {
    for (const size_t step : {1u, 2u}) {
      for (uint32_t trial = 0; trial < 4; ++trial) {
        const auto seed = static_cast<uint32_t>(taps * 100 + step * 10 + trial);
        const AxisFilter h = extreme_axis(outputs, taps, step, seed);
        std::vector<int32_t> k8(outputs * kPilKernelTaps, 0);
        for (size_t c = 0; c < outputs; ++c) std::copy_n(&h.fixed[c * taps], taps, &k8[c * kPilKernelTaps]);
        TapTables tables;
        build_tap_tables(h, 0, outputs, f, 1, tables);
        const size_t stride = outputs * step + kPilKernelTaps + kPlaneSlack;
        const auto planes = random_bytes(6 * stride, seed);
        SCOPED_TRACE(::testing::Message() << taps << " taps, step " << step << ", trial " << trial);
        std::vector<uint8_t> want(3 * outputs + 64, 0xA5), want2(want.size(), 0xA5);  // and a guard
        pil_horizontal_k8_portable(planes.data(), stride, h.first.data(), k8.data(), 0, outputs, want.data());
        pil_horizontal_k8_portable(planes.data() + 3 * stride, stride, h.first.data(), k8.data(), 0, outputs, want2.data());
        std::vector<uint8_t> got(want.size(), 0xA5), got2(want.size(), 0xA5);
        f.horizontal(planes.data(), stride, tables.view(), h.first.data(), k8.data(), 0, outputs, got.data());
        ASSERT_EQ(got, want);
        if (f.horizontal2 == nullptr) continue;
        std::fill(got.begin(), got.end(), 0xA5);
        f.horizontal2(planes.data(), stride, tables.view(), h.first.data(), k8.data(), 0, outputs, got.data(), got2.data());
        ASSERT_EQ(got, want) << "two rows: the first";
        ASSERT_EQ(got2, want2) << "two rows: the second";
      }
    }
  }
}

// The RGB rows' pass (where the form has it) straight from its tables at 3 bytes a pixel, against the
// 8-tap portable loop over the same pixels as planes: RGB and BGR, one row and two, blocks whose
// windows fit 21 pixels (step 1) and do not (step 2: the scalar loop), extreme coefficients (most
// blocks have one whose digits do not fit: the scalar loop) and Pillow-sized ones, two rows that
// end where the last window does, the second where an unreadable page begins (its last block's
// load is masked; a byte read past it faults), read in one call and the second alone, with no
// tail and with a padded last block of 3 and of 7 outputs (the block before it stores 48 bytes,
// or 64 that the last overwrites).
TEST_P(FrameKernels, RgbRowPassIsThePlanesPass) {
  const ResizeForm& f = form().resize;
  if (f.horizontal_rgb == nullptr) GTEST_SKIP() << simd_level_name(GetParam()) << " resizes from planes only";
  size_t vector_blocks = 0;
  for (const size_t outputs : {5 * f.block, 5 * f.block + 3, 5 * f.block + 7}) {
    for (const size_t taps : {1u, 2u, 3u, 4u, 5u, 8u}) {
      for (const size_t step : {1u, 2u}) {
        for (const bool extreme : {true, false}) {
          const auto seed = static_cast<uint32_t>(outputs * 1000 + taps * 10 + step);
          AxisFilter h = extreme_axis(outputs, taps, step, seed);
          if (!extreme) {  // |k| < 2^22, a normalized filter's range
            for (int32_t& k : h.fixed) k = k / 2;
          }
          std::vector<int32_t> k8(outputs * kPilKernelTaps, 0);
          size_t width = 0;
          for (size_t c = 0; c < outputs; ++c) {
            std::copy_n(&h.fixed[c * taps], taps, &k8[c * kPilKernelTaps]);
            width = std::max(width, static_cast<size_t>(h.first[c] + h.count[c]));
          }
          TapTables tables;
          build_tap_tables(h, 0, outputs, f, 3, tables);
          vector_blocks += static_cast<size_t>(std::count(tables.ok.begin(), tables.ok.end(), 1));
          const size_t stride = 3 * width;  // two rows, the second before the guard page
          const std::vector<uint8_t> bytes = random_bytes(2 * stride, seed);
          const testing::BytesBeforeGuardPage guarded(bytes.data(), bytes.size());
          for (const size_t red : {0u, 2u}) {
            SCOPED_TRACE(::testing::Message() << outputs << " outputs, " << taps << " taps, step " << step
                                            << (extreme ? ", extreme" : "") << (red ? ", BGR" : ", RGB"));
            std::vector<uint8_t> want[2], got[2];
            for (size_t r = 0; r < 2; ++r) {
              const size_t plane = width + kPilKernelTaps + kPlaneSlack;
              std::vector<uint8_t> planes(3 * plane, 0);
              for (size_t x = 0; x < width; ++x) {
                for (size_t ch = 0; ch < 3; ++ch) {
                  planes[ch * plane + x] = bytes[r * stride + 3 * x + (red == 0 ? ch : 2 - ch)];
                }
              }
              want[r].assign(3 * outputs + 64, 0xA5);  // and a guard
              pil_horizontal_k8_portable(planes.data(), plane, h.first.data(), k8.data(), 0, outputs, want[r].data());
              got[r].assign(want[r].size(), 0xA5);
            }
            uint8_t* dst[2] = {got[0].data(), got[1].data()};
            f.horizontal_rgb(guarded.data(), stride, 2, width, red, tables.view(), h.first.data(), k8.data(), 0,
                             outputs, dst);
            ASSERT_EQ(got[0], want[0]) << "two rows a call: the first";
            ASSERT_EQ(got[1], want[1]) << "two rows a call: the second";
            got[1].assign(want[1].size(), 0xA5);
            f.horizontal_rgb(guarded.data() + stride, stride, 1, width, red, tables.view(), h.first.data(), k8.data(),
                             0, outputs, &dst[1]);
            ASSERT_EQ(got[1], want[1]) << "one row a call";
          }
        }
      }
    }
  }
  EXPECT_GT(vector_blocks, 0u) << "some blocks ran the vector loop";
}

// Pillow's horizontal pass over outputs [0, n) of axis h, summed here output by output (Resample.c's
// ImagingResampleHorizontal_8bpc), from R, G, B planes `stride` bytes apart; 64 guard bytes follow.
std::vector<uint8_t> pillow_row(const std::vector<uint8_t>& planes, size_t stride, const AxisFilter& h, size_t n) {
  std::vector<uint8_t> want(3 * n + 64, 0xA5);
  for (size_t c = 0; c < n; ++c) {
    for (size_t ch = 0; ch < 3; ++ch) {
      int32_t sum = 1 << (kPilPrecisionBits - 1);
      for (size_t i = 0; i < static_cast<size_t>(h.count[c]); ++i) {
        sum += planes[ch * stride + static_cast<size_t>(h.first[c]) + i] * h.fixed[c * h.taps + i];
      }
      want[3 * c + ch] = pil_clip8(sum);
    }
  }
  return want;
}

// The wide horizontal pass (windows of 9 to kPilMaxTaps taps, forms that have it) straight from its
// tables, against Pillow's sum computed here output by output: 1 to 16 chunks of 16 taps (up to 4
// unrolled, more in a loop; one tap more is the scalar pass's), full and clipped
// windows, widths with a partial last block, extreme coefficients whose digits fit, windows 1, 3
// and 9 pixels apart (VBMI's blocks form takes some, its quads form the others: both run). The
// planes end one pixel past the last window's first, as a window clipped at the right edge does,
// so that ASan sees any read past their slack. Quad tables refuse a filter with one coefficient
// whose top digit does not fit (8355712) and take 8355711; pair tables take both. Then the blocks
// form's bounds (windows ending at their 64th byte, and one past it), also for kept columns that
// start past the first.
TEST_P(FrameKernels, WidePassTakesEveryCoefficientItsTablesTake) {
  const ResizeForm& f = form().resize;
  if (f.wide.run == nullptr) GTEST_SKIP() << simd_level_name(GetParam()) << " has no wide horizontal pass";
  size_t by_blocks = 0, by_chunks = 0;
  static_assert(kPilMaxTaps == 256, "the tap counts below end at kPilMaxTaps");
  for (const size_t taps : {9u, 16u, 17u, 33u, 64u, 65u, 77u, 256u}) {
    for (const size_t outputs : {1u, 16u, 21u, 22u, 37u}) {
      for (const size_t step : {1u, 3u, 9u}) {
        const auto seed = static_cast<uint32_t>(taps * 1000 + outputs * 10 + step);
        AxisFilter h = extreme_axis(outputs, taps, step, seed);
        for (int32_t& k : h.fixed) k = std::min(k, 8355711);  // every top digit fits
        SCOPED_TRACE(::testing::Message() << taps << " taps, " << outputs << " outputs, step " << step);
        WideTables tables;
        ASSERT_TRUE(build_wide_tables(h, 0, outputs, f.wide, tables));
        ++(tables.groups > 0 ? by_blocks : by_chunks);
        const size_t stride = step * (outputs - 1) + 1 + kPlaneSlack;
        const auto planes = random_bytes(3 * stride, seed);
        const auto want = pillow_row(planes, stride, h, outputs);
        std::vector<uint8_t> got(want.size(), 0xA5);
        f.wide.run(planes.data(), stride, tables.view(), outputs, got.data());
        ASSERT_EQ(got, want);
        h.fixed[0] = 8355712;
        EXPECT_EQ(build_wide_tables(h, 0, outputs, f.wide, tables), !f.wide.quads) << "quads: a top digit of 128";
        h.fixed[0] = 8355711;
        EXPECT_TRUE(build_wide_tables(h, 0, outputs, f.wide, tables));
      }
    }
  }
  WideTables too_wide;
  EXPECT_FALSE(build_wide_tables(extreme_axis(16, kPilMaxTaps + 1, 1, 1), 0, 16, f.wide, too_wide))
      << "past kPilMaxTaps: the scalar pass";
  EXPECT_GT(by_chunks, 0u);
  EXPECT_EQ(by_blocks > 0, f.wide.blocks) << "the blocks form where the form takes it and the halves fit";
  // The blocks form's bounds: box filters 7 pixels apart, each half's last window ending at its
  // 64th byte (15 taps: two windows a block) or one byte past it (16: four), each quarter's at its
  // 64th (43: four) or one past it (44: chunks).
  for (const auto& [taps, windows] : {std::pair<size_t, size_t>{15, 2}, {16, 4}, {43, 4}, {44, 0}}) {
    AxisFilter h;
    h.taps = taps;
    for (int32_t c = 0; c < 16; ++c) {
      h.first.push_back(7 * c);
      h.count.push_back(static_cast<int32_t>(taps));
    }
    h.fixed.assign(16 * taps, (1 << kPilPrecisionBits) / static_cast<int32_t>(taps));
    WideTables tables;
    ASSERT_TRUE(build_wide_tables(h, 0, 16, f.wide, tables));
    EXPECT_EQ(tables.windows, f.wide.blocks ? windows : 0) << taps << " taps";
    EXPECT_EQ(tables.groups > 0, tables.windows > 0);
    const size_t stride = 7 * 15 + 1 + kPlaneSlack;
    const auto planes = random_bytes(3 * stride, static_cast<uint32_t>(taps));
    const auto want = pillow_row(planes, stride, h, 16);
    std::vector<uint8_t> got(want.size(), 0xA5);
    f.wide.run(planes.data(), stride, tables.view(), 16, got.data());
    EXPECT_EQ(got, want) << taps << " taps";
  }
  // The same from the second column on (a crop): the eighth kept column, 16 taps, ends a byte
  // past its window; the column before it in the axis has 15, which would fit.
  AxisFilter h;
  h.taps = 16;
  for (int32_t c = 0; c < 17; ++c) {
    h.first.push_back(7 * std::max(c - 1, 0));
    h.count.push_back(c == 8 ? 16 : 15);
    for (int32_t i = 0; i < 16; ++i) h.fixed.push_back(i < h.count.back() ? (1 << kPilPrecisionBits) / 16 : 0);
  }
  WideTables tables;
  ASSERT_TRUE(build_wide_tables(h, 1, 17, f.wide, tables));
  EXPECT_EQ(tables.windows, f.wide.blocks ? 4u : 0u) << "the kept columns' windows decide";
}

std::string level_name(const ::testing::TestParamInfo<SimdLevel>& info) { return simd_level_name(info.param); }
INSTANTIATE_TEST_SUITE_P(Levels, FrameKernels, ::testing::ValuesIn(kSimdLevels), level_name);

}  // namespace
}  // namespace patchfuse
