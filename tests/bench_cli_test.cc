// patchfuse-bench end to end on a small model: the JSON holds every figure for every
// configuration, the statistics are consistent, unsupported configurations are reported (not
// silently dropped) and usage errors exit 2. Timing values themselves are not asserted.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "converter/sample_checkpoint.h"
#include "tests/support/test_util.h"

namespace patchfuse {
namespace {

using testing::CommandResult;
using testing::TempDir;

class BenchCli : public ::testing::Test {
 protected:
  void SetUp() override {
    SampleSpec spec;
    spec.arch = find_architecture("qwen2_vl");
    spec.embed_dim = 32;
    spec.patches = 0;
    ASSERT_TRUE(write_sample_checkpoint(dir_ / "ckpt", spec).ok());
    ASSERT_EQ(testing::run_command(std::string(PATCHFUSE_CONVERT_BIN) + " convert " + (dir_ / "ckpt") + " -o " +
                                   (dir_ / "m.pfb"))
                  .exit_code,
              0);
  }
  CommandResult bench(const std::string& args) {
    return testing::run_command(std::string(PATCHFUSE_BENCH_BIN) + " " + (dir_ / "m.pfb") + " " + args);
  }
  TempDir dir_;
};

TEST_F(BenchCli, JsonHasEveryFigureForEveryConfiguration) {
  const CommandResult r = bench("--backend reference --path both --threads 1,2 --patches 3,8 --warmup 1 --runs 3 --json " +
                                (dir_ / "b.json"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("p50_ms"), std::string::npos) << r.out;
  const auto j = nlohmann::json::parse(testing::read_bytes(dir_ / "b.json"));
  EXPECT_EQ(j["model"]["patch_volume"], 1176);
  EXPECT_EQ(j["model"]["embed_dim"], 32);
  EXPECT_FALSE(j["machine"]["cpu"].get<std::string>().empty());
  EXPECT_TRUE(j["machine"].contains("isa_features"));
  EXPECT_EQ(j["configuration"]["runs"], 3);
  ASSERT_EQ(j["results"].size(), 2u * 2u * 2u);  // threads x patches x paths
  for (const auto& res : j["results"]) {
    ASSERT_FALSE(res.contains("error")) << res.dump();
    EXPECT_EQ(res["backend"], "reference");
    EXPECT_EQ(res["precision"], "f32");
    EXPECT_EQ(res["isa"], "") << "the reference backend names no ISA; oneDNN's is tested in OneDnnIsa";
    EXPECT_EQ(res["timed_runs"], 3);
    const auto& l = res["latency_ms"];
    EXPECT_LE(l["min"].get<double>(), l["p50"].get<double>());
    EXPECT_LE(l["p50"].get<double>(), l["p90"].get<double>());
    EXPECT_LE(l["p90"].get<double>(), l["p99"].get<double>());
    EXPECT_LE(l["p99"].get<double>(), l["max"].get<double>());
    EXPECT_GT(res["gflops_at_p50"].get<double>(), 0.0);
    EXPECT_GT(res["init_ms"].get<double>(), 0.0);
    EXPECT_EQ(res["first_run_setup_ms"].get<double>(), 0.0) << "the bench prepares before its first run";
    EXPECT_GT(res["peak_rss_mb"].get<double>(), 0.0);
    EXPECT_TRUE(res.contains("unfused_over_fused_p50")) << "--path both measures both side by side";
  }
}

TEST_F(BenchCli, UnsupportedConfigurationsAreReportedNotDropped) {
  const CommandResult r = bench("--backend reference --precision f32,bf16 --patches 2 --runs 1 --warmup 0 --json " +
                                (dir_ / "b.json"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("skipped: precision bf16 is not available on backend reference"), std::string::npos) << r.out;
  const auto j = nlohmann::json::parse(testing::read_bytes(dir_ / "b.json"));
  ASSERT_EQ(j["results"].size(), 2u);
  EXPECT_TRUE(j["results"][1].contains("skipped")) << "an expected refusal is skipped, not an error";
  EXPECT_FALSE(j["results"][1].contains("error"));
  // Nothing runnable at all is a failure.
  EXPECT_EQ(bench("--backend reference --precision bf16 --patches 2 --runs 1").exit_code, 1);
  // --json over the model is refused before any run (it replaced the model).
  const auto model = testing::read_bytes(dir_ / "m.pfb");
  const CommandResult over = bench("--backend reference --patches 2 --runs 1 --json " + (dir_ / "m.pfb"));
  EXPECT_EQ(over.exit_code, 1);
  EXPECT_NE(over.err.find("m.pfb: output is the input file"), std::string::npos) << over.err;
  EXPECT_EQ(testing::read_bytes(dir_ / "m.pfb"), model);
}

// --image times the frames path beside the pixel_values path on the same N (the grid's rows).
TEST_F(BenchCli, ImageTimesTheFramesPathBesidePixelValues) {
  const CommandResult r = bench("--backend reference --image 56x56 --runs 2 --warmup 0 --json " + (dir_ / "b.json"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("-> 16 patches"), std::string::npos) << r.out;  // 56 / 14 = 4: a 4 x 4 grid
  const auto j = nlohmann::json::parse(testing::read_bytes(dir_ / "b.json"));
  EXPECT_EQ(j["configuration"]["image"], "56x56");
  ASSERT_EQ(j["results"].size(), 2u);
  EXPECT_EQ(j["results"][0]["input"], "pixel_values");
  EXPECT_EQ(j["results"][1]["input"], "frames");
  for (const auto& res : j["results"]) {
    ASSERT_FALSE(res.contains("error")) << res.dump();
    EXPECT_EQ(res["patches"], 16);
  }
  EXPECT_GT(j["results"][1]["pixels_over_frames_p50"].get<double>(), 0.0);
  // The frames run's own stages (pf_session_last_profile); a 56x56 frame needs no resize, but is
  // still copied into the session's frame by that stage.
  const auto& stages = j["results"][1]["stages_p50_ms"];
  EXPECT_GT(stages["conversion_resize"].get<double>(), 0.0);
  EXPECT_GT(stages["gather"].get<double>(), 0.0);
  EXPECT_GT(stages["kernel"].get<double>(), 0.0);
  const double share = j["results"][1]["preprocessing_share_p50"].get<double>();
  EXPECT_GT(share, 0.0);
  EXPECT_LT(share, 1.0);
}

// int8 times the frames path only (pixel_values are reported as refused) and reports its error
// against the f32 model on the same frames.
TEST_F(BenchCli, Int8ReportsItsErrorOnFrames) {
  const CommandResult r =
      bench("--backend reference --precision int8 --image 56x56 --runs 2 --warmup 0 --json " + (dir_ / "b.json"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("int8 vs the f32 model on these frames: max |err| "), std::string::npos) << r.out;
  const auto j = nlohmann::json::parse(testing::read_bytes(dir_ / "b.json"));
  ASSERT_EQ(j["results"].size(), 2u);
  EXPECT_NE(j["results"][0]["skipped"].get<std::string>().find("precision int8 takes frames only"), std::string::npos);
  const auto& frames = j["results"][1];
  ASSERT_FALSE(frames.contains("error")) << frames.dump();
  EXPECT_EQ(frames["precision"], "int8");
  const double e = frames["int8_max_error_of_max_ref"].get<double>();
  EXPECT_GT(e, 0.0);   // int8 weights are not exact
  EXPECT_LE(e, 2e-2);  // the int8 bound (tests/support/tolerance.h)
}

// Comparing devices: --json carries the model's content hash, the ISA caps and every run's
// sample; --csv a line per configuration; `compare A.json B.json` prints B/A per row with a noise band.
TEST_F(BenchCli, CsvJsonAndCompare) {
  for (const char* name : {"a", "b"}) {
    const CommandResult r = bench(std::string("--backend reference --precision f32,int8 --patches 4 --runs 3 --warmup 0 --json ") +
                                  (dir_ / (std::string(name) + ".json")) + " --csv " + (dir_ / (std::string(name) + ".csv")));
    ASSERT_EQ(r.exit_code, 0) << r.err;
  }
  const auto j = nlohmann::json::parse(testing::read_bytes(dir_ / "a.json"));
  EXPECT_EQ(j["model"]["content_hash"].get<std::string>().rfind("fnv1a64:", 0), 0u);
  EXPECT_TRUE(j.contains("isa_caps"));
  EXPECT_EQ(j["results"][0]["samples_ms"].size(), j["results"][0]["timed_runs"].get<size_t>());
  const std::vector<uint8_t> csv = testing::read_bytes(dir_ / "a.csv");
  const std::string text(csv.begin(), csv.end());
  EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 3) << text;  // header + f32 + int8 (skipped, with its reason)
  EXPECT_NE(text.find("\"prepare: precision int8 takes frames only"), std::string::npos) << text;
  const CommandResult c = testing::run_command(std::string(PATCHFUSE_BENCH_BIN) + " compare " + (dir_ / "a.json") + " " + (dir_ / "b.json"));
  ASSERT_EQ(c.exit_code, 0) << c.err;
  EXPECT_NE(c.out.find("1 row compared"), std::string::npos) << c.out;
  EXPECT_NE(c.out.find("not timed in both (skipped or error)"), std::string::npos) << c.out;
  EXPECT_EQ(testing::run_command(std::string(PATCHFUSE_BENCH_BIN) + " compare " + (dir_ / "a.json")).exit_code, 2);
  const CommandResult bad = testing::run_command(std::string(PATCHFUSE_BENCH_BIN) + " compare " + (dir_ / "a.csv") + " " + (dir_ / "b.json"));
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_NE(bad.err.find("a.csv: not a patchfuse-bench --json file"), std::string::npos) << bad.err;
  // A directory aborted the stream (uncaught std::ios_base::failure).
  const CommandResult dir = testing::run_command(std::string(PATCHFUSE_BENCH_BIN) + " compare " + dir_.path() + " " + (dir_ / "b.json"));
  EXPECT_EQ(dir.exit_code, 1);
  EXPECT_NE(dir.err.find(dir_.path() + ": not a regular file"), std::string::npos) << dir.err;
}

// --frames-only: the frames rows alone (no pixel_values rows of the same N); it needs --image.
TEST_F(BenchCli, FramesOnlyTimesTheFramesPathAlone) {
  const CommandResult r = bench("--backend reference --image 56x56 --frames-only --runs 2 --warmup 0 --json " + (dir_ / "f.json"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(testing::read_bytes(dir_ / "f.json"));
  ASSERT_EQ(j["results"].size(), 1u);
  EXPECT_EQ(j["results"][0]["path"], "frames/fused");
  EXPECT_EQ(bench("--frames-only").exit_code, 2);
}

TEST_F(BenchCli, ImageErrorsNameTheRule) {
  EXPECT_EQ(bench("--image 56").exit_code, 2);
  EXPECT_EQ(bench("--image 0x56").exit_code, 2);
  // Any source size: the runtime resizes it to the processor's size, and the bench says to which.
  // Sizes are width x height in every tool, and the tool echoes what it parsed.
  const CommandResult resized = bench("--backend reference --image 56x50 --runs 2 --warmup 0");
  EXPECT_EQ(resized.exit_code, 0) << resized.err;
  EXPECT_NE(resized.out.find("1 synthetic rgb frame of 56x50 (width x height, seed 1) -> the processor's 56x56 -> 16 patches"),
            std::string::npos)
      << resized.out;
  EXPECT_NE(resized.out.find("56x50 rgb -> 56x56, p50 per stage: conversion + resize "), std::string::npos) << resized.out;
  const CommandResult wrong = bench("--backend reference --image 300x1");
  EXPECT_EQ(wrong.exit_code, 1);
  EXPECT_NE(wrong.err.find("--image 300x1: smart_resize: image size 1x300 has an aspect ratio above 200"), std::string::npos)
      << wrong.err;
  // A model converted without preprocessor_config.json cannot take frames, and says why.
  SampleSpec spec;
  spec.arch = find_architecture("qwen2_vl");
  spec.embed_dim = 32;
  spec.patches = 0;
  spec.preprocessor = false;
  ASSERT_TRUE(write_sample_checkpoint(dir_ / "plain", spec).ok());
  ASSERT_EQ(testing::run_command(std::string(PATCHFUSE_CONVERT_BIN) + " convert " + (dir_ / "plain") + " -o " +
                                 (dir_ / "plain.pfb"))
                .exit_code,
            0);
  const CommandResult plain =
      testing::run_command(std::string(PATCHFUSE_BENCH_BIN) + " " + (dir_ / "plain.pfb") + " --image 56x56");
  EXPECT_EQ(plain.exit_code, 1);
  EXPECT_NE(plain.err.find("has no preprocessing"), std::string::npos) << plain.err;
}

// --cold: every configuration in fresh processes, with and without prepare, as medians, after the
// steady table and in the same JSON; `compare` compares those rows too.
TEST_F(BenchCli, ColdTimesFreshProcessesWithAndWithoutPrepare) {
#ifdef PATCHFUSE_TOOLS_EMULATED
  GTEST_SKIP() << "--cold starts fresh processes of the bench, which qemu-user runs only with binfmt_misc";
#endif
  const CommandResult r = bench("--backend reference --precision f32,f16 --image 56x56 --frames-only --cold 2 --runs 2 "
                                "--warmup 0 --json " + (dir_ / "cold.json"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("cold start: 2 fresh processes"), std::string::npos) << r.out;
  const auto j = nlohmann::json::parse(testing::read_bytes(dir_ / "cold.json"));
  EXPECT_EQ(j["configuration"]["cold_processes"], 2);
  ASSERT_EQ(j["results"].size(), 2u) << "the steady rows, f32 and f16 (skipped), in the same file";
  EXPECT_GT(j["results"][0]["latency_ms"]["p50"].get<double>(), 0.0);
  EXPECT_EQ(j["model"]["content_hash"].get<std::string>().rfind("fnv1a64:", 0), 0u) << "the model, as for the steady rows";
  ASSERT_EQ(j["cold"].size(), 4u) << "f32 and f16, each without and with prepare";
  for (const auto& res : j["cold"]) {
    SCOPED_TRACE(res.dump());
    if (res["precision_requested"] == "f16") {
      EXPECT_NE(res["skipped"].get<std::string>().find("precision f16"), std::string::npos) << "reported, not dropped";
      continue;
    }
    ASSERT_FALSE(res.contains("error"));
    EXPECT_EQ(res["processes"], 2);
    EXPECT_EQ(res["create_prepare_first_ms"].size(), 2u) << "one figure per process";
    EXPECT_EQ(res["backend"], "reference");
    for (const char* f : {"median_create_ms", "median_first_ms", "median_steady_p50_ms", "median_first_over_p50"}) {
      EXPECT_GT(res[f].get<double>(), 0.0) << f;
    }
    if (res["prepare"].get<bool>()) {
      EXPECT_GT(res["median_prepare_ms"].get<double>(), 0.0);
    } else {
      EXPECT_EQ(res["median_prepare_ms"].get<double>(), 0.0) << "the process without prepare did not call it";
    }
    const double cold = res["median_create_prepare_first_over_p50"].get<double>();
    EXPECT_GE(cold, res["median_first_over_p50"].get<double>() * 0.999) << "create + prepare + first includes the first run";
    EXPECT_GT(res["median_paced_p50_ms"].get<double>(), 0.0) << "the steady runs again at 30 frames a second";
    EXPECT_GT(res["median_first_over_paced_p50"].get<double>(), 0.0);
  }
  EXPECT_NE(r.out.find("p50_at_30fps"), std::string::npos) << r.out;
  const CommandResult c = testing::run_command(std::string(PATCHFUSE_BENCH_BIN) + " compare " + (dir_ / "cold.json") + " " +
                                               (dir_ / "cold.json"));
  ASSERT_EQ(c.exit_code, 0) << c.err;
  EXPECT_NE(c.out.find("3 rows compared"), std::string::npos) << "1 steady row and 2 cold rows (f16 skipped): " << c.out;
  EXPECT_NE(c.out.find("within noise"), std::string::npos) << c.out;
}

TEST_F(BenchCli, UsageErrors) {
  EXPECT_EQ(bench("--cold 2 --cold-only --path both").exit_code, 2) << "--cold times the fused path";
  EXPECT_EQ(bench("--cold-only").exit_code, 2) << "--cold-only without --cold";
  EXPECT_EQ(bench("--cold 0").exit_code, 2);
  EXPECT_EQ(bench("--path sideways").exit_code, 2);
  EXPECT_EQ(bench("--patches 0").exit_code, 2);
  EXPECT_EQ(bench("--pin x").exit_code, 2);
  EXPECT_EQ(testing::run_command(std::string(PATCHFUSE_BENCH_BIN) + " " + (dir_ / "missing.pfb")).exit_code, 1);
  const CommandResult version = testing::run_command(std::string(PATCHFUSE_BENCH_BIN) + " --version");
  EXPECT_EQ(version.exit_code, 0) << version.err;
  EXPECT_NE(version.out.find("patchfuse-bench " PATCHFUSE_VERSION), std::string::npos) << version.out;
}

}  // namespace
}  // namespace patchfuse
