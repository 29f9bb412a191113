// The C ABI: opening (file and memory), module listing, option checking, argument checking, and
// that bad models and bad arguments give a status and a message, never a crash.
#include "patchfuse/patchfuse.h"

#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <string>

#include "tests/support/model_builder.h"
#include "tests/support/test_util.h"

namespace patchfuse {
namespace {

using testing::TestModule;

std::vector<uint8_t> small_model(Layout layout = Layout::kFusedLinear, std::vector<int64_t> stride = {}) {
  TestModule spec{"m", 3, {2, 14, 14}, 16, true, DType::kBF16, layout, stride};
  return testing::make_model(spec, 7);
}

TEST(CApi, OpenFileListAndRun) {
  testing::TempDir dir;
  testing::write_bytes(dir / "m.pfb", small_model());
  pf_model* model = nullptr;
  ASSERT_EQ(pf_model_open_file((dir / "m.pfb").c_str(), &model), PF_OK) << pf_last_error();
  size_t count = 0;
  ASSERT_EQ(pf_model_module_count(model, &count), PF_OK);
  EXPECT_EQ(count, 1u);
  pf_module_info info;
  ASSERT_EQ(pf_model_get_module(model, 0, &info), PF_OK);
  EXPECT_STREQ(info.path, "visual.patch_embed");
  EXPECT_STREQ(info.family, "patch_embeddings");
  EXPECT_EQ(info.layout, PF_LAYOUT_FUSED_LINEAR);
  EXPECT_EQ(info.dtype, PF_DTYPE_BF16);
  EXPECT_EQ(info.spatial_rank, 3);
  EXPECT_EQ(info.kernel[1], 14);
  EXPECT_EQ(info.stride[0], 2);
  EXPECT_EQ(info.patch_volume, 1176);
  EXPECT_EQ(info.embed_dim, 16);
  EXPECT_EQ(info.has_bias, 1);
  EXPECT_EQ(info.eligible, 1);
  size_t index = 9;
  EXPECT_EQ(pf_model_find_module(model, "visual.patch_embed", &index), PF_OK);
  EXPECT_EQ(index, 0u);
  EXPECT_EQ(pf_model_find_module(model, "audio.patch_embed", &index), PF_INVALID_ARGUMENT);
  EXPECT_NE(std::string(pf_last_error()).find("it has: visual.patch_embed"), std::string::npos);

  pf_session* session = nullptr;
  ASSERT_EQ(pf_session_create(model, 0, nullptr, &session), PF_OK) << pf_last_error();
  pf_session_info si;
  ASSERT_EQ(pf_session_get_info(session, &si), PF_OK);
  EXPECT_NE(si.backend, PF_BACKEND_AUTO);
  EXPECT_NE(si.precision, PF_PRECISION_AUTO);
  EXPECT_EQ(si.path, PF_PATH_FUSED);
  EXPECT_GT(std::strlen(si.detail), 0u);
  ASSERT_NE(si.isa, nullptr);  // oneDNN names its ISA (OneDnnIsa tests which); others say ""
  EXPECT_EQ(si.backend == PF_BACKEND_ONEDNN, std::strlen(si.isa) > 0) << si.isa;
  const std::vector<float> x = testing::random_floats(3 * 1176, 1);
  std::vector<float> y(3 * 16);
  EXPECT_EQ(pf_session_run(session, x.data(), 3, y.data()), PF_OK) << pf_last_error();
  pf_session_release(session);
  pf_model_release(model);
}

TEST(CApi, AutoBackendFollowsTheArchitecture) {
  const auto bytes = small_model();
  pf_model* model = nullptr;
  ASSERT_EQ(pf_model_open_memory(bytes.data(), bytes.size(), &model), PF_OK);
  pf_session* s = nullptr;
  ASSERT_EQ(pf_session_create(model, 0, nullptr, &s), PF_OK);
  pf_session_info si;
  pf_session_get_info(s, &si);
#if defined(__x86_64__)
  EXPECT_EQ(si.backend, pf_backend_available(PF_BACKEND_ONEDNN) ? PF_BACKEND_ONEDNN : PF_BACKEND_XNNPACK);
#elif defined(__aarch64__) || defined(__arm__)
  EXPECT_EQ(si.backend, PF_BACKEND_XNNPACK);
#endif
  pf_session_release(s);
  pf_model_release(model);
}

TEST(CApi, UnavailableBackendIsAnErrorNotAFallback) {
  const auto bytes = small_model();
  pf_model* model = nullptr;
  ASSERT_EQ(pf_model_open_memory(bytes.data(), bytes.size(), &model), PF_OK);
  for (pf_backend b : {PF_BACKEND_REFERENCE, PF_BACKEND_ONEDNN, PF_BACKEND_XNNPACK}) {
    pf_session_options o;
    pf_session_options_init(&o);
    o.backend = b;
    pf_session* s = nullptr;
    const pf_status st = pf_session_create(model, 0, &o, &s);
    if (pf_backend_available(b)) {
      EXPECT_EQ(st, PF_OK) << pf_backend_name(b) << ": " << pf_last_error();
    } else {
      EXPECT_EQ(st, PF_UNSUPPORTED) << pf_backend_name(b);
      EXPECT_NE(std::string(pf_last_error()).find(pf_backend_name(b)), std::string::npos) << pf_last_error();
      EXPECT_EQ(s, nullptr);
    }
    pf_session_release(s);
  }
  EXPECT_EQ(pf_backend_available(PF_BACKEND_REFERENCE), 1);
  pf_model_release(model);
}

TEST(CApi, PrecisionNotOfferedIsAnErrorAndAutoSaysWhyItWidened) {
  const auto bytes = small_model();  // bf16 weights
  pf_model* model = nullptr;
  ASSERT_EQ(pf_model_open_memory(bytes.data(), bytes.size(), &model), PF_OK);
  pf_session_options o;
  pf_session_options_init(&o);
  o.backend = PF_BACKEND_REFERENCE;
  o.precision = PF_PRECISION_BF16;
  pf_session* s = nullptr;
  EXPECT_EQ(pf_session_create(model, 0, &o, &s), PF_UNSUPPORTED);
  EXPECT_NE(std::string(pf_last_error()).find("precision bf16 is not available on backend reference"), std::string::npos)
      << pf_last_error();
  o.precision = PF_PRECISION_AUTO;
  ASSERT_EQ(pf_session_create(model, 0, &o, &s), PF_OK);
  pf_session_info si;
  pf_session_get_info(s, &si);
  EXPECT_EQ(si.precision, PF_PRECISION_F32);
  EXPECT_NE(std::string(si.note).find("model weights are BF16"), std::string::npos) << si.note;
  pf_session_release(s);
  pf_model_release(model);
}

TEST(CApi, OriginalLayoutIsFusedAtSessionCreationAndIneligibleIsListedButRefused) {
  const auto original = small_model(Layout::kOriginalConv);
  pf_model* model = nullptr;
  ASSERT_EQ(pf_model_open_memory(original.data(), original.size(), &model), PF_OK);
  pf_session* s = nullptr;
  EXPECT_EQ(pf_session_create(model, 0, nullptr, &s), PF_OK) << pf_last_error();
  pf_session_release(s);
  pf_model_release(model);

  const auto ineligible = small_model(Layout::kOriginalConv, {1, 14, 14});
  ASSERT_EQ(pf_model_open_memory(ineligible.data(), ineligible.size(), &model), PF_OK) << pf_last_error();
  pf_module_info info;
  ASSERT_EQ(pf_model_get_module(model, 0, &info), PF_OK);
  EXPECT_EQ(info.eligible, 0);
  pf_session_options o;
  pf_session_options_init(&o);
  for (pf_path path : {PF_PATH_FUSED, PF_PATH_UNFUSED}) {
    o.path = path;
    EXPECT_EQ(pf_session_create(model, 0, &o, &s), PF_UNSUPPORTED);
    EXPECT_NE(std::string(pf_last_error()).find("stride (1,14,14) must equal kernel (2,14,14)"), std::string::npos);
  }
  pf_model_release(model);
}

TEST(CApi, BadArguments) {
  const auto bytes = small_model();
  pf_model* model = nullptr;
  EXPECT_EQ(pf_model_open_file(nullptr, &model), PF_INVALID_ARGUMENT);
  EXPECT_EQ(pf_model_open_memory(nullptr, 10, &model), PF_INVALID_ARGUMENT);
  EXPECT_EQ(pf_model_open_memory(bytes.data(), bytes.size(), nullptr), PF_INVALID_ARGUMENT);
  ASSERT_EQ(pf_model_open_memory(bytes.data(), bytes.size(), &model), PF_OK);
  pf_module_info info;
  EXPECT_EQ(pf_model_get_module(model, 1, &info), PF_INVALID_ARGUMENT);
  EXPECT_NE(std::string(pf_last_error()).find("index 1 is out of range"), std::string::npos);
  pf_session* s = nullptr;
  EXPECT_EQ(pf_session_create(model, 3, nullptr, &s), PF_INVALID_ARGUMENT);
  pf_session_options o;
  pf_session_options_init(&o);
  o.threads = 0;
  EXPECT_EQ(pf_session_create(model, 0, &o, &s), PF_INVALID_ARGUMENT);
  EXPECT_NE(std::string(pf_last_error()).find("threads 0 must be between 1 and 1024"), std::string::npos);
  pf_session_options_init(&o);
  o.backend = static_cast<pf_backend>(42);
  EXPECT_EQ(pf_session_create(model, 0, &o, &s), PF_INVALID_ARGUMENT);
  pf_session_options_init(&o);
  o.precision = static_cast<pf_precision>(-1);
  EXPECT_EQ(pf_session_create(model, 0, &o, &s), PF_INVALID_ARGUMENT);

  ASSERT_EQ(pf_session_create(model, 0, nullptr, &s), PF_OK);
  std::vector<float> x(2 * 1176, 0.5f), y(2 * 16);
  EXPECT_EQ(pf_session_run(s, x.data(), 0, y.data()), PF_INVALID_ARGUMENT);
  EXPECT_NE(std::string(pf_last_error()).find("N = 0"), std::string::npos);
  EXPECT_EQ(pf_session_run(s, nullptr, 2, y.data()), PF_INVALID_ARGUMENT);
  EXPECT_EQ(pf_session_run(s, x.data(), 2, nullptr), PF_INVALID_ARGUMENT);
  EXPECT_EQ(pf_session_run(nullptr, x.data(), 2, y.data()), PF_INVALID_ARGUMENT);
  EXPECT_EQ(pf_session_run(s, x.data(), size_t{1} << 31, y.data()), PF_INVALID_ARGUMENT);
  EXPECT_NE(std::string(pf_last_error()).find("at most 2^31 - 1"), std::string::npos) << pf_last_error();
  // 2^31 - 1 rows pass that rule; in a 32-bit address space (armhf) their floats overflow it. (On
  // 64 bits they are a legal size whose buffers would not fit: out of memory, or an abort under ASan.)
  if (sizeof(size_t) == 4) {
    EXPECT_EQ(pf_session_run(s, x.data(), INT32_MAX, y.data()), PF_INVALID_ARGUMENT);
    EXPECT_NE(std::string(pf_last_error()).find("overflow the address space"), std::string::npos) << pf_last_error();
  }
  EXPECT_EQ(pf_session_run(s, x.data(), 2, x.data() + 5), PF_INVALID_ARGUMENT);  // overlapping
  EXPECT_EQ(pf_session_run(s, x.data(), 2, y.data()), PF_OK);
  pf_session_release(s);
  pf_model_release(model);
  pf_session_release(nullptr);
  pf_model_release(nullptr);
  EXPECT_STREQ(pf_status_name(PF_INVALID_MODEL), "invalid model");
  EXPECT_STREQ(pf_backend_name(PF_BACKEND_XNNPACK), "xnnpack");
  EXPECT_STREQ(pf_version(), PF_VERSION_STRING);  // the loaded library is the one compiled against
  EXPECT_EQ(PF_VERSION_NUMBER, PF_MAKE_VERSION(PF_VERSION_MAJOR, PF_VERSION_MINOR, PF_VERSION_PATCH));
}

// The header asks for 8-byte-aligned caller memory; anything else is a bad argument, not a model
// read with misaligned loads.
TEST(CApi, MisalignedMemoryIsAnInvalidArgument) {
  const auto good = small_model();
  std::vector<uint8_t> shifted(good.size() + 8);
  std::memcpy(shifted.data() + 4, good.data(), good.size());
  pf_model* model = nullptr;
  EXPECT_EQ(pf_model_open_memory(shifted.data() + 4, good.size(), &model), PF_INVALID_ARGUMENT);
  EXPECT_EQ(model, nullptr);
  EXPECT_NE(std::string(pf_last_error()).find("must be 8-byte aligned"), std::string::npos) << pf_last_error();
}

TEST(CApi, BadModelsGiveInvalidModel) {
  const auto good = small_model();
  pf_model* model = nullptr;
  auto expect_invalid = [&](std::vector<uint8_t> bytes, const std::string& needle) {
    EXPECT_EQ(pf_model_open_memory(bytes.data(), bytes.size(), &model), PF_INVALID_MODEL) << needle;
    EXPECT_EQ(model, nullptr);
    EXPECT_NE(std::string(pf_last_error()).find(needle), std::string::npos) << pf_last_error();
  };
  std::vector<uint8_t> wrong_id = good;
  wrong_id[5] = 'Z';
  expect_invalid(wrong_id, "file identifier");
  expect_invalid(std::vector<uint8_t>(good.begin(), good.begin() + static_cast<std::ptrdiff_t>(good.size() / 2)), "");
  // A file claiming an ineligible geometry, each rule at its boundary in each axis (stride one off,
  // padding 1, dilation 2, groups 2 with channels divisible by 2), is refused by name.
  for (size_t axis = 0; axis < 3; ++axis) {
    SCOPED_TRACE("axis " + std::to_string(axis));
    const TestModule base{"m", 4, {2, 14, 14}, 16, false, DType::kF32, Layout::kFusedLinear, {}};
    for (int64_t delta : {1, -1}) {
      TestModule t = base;
      t.stride = t.kernel;
      t.stride[axis] += delta;
      expect_invalid(testing::make_model(t, 1), "must equal kernel");
    }
    TestModule t = base;
    t.padding = {0, 0, 0};
    t.padding[axis] = 1;
    expect_invalid(testing::make_model(t, 1), "must be all 0");
    t = base;
    t.dilation = {1, 1, 1};
    t.dilation[axis] = 2;
    expect_invalid(testing::make_model(t, 1), "must be all 1");
  }
  TestModule grouped{"m", 4, {2, 14, 14}, 16, false, DType::kF32, Layout::kFusedLinear, {}};
  grouped.groups = 2;
  expect_invalid(testing::make_model(grouped, 1), "groups 2 must be 1");

  testing::TempDir dir;
  EXPECT_EQ(pf_model_open_file((dir / "missing.pfb").c_str(), &model), PF_IO_ERROR);
  EXPECT_NE(std::string(pf_last_error()).find("missing.pfb: cannot open"), std::string::npos);

  // Bit flips anywhere in the metadata: a status, never a crash (seeded, replayable).
  const uint32_t seed = 77;
  std::mt19937 rng(seed);
  for (int trial = 0; trial < 2000; ++trial) {
    std::vector<uint8_t> b = good;
    b[rng() % 700] ^= static_cast<uint8_t>(1u << (rng() % 8));
    const pf_status st = pf_model_open_memory(b.data(), b.size(), &model);
    EXPECT_TRUE(st == PF_OK || st == PF_INVALID_MODEL) << "seed " << seed << " trial " << trial;
    if (st == PF_OK) {  // still consistent: it must run
      pf_session* s = nullptr;
      if (pf_session_create(model, 0, nullptr, &s) == PF_OK) {
        pf_module_info info;
        pf_model_get_module(model, 0, &info);
        std::vector<float> x(static_cast<size_t>(info.patch_volume), 0.25f), y(static_cast<size_t>(info.embed_dim));
        EXPECT_EQ(pf_session_run(s, x.data(), 1, y.data()), PF_OK);
        pf_session_release(s);
      }
      pf_model_release(model);
    }
  }
}

}  // namespace
}  // namespace patchfuse
