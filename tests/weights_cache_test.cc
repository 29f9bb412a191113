// The packed-weights cache (pf_session_options.weights_cache): written by a first session, mapped
// by the next with the same output bit for bit, on every backend and precision this CPU has; and
// never trusted when it should not be: another model's weights (same shapes), other threads, a
// foreign, truncated or corrupt file are each reported and rebuilt, giving what a session without
// a cache gives. The file holds one model's kernels, so it does not grow across models.
#include <gtest/gtest.h>

#include <fstream>
#include <random>

#include "converter/convert.h"
#include "patchfuse/patchfuse.hpp"
#include "runtime/model/model_file.h"
#include "tests/support/test_util.h"
#include "weights_cache_generated.h"

namespace patchfuse {
namespace {

constexpr int64_t kH = 90, kW = 140;  // resized to the processor's size inside

std::string convert_fixture(const testing::TempDir& tmp, const std::string& name) {
  ConvertOptions o;
  o.input = std::string(PATCHFUSE_ENCODER_INPUT_DIR) + "/qwen3_vl";  // has preprocessing
  o.output = tmp / name;
  auto r = convert_checkpoint(o);
  EXPECT_TRUE(r.ok()) << r.error().message;
  return o.output;
}

// A copy of `from` whose first weight value differs: another model of the same shapes and dtype.
std::string with_other_weights(const std::string& from, const std::string& to) {
  std::vector<uint8_t> bytes = testing::read_bytes(from);
  auto m = open_model_file(from);
  EXPECT_TRUE(m.ok());
  const size_t offset = static_cast<size_t>(m->view.modules[0].weight.data - m->file.data());
  bytes[offset + 1] ^= 0x40;
  testing::write_bytes(to, bytes);
  return to;
}

std::vector<uint8_t> rgb(uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<uint8_t> v(static_cast<size_t>(kH * kW * 3));
  for (uint8_t& b : v) b = static_cast<uint8_t>(rng() >> 24);
  return v;
}

struct Ran {
  std::vector<float> y;
  std::string report;  // pf_session_info.weights_cache
};

// A fresh session on `model_path` with `options` (and `cache`, unless empty) runs one image.
Ran run_once(const std::string& model_path, pf_session_options o, const std::string& cache) {
  auto model = Model::open_file(model_path);
  EXPECT_TRUE(model) << model.error();
  o.weights_cache = cache.empty() ? nullptr : cache.c_str();
  auto s = Session::create(*model, 0, o);
  EXPECT_TRUE(s) << s.error();
  if (!s) return {};
  const std::vector<uint8_t> pixels = rgb(7);
  pf_image image;
  pf_image_packed(&image, PF_PIXEL_RGB, pixels.data(), kW, kH);
  auto grid = s->images_grid(1, kH, kW);
  auto rows = s->output_rows(*grid);
  Ran r;
  r.y.resize(static_cast<size_t>(*rows * model->module(0).embed_dim));
  EXPECT_EQ(s->run_image(image, r.y.data()), "");
  r.report = s->info().weights_cache;
  return r;
}

pf_session_options options(pf_backend b, pf_precision p) {
  pf_session_options o = default_options();
  o.backend = b;
  o.precision = p;
  return o;
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

TEST(WeightsCache, WrittenThenMappedGivesTheSameOutputOnEveryBackend) {
  testing::TempDir tmp;
  const std::string model = convert_fixture(tmp, "m.pfb");
  int ran = 0;
  for (pf_backend b : {PF_BACKEND_REFERENCE, PF_BACKEND_ONEDNN, PF_BACKEND_XNNPACK, PF_BACKEND_GEMMLOWP}) {
    for (pf_precision p : {PF_PRECISION_F32, PF_PRECISION_BF16, PF_PRECISION_F16, PF_PRECISION_INT8}) {
      {
        auto m = Model::open_file(model);
        if (!Session::create(*m, 0, options(b, p))) continue;  // not on this CPU or build
      }
      SCOPED_TRACE(std::string(pf_backend_name(b)) + " precision " + std::to_string(p));
      const std::string cache = tmp / ("cache-" + std::to_string(b) + "-" + std::to_string(p));
      const Ran plain = run_once(model, options(b, p), "");
      const Ran first = run_once(model, options(b, p), cache);
      EXPECT_EQ(first.report, "still: written (no cache file)");
      const Ran second = run_once(model, options(b, p), cache);
      EXPECT_EQ(second.report, "still: loaded");
      EXPECT_EQ(first.y, plain.y) << "writing the cache changes nothing";
      EXPECT_EQ(second.y, plain.y) << "the mapped kernel computes exactly what a packed one does";
      ++ran;
    }
  }
  EXPECT_GE(ran, 2) << "the reference backend in f32 and int8 at least";
}

// pixel_values rows: oneDNN keeps its packed layout ("rows"); a backend that packs from the
// model's own weights has nothing to keep.
TEST(WeightsCache, PixelValuesKernelIsCachedWhereTheBackendTakesItsPackingBack) {
  testing::TempDir tmp;
  const std::string model_path = convert_fixture(tmp, "m.pfb");
  auto model = Model::open_file(model_path);
  const std::string cache = tmp / "rows.cache";
  const pf_grid grid{1, 4, 6};
  const std::vector<float> x(24 * static_cast<size_t>(model->module(0).patch_volume), 0.5f);
  for (pf_backend b : {PF_BACKEND_ONEDNN, PF_BACKEND_REFERENCE}) {
    std::vector<float> y[2];
    for (int i = 0; i < 2; ++i) {
      pf_session_options o = options(b, PF_PRECISION_F32);
      o.weights_cache = cache.c_str();
      auto s = Session::create(*model, 0, o);
      if (!s) break;  // oneDNN: x86-64 only
      y[i].resize(24 * static_cast<size_t>(model->module(0).embed_dim));
      ASSERT_EQ(s->run_grid(x.data(), grid, y[i].data()), "");
      const std::string report = s->info().weights_cache;
      if (b == PF_BACKEND_REFERENCE) {
        EXPECT_TRUE(contains(report, "rows: nothing to keep (reference packs from the model's own weights)")) << report;
      } else {
        EXPECT_TRUE(contains(report, i == 0 ? "rows: written" : "rows: loaded")) << report;
      }
    }
    EXPECT_EQ(y[0], y[1]);
  }
}

TEST(WeightsCache, AnotherModelOrThreadCountIsRebuiltAndTheFileDoesNotGrow) {
  testing::TempDir tmp;
  const std::string a = convert_fixture(tmp, "a.pfb");
  const std::string b = with_other_weights(a, tmp / "b.pfb");
  const std::string cache = tmp / "w.cache";
  const pf_session_options o = options(PF_BACKEND_REFERENCE, PF_PRECISION_F32);
  run_once(a, o, cache);
  const size_t one_model = testing::read_bytes(cache).size();
  const Ran other = run_once(b, o, cache);
  EXPECT_TRUE(contains(other.report, "still: written (stale: made for 'weights ")) << other.report;
  EXPECT_EQ(other.y, run_once(b, o, "").y) << "another model's kernel is never used";
  EXPECT_EQ(testing::read_bytes(cache).size(), one_model) << "the file holds one model's kernels";
  const Ran back = run_once(a, o, cache);
  EXPECT_TRUE(contains(back.report, "stale")) << "the file now holds b's: " << back.report;

  pf_session_options two = o;
  two.threads = 2;
  const Ran threads = run_once(a, two, cache);
  EXPECT_TRUE(contains(threads.report, "stale: made for 'threads 1', this session has 'threads 2'")) << threads.report;
}

TEST(WeightsCache, ForeignTruncatedOrCorruptFilesAreRefusedAndRebuilt) {
  testing::TempDir tmp;
  const std::string model = convert_fixture(tmp, "m.pfb");
  const pf_session_options o = options(PF_BACKEND_REFERENCE, PF_PRECISION_F32);
  const std::vector<float> want = run_once(model, o, "").y;
  const std::string cache = tmp / "w.cache";
  run_once(model, o, cache);
  const std::vector<uint8_t> good = testing::read_bytes(cache);

  const auto rebuilt = [&](const std::vector<uint8_t>& file, const std::string& why) {
    testing::write_bytes(cache, file);
    const Ran r = run_once(model, o, cache);
    EXPECT_EQ(r.report, "still: written (" + why + ")");
    EXPECT_EQ(r.y, want);
    EXPECT_EQ(testing::read_bytes(cache), good) << "rewritten whole";
  };
  rebuilt(testing::read_bytes(model), "not a weights cache (a foreign, truncated or damaged file)");
  rebuilt(std::vector<uint8_t>(good.begin(), good.begin() + static_cast<std::ptrdiff_t>(good.size() / 2)),
          "not a weights cache (a foreign, truncated or damaged file)");
  rebuilt({}, "not a weights cache (a foreign, truncated or damaged file)");
  // One bit of a blob's bytes: the structure still verifies, the checksum does not.
  std::vector<uint8_t> corrupt = good;
  const cache::Entry* entry = cache::GetWeightsCache(corrupt.data())->entries()->Get(0);
  const auto* blob = entry->blobs()->Get(entry->blobs()->size() - 1)->bytes();
  corrupt[static_cast<size_t>(blob->data() - corrupt.data()) + blob->size() / 2] ^= 1;
  rebuilt(corrupt, "corrupt (checksum mismatch)");
}

TEST(WeightsCache, AnUnwritableCacheDoesNotFailTheSessionAndAnEmptyPathIsRefused) {
  testing::TempDir tmp;
  const std::string model_path = convert_fixture(tmp, "m.pfb");
  const pf_session_options o = options(PF_BACKEND_REFERENCE, PF_PRECISION_F32);
  const Ran r = run_once(model_path, o, tmp / "no-such-dir/w.cache");
  EXPECT_TRUE(contains(r.report, "still: not written (")) << r.report;
  EXPECT_TRUE(contains(r.report, "no-such-dir")) << r.report;
  EXPECT_EQ(r.y, run_once(model_path, o, "").y);
  // Not a file: /dev/null was written in place (before that, renamed over), and a FIFO waited for
  // a reader (the same rule; not run here, where breaking it would hang the test).
  const Ran null = run_once(model_path, o, "/dev/null");
  EXPECT_TRUE(contains(null.report, "still: not written (/dev/null: not a regular file, so no cache is written there)"))
      << null.report;
  EXPECT_EQ(null.y, r.y);

  auto model = Model::open_file(model_path);
  pf_session_options empty = o;
  empty.weights_cache = "";
  pf_session* s = nullptr;
  EXPECT_EQ(pf_session_create(model->get(), 0, &empty, &s), PF_INVALID_ARGUMENT);
  EXPECT_TRUE(contains(pf_last_error(), "weights_cache is \"\"")) << pf_last_error();
}

}  // namespace
}  // namespace patchfuse
