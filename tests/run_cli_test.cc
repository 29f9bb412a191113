// patchfuse-run end to end through the real binaries: 2-D and 5-D inputs, module choice, the
// unfused path, and the errors for inputs it cannot use (exit 1, one line, no output file).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <fstream>

#include <sys/stat.h>
#include <nlohmann/json.hpp>

#include "converter/sample_checkpoint.h"
#include "runtime/model/model_view.h"
#include "tests/support/model_builder.h"
#include "tests/support/test_util.h"
#include "tests/support/tolerance.h"
#include "tools/image_files.h"
#include "tools/option_names.h"
#include "cli/npy.h"

#include <libyuv/convert_argb.h>

namespace patchfuse {
namespace {

using testing::CommandResult;
using testing::TempDir;

CommandResult run_cli(const std::string& args) { return testing::run_command(std::string(PATCHFUSE_RUN_BIN) + " " + args); }

class RunCli : public ::testing::Test {
 protected:
  void SetUp() override {
    SampleSpec spec;
    spec.arch = find_architecture("qwen3_vl");
    spec.embed_dim = 24;
    spec.patches = 5;
    ASSERT_TRUE(write_sample_checkpoint(dir_ / "ckpt", spec).ok());
    const CommandResult c = testing::run_command(std::string(PATCHFUSE_CONVERT_BIN) + " convert " + (dir_ / "ckpt") +
                                                 " -o " + (dir_ / "m.pfb"));
    ASSERT_EQ(c.exit_code, 0) << c.err;
    ASSERT_EQ(std::system(("mkdir -p '" + (dir_ / "out") + "'").c_str()), 0);
  }
  // Converts `checkpoint` with patchfuse-convert to dir_/name (callers wrap it in
  // ASSERT_NO_FATAL_FAILURE).
  void convert(const std::string& checkpoint, const std::string& name, const std::string& flags = "") {
    const CommandResult c = testing::run_command(std::string(PATCHFUSE_CONVERT_BIN) + " convert " + checkpoint + " -o " +
                                                 (dir_ / name) + " " + flags);
    ASSERT_EQ(c.exit_code, 0) << c.err;
  }
  // A seeded w x h NV12 frame, written as dir_/f.nv12 (a raw camera dump) and returned.
  std::vector<uint8_t> nv12_dump(size_t w, size_t h, int shift) const {
    std::vector<uint8_t> nv12(w * h + w * h / 2);
    for (size_t i = 0; i < nv12.size(); ++i) nv12[i] = static_cast<uint8_t>((i * 2654435761u) >> shift);
    testing::write_bytes(dir_ / "f.nv12", nv12);
    return nv12;
  }
  std::string model() const { return dir_ / "m.pfb"; }
  std::string input() const { return dir_ / "ckpt/pixel_values.npy"; }
  std::string out() const { return dir_ / "out/y.npy"; }
  void expect_failure(const std::string& args, const std::string& needle) {
    const CommandResult r = run_cli(args);
    EXPECT_EQ(r.exit_code, 1) << r.err;
    EXPECT_EQ(r.err.rfind("patchfuse-run: error: ", 0), 0u) << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    EXPECT_NE(r.err.find(needle), std::string::npos) << r.err;
    EXPECT_TRUE(testing::list_dir(dir_ / "out").empty());
  }
  std::vector<double> output() const { return read_npy(out()).value().to_double(); }
  TempDir dir_;
};

// What patchfuse-run says it computed in ("..., precision bf16, ..."): the tolerance follows it.
pf_precision printed_precision(const std::string& out) {
  const size_t at = out.find(", precision ");
  if (at == std::string::npos) return PF_PRECISION_AUTO;
  const std::string word = out.substr(at + 12, out.find(',', at + 12) - at - 12);
  for (pf_precision p : {PF_PRECISION_F32, PF_PRECISION_BF16, PF_PRECISION_F16, PF_PRECISION_INT8}) {
    if (word == precision_text(p)) return p;
  }
  return PF_PRECISION_AUTO;
}

TEST_F(RunCli, FlatAndFiveDimensionalInputsGiveTheSameOutput) {
  const CommandResult r = run_cli(model() + " --input " + input() + " --output " + out() + " --compare-reference");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("vs reference backend"), std::string::npos) << r.out;
  auto y = read_npy(out());
  ASSERT_TRUE(y.ok());
  EXPECT_EQ(y->descr, "<f4");
  EXPECT_EQ(y->shape, (std::vector<int64_t>{5, 24}));
  const std::vector<double> flat = y->to_double();

  auto x = read_npy(input());
  ASSERT_TRUE(x.ok());
  ASSERT_TRUE(write_npy_f32(dir_ / "x5.npy", {5, 3, 2, 16, 16}, reinterpret_cast<const float*>(x->bytes.data())).ok());
  ASSERT_EQ(run_cli(model() + " --input " + (dir_ / "x5.npy") + " --output " + out()).exit_code, 0);
  EXPECT_EQ(output(), flat);

  // Every backend and path against the double oracle, within the bound of the precision that run
  // reports it computed in (auto is bf16 for this bf16 model on a CPU with AVX512-BF16).
  const std::vector<uint8_t> bytes = testing::read_bytes(model());
  const ModuleView view = read_model(bytes.data(), bytes.size(), model()).value().modules.at(0);
  const testing::Oracle ref = testing::oracle(view, reinterpret_cast<const float*>(x->bytes.data()), 5);
  int ran = 0;
  for (const char* backend : {"auto", "reference", "onednn", "xnnpack"}) {
    for (const char* path : {"", " --no-fuse"}) {
      const CommandResult b = run_cli(model() + " --input " + input() + " --output " + out() + " --backend " + backend + path);
      if (b.exit_code != 0) {  // a backend not built here must say so, not fall back
        EXPECT_NE(b.err.find("not built"), std::string::npos) << b.err;
        continue;
      }
      const pf_precision computed = printed_precision(b.out);
      ASSERT_NE(computed, PF_PRECISION_AUTO) << "patchfuse-run must print what it computed in: " << b.out;
      const double tol = testing::element_tolerance(computed, view.patch_volume);
      const std::vector<double> got = output();
      ASSERT_EQ(got.size(), ref.y.size());
      for (size_t i = 0; i < got.size(); ++i) {
        ASSERT_LE(std::fabs(got[i] - ref.y[i]), tol * ref.abs_sum[i]) << backend << path << " " << b.out << " element " << i;
      }
      ++ran;
    }
  }
  EXPECT_GE(ran, 4);
}

// The acceptance check through the tool itself: a converted checkpoint run by
// patchfuse-run on every backend and both paths matches PyTorch's Conv3d (f32: 1e-4 of max|ref|).
TEST_F(RunCli, EveryBackendAndPathMatchesPytorchGolden) {
  const std::string golden = std::string(PATCHFUSE_GOLDEN_DIR) + "/qwen2_vl_f32";
  ASSERT_NO_FATAL_FAILURE(convert(golden, "g.pfb"));
  const std::vector<double> want = read_npy(golden + "/expected.npy").value().to_double();
  int ran = 0;
  for (const char* backend : {"reference", "onednn", "xnnpack"}) {
    for (const char* path : {"", " --no-fuse"}) {
      const CommandResult r = run_cli((dir_ / "g.pfb") + " --input " + golden + "/input.npy --output " + out() +
                                      " --precision f32 --backend " + backend + path);
      if (r.exit_code != 0) {
        EXPECT_NE(r.err.find("not built"), std::string::npos) << r.err;
        continue;
      }
      EXPECT_TRUE(testing::within_bound(output(), want, PF_PRECISION_F32)) << backend << path;
      ++ran;
    }
  }
  EXPECT_GE(ran, 4);
}

TEST_F(RunCli, BadInputs) {
  const std::vector<float> v(5 * 100, 1.0f);
  ASSERT_TRUE(write_npy_f32(dir_ / "wrong_shape.npy", {5, 100}, v.data()).ok());
  expect_failure(model() + " --input " + (dir_ / "wrong_shape.npy") + " --output " + out(),
                 "shape (5, 100) must be [N, 1536] or [N, 3, 2, 16, 16]");
  ASSERT_TRUE(write_npy_f32(dir_ / "empty.npy", {0, 1536}, v.data()).ok());
  expect_failure(model() + " --input " + (dir_ / "empty.npy") + " --output " + out(), "with N >= 1");
  testing::write_bytes(dir_ / "f64.npy", testing::read_bytes(std::string(PATCHFUSE_GOLDEN_DIR) + "/qwen3_vl_bias_f32/expected.npy"));
  expect_failure(model() + " --input " + (dir_ / "f64.npy") + " --output " + out(), "dtype '<f8' must be float32");
  testing::write_text(dir_ / "junk.npy", "not an array");
  expect_failure(model() + " --input " + (dir_ / "junk.npy") + " --output " + out(), "not a .npy file");
  // An output over an input: the .npy was replaced by the output (exit 0).
  const auto input_bytes = testing::read_bytes(input());
  expect_failure(model() + " --input " + input() + " --output " + input(), "output is the input file");
  EXPECT_EQ(testing::read_bytes(input()), input_bytes);
  // Inputs that are not regular files: a directory threw out of the reader (abort), /dev/zero was
  // read until memory ran out, and a FIFO blocked the open.
  ASSERT_EQ(::mkfifo((dir_ / "fifo").c_str(), 0600), 0);
  for (const std::string& odd : {std::string(dir_ / "ckpt"), std::string("/dev/zero"), std::string(dir_ / "fifo")}) {
    for (const std::string& input : {"--input " + odd, "--image " + odd, "--frames " + odd + "," + odd,
                                     "--yuv " + odd + " --format nv12 --size 64x64"}) {
      expect_failure(model() + " " + input + " --output " + out(), odd + ": not a regular file");
    }
  }
  expect_failure((dir_ / "ckpt/config.json") + " --input " + input() + " --output " + out(), "not a patchfuse model");
  expect_failure(model() + " --input " + input() + " --output " + out() + " --module audio.patch_embed",
                 "no module 'audio.patch_embed' in the model (it has: model.visual.patch_embed)");
  expect_failure(model() + " --input " + input() + " --output " + out() + " --backend reference --precision bf16",
                 "precision bf16 is not available on backend reference");
}

// The frames issue's acceptance check: a 448x448 PNG through patchfuse-run --image on every
// backend and path gives what PyTorch's Conv3d gives on the pixel_values Hugging Face's processor
// (its NumPy copy in make_frames.py) makes from the same pixels, within the bound of the precision
// each run reports.
TEST_F(RunCli, ImageThroughEveryBackendMatchesPytorch) {
  const std::string fixture = std::string(PATCHFUSE_FRAMES_DIR) + "/qwen2_vl";
  ASSERT_NO_FATAL_FAILURE(convert(fixture, "f.pfb"));
  const std::vector<double> want = read_npy(fixture + "/expected_image_448.npy").value().to_double();
  int ran = 0;
  for (const char* backend : {"auto", "reference", "onednn", "xnnpack"}) {
    for (const char* path : {"", " --no-fuse"}) {
      const CommandResult r = run_cli((dir_ / "f.pfb") + " --image " + fixture + "/image_448.png --output " + out() +
                                      " --backend " + backend + path);
      if (r.exit_code != 0) {
        EXPECT_NE(r.err.find("not built"), std::string::npos) << r.err;
        continue;
      }
      EXPECT_NE(r.out.find("1 frame of 448x448 (width x height) (the processor's size)"), std::string::npos) << r.out;
      EXPECT_NE(r.out.find("image_grid_thw [1, 32, 32]: 1024 patches"), std::string::npos) << r.out;
      const pf_precision computed = printed_precision(r.out);
      ASSERT_NE(computed, PF_PRECISION_AUTO) << r.out;
      EXPECT_TRUE(testing::within_bound(output(), want, computed)) << backend << path << "\n" << r.out;
      ++ran;
    }
  }
  EXPECT_GE(ran, 4);
  // A size that is not the model's is resized by the runtime (and says so); a model without
  // preprocessing refuses.
  testing::write_bytes(dir_ / "x.ppm", [] {
    std::string ppm = "P6\n100 60\n255\n" + std::string(100 * 60 * 3, '\x40');
    return std::vector<uint8_t>(ppm.begin(), ppm.end());
  }());
  CommandResult r = run_cli((dir_ / "f.pfb") + " --image " + (dir_ / "x.ppm") + " --output " + out() + " --backend reference");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("1 frame of 100x60 (width x height) -> the processor's 112x56 (resized by the runtime)"),
            std::string::npos)
      << r.out;
  // Beside the backend's kernel, the frames loops it ran (images_test checks which per CPU and cap).
  EXPECT_NE(r.out.find("\nframe kernels: resize "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(", planes "), std::string::npos) << r.out;
  std::remove(out().c_str());
  const std::string golden = std::string(PATCHFUSE_GOLDEN_DIR) + "/qwen2_vl_f32";  // no preprocessor_config.json
  ASSERT_NO_FATAL_FAILURE(convert(golden, "g.pfb"));
  expect_failure((dir_ / "g.pfb") + " --image " + (dir_ / "x.ppm") + " --output " + out(), "has no preprocessing");
  testing::write_text(dir_ / "bad.png", "not a png");
  expect_failure((dir_ / "f.pfb") + " --image " + (dir_ / "bad.png") + " --output " + out(), "bad.png: not an image this tool decodes");
}

// The camera issue's acceptance check: a 1280x720 JPEG and a 480x640 PNG through patchfuse-run
// --image for a Qwen2-VL-, a SigLIP- and a CLIP-shaped model give what Hugging Face's pipeline
// gives (Pillow decode and resize, the processor's normalize and patchify, PyTorch's Conv3d or
// Conv2d: tests/fixtures/images/make_images.py) within the bound of the precision each run
// reports, and the resized frame the tool writes is Pillow's, byte for byte.
TEST_F(RunCli, CameraImagesMatchHuggingFacesPipeline) {
  const std::string dir = std::string(PATCHFUSE_IMAGES_DIR) + "/e2e";
  ASSERT_NO_FATAL_FAILURE(convert(std::string(PATCHFUSE_FRAMES_DIR) + "/qwen2_vl", "qwen2_vl.pfb"));
  ASSERT_NO_FATAL_FAILURE(convert(dir + "/siglip", "siglip.pfb", "--fusion conv2d_patch_embeddings"));
  ASSERT_NO_FATAL_FAILURE(convert(dir + "/clip", "clip.pfb", "--fusion conv2d_patch_embeddings"));
  const auto cases = nlohmann::json::parse(testing::read_bytes(std::string(PATCHFUSE_IMAGES_DIR) + "/cases.json"))["e2e"];
  ASSERT_EQ(cases.size(), 10u);  // JPEG and PNG through three models; WebP, GIF, BMP and PPM through SigLIP's
  for (const auto& c : cases) {
    const std::string model = dir_ / (c["model"].get<std::string>() + ".pfb"), image = dir + "/" + c["image"].get<std::string>();
    auto expected = read_npy(dir + "/" + c["expected"].get<std::string>());
    ASSERT_TRUE(expected.ok()) << expected.error().message;
    const std::vector<double> want = expected->to_double();
    for (const std::string backend : {"auto", "reference"}) {
      const bool write_resized = backend == "auto";  // the frame is the same whichever backend runs
      const std::string resized = dir_ / "resized.png";
      const CommandResult r = run_cli(model + " --image " + image + " --output " + out() + " --backend " + backend +
                                      " --threads 2" + (write_resized ? " --write-resized " + resized : ""));
      ASSERT_EQ(r.exit_code, 0) << r.err;
      const pf_precision computed = printed_precision(r.out);
      ASSERT_NE(computed, PF_PRECISION_AUTO) << r.out;
      EXPECT_TRUE(testing::within_bound(output(), want, computed)) << c.dump() << "\n" << r.out;
      const auto grid = c["grid"];
      EXPECT_NE(r.out.find("image_grid_thw [" + std::to_string(grid[0].get<int>()) + ", " + std::to_string(grid[1].get<int>()) +
                           ", " + std::to_string(grid[2].get<int>()) + "]"),
                std::string::npos)
          << r.out;
      if (write_resized) {
        auto written = decode_image(resized, DecodeOptions());
        auto pillow = decode_image(dir + "/" + c["resized_png"].get<std::string>(), DecodeOptions());
        ASSERT_TRUE(written) << written.error();
        ASSERT_TRUE(pillow) << pillow.error();
        EXPECT_EQ(written->bytes, pillow->bytes) << c.dump() << ": the resized frame must be Pillow's, byte for byte";
      }
      std::remove(out().c_str());
    }
  }
  // The same files cut to half their bytes: a one-line error naming the file, exit 1, no output
  // (stb_image alone would have decoded the PPM, BMP and GIF with their missing half padded).
  for (const char* name : {"photo_240x320.webp", "photo_240x320.gif", "photo_240x320.bmp", "photo_240x320.ppm"}) {
    const std::vector<uint8_t> whole = testing::read_bytes(dir + "/" + name);
    testing::write_bytes(dir_ / name, std::vector<uint8_t>(whole.begin(), whole.begin() + static_cast<std::ptrdiff_t>(whole.size() / 2)));
    expect_failure(dir_ / "siglip.pfb" + " --image " + (dir_ / name) + " --output " + out(), "truncated");
  }
}

// A raw NV12 dump gives the embeddings of the RGB image libyuv makes of it (here written as a PNG
// and passed to --image), and a dump of the wrong size is refused.
TEST_F(RunCli, RawCameraDumpsGoThroughTheRuntimesConversion) {
  ASSERT_NO_FATAL_FAILURE(convert(std::string(PATCHFUSE_FRAMES_DIR) + "/qwen2_vl", "q.pfb"));
  const size_t w = 64, h = 48;
  const std::vector<uint8_t> nv12 = nv12_dump(w, h, 13);
  std::vector<uint8_t> argb(w * h * 4), rgb(w * h * 3);  // libyuv's ARGB is B, G, R, A in memory
  libyuv::NV12ToARGBMatrix(nv12.data(), w, nv12.data() + w * h, w, argb.data(), w * 4, &libyuv::kYuvI601Constants, w, h);
  for (size_t i = 0; i < w * h; ++i) {
    rgb[3 * i] = argb[4 * i + 2], rgb[3 * i + 1] = argb[4 * i + 1], rgb[3 * i + 2] = argb[4 * i];
  }
  ASSERT_EQ(write_png(dir_ / "f.png", rgb.data(), w, h), "");
  const std::string q = dir_ / "q.pfb";
  const CommandResult from_png = run_cli(q + " --image " + (dir_ / "f.png") + " --output " + out());
  ASSERT_EQ(from_png.exit_code, 0) << from_png.err;
  const std::vector<double> want = output();
  std::remove(out().c_str());
  const CommandResult from_nv12 =
      run_cli(q + " --yuv " + (dir_ / "f.nv12") + " --format nv12 --size 64x48 --matrix bt601_limited --output " + out());
  ASSERT_EQ(from_nv12.exit_code, 0) << from_nv12.err;
  EXPECT_NE(from_nv12.out.find("1 frame of 64x48 (width x height) -> the processor's 56x56"), std::string::npos) << from_nv12.out;
  EXPECT_EQ(output(), want);
  std::remove(out().c_str());
  expect_failure(q + " --yuv " + (dir_ / "f.nv12") + " --format nv12 --size 64x50 --output " + out(),
                 "4608 bytes, but one packed 64x50 frame of this format is 4800 bytes");
  EXPECT_EQ(run_cli(q + " --yuv " + (dir_ / "f.nv12") + " --format nv12 --output " + out()).exit_code, 2) << "--size is needed";
  EXPECT_EQ(run_cli(q + " --yuv " + (dir_ / "f.nv12") + " --size 64 --output " + out()).exit_code, 2);
}

// One default colour matrix: the same NV12 bytes through a C API image with default fields
// (pf_image_packed) and through patchfuse-run --yuv with default flags give identical embeddings,
// and the tool says which matrix it used.
TEST_F(RunCli, DefaultColourMatrixIsTheCApisDefault) {
  ASSERT_NO_FATAL_FAILURE(convert(std::string(PATCHFUSE_FRAMES_DIR) + "/qwen2_vl", "q.pfb"));
  const size_t w = 64, h = 48;
  const std::vector<uint8_t> nv12 = nv12_dump(w, h, 11);
  const CommandResult r = run_cli((dir_ / "q.pfb") + " --yuv " + (dir_ / "f.nv12") + " --format nv12 --size 64x48 --output " + out());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("colour matrix bt601_full"), std::string::npos) << r.out;
  auto model = Model::open_file(dir_ / "q.pfb");
  ASSERT_TRUE(model);
  auto session = Session::create(*model, 0, default_options());
  ASSERT_TRUE(session);
  pf_image image;
  ASSERT_EQ(pf_image_packed(&image, PF_PIXEL_NV12, nv12.data(), w, h), PF_OK);
  const std::vector<double> cli = output();
  std::vector<float> api(cli.size());
  ASSERT_EQ(session->run_image(image, api.data()), "");
  EXPECT_EQ(std::vector<double>(api.begin(), api.end()), cli);
  // The limited matrix really is another result (the default is not a no-op).
  std::remove(out().c_str());
  ASSERT_EQ(run_cli((dir_ / "q.pfb") + " --yuv " + (dir_ / "f.nv12") + " --format nv12 --size 64x48 --matrix bt601_limited --output " +
                    out()).exit_code, 0);
  EXPECT_NE(output(), cli);
}

// --frames is a video: its frames are sized by the model's video rule (Qwen3-VL's fixture stores
// Qwen3VLVideoProcessor's, which budgets pixels over the frame count; the expected size is
// Python's, from smart_resize.json), not by the image rule.
TEST_F(RunCli, FramesAreSizedByTheVideoRule) {
  const std::string fixture = std::string(PATCHFUSE_FRAMES_DIR) + "/qwen3_vl";
  ASSERT_NO_FATAL_FAILURE(convert(fixture, "f.pfb"));
  const auto table = nlohmann::json::parse(testing::read_bytes(std::string(PATCHFUSE_FRAMES_DIR) + "/smart_resize.json"));
  std::string want;
  for (const auto& row : table) {
    if (row.contains("frames") && row["frames"] == 3 && row["variant"] == "glm4v" && row["patch_size"] == 16 &&
        !row["cap"] && row["height"] == 480 && row["width"] == 640) {
      want = "3 frames of 640x480 (width x height) -> the processor's " + std::to_string(row["resized"][1].get<int>()) + "x" +
             std::to_string(row["resized"][0].get<int>());
    }
  }
  ASSERT_FALSE(want.empty());
  testing::write_bytes(dir_ / "f.ppm", [] {
    std::string ppm = "P6\n640 480\n255\n" + std::string(640 * 480 * 3, '\x60');
    return std::vector<uint8_t>(ppm.begin(), ppm.end());
  }());
  const std::string f = dir_ / "f.ppm";
  const CommandResult r = run_cli((dir_ / "f.pfb") + " --frames " + f + "," + f + "," + f + " --output " + out() +
                                  " --backend reference");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find(want), std::string::npos) << want << "\n" << r.out;
  const CommandResult image = run_cli((dir_ / "f.pfb") + " --image " + f + " --output " + out() + " --backend reference");
  ASSERT_EQ(image.exit_code, 0) << image.err;
  EXPECT_EQ(image.out.find(want.substr(want.find(" -> "))), std::string::npos) << "the image rule differs here\n"
                                                                                    << image.out;
}

TEST(ToolVersions, EveryToolAnswersVersion) {
  for (const std::string& bin : {std::string(PATCHFUSE_RUN_BIN), std::string(PATCHFUSE_CONVERT_BIN)}) {
    const CommandResult r = testing::run_command(bin + " --version");
    EXPECT_EQ(r.exit_code, 0) << bin << ": " << r.err;
    EXPECT_NE(r.out.find(" " PATCHFUSE_VERSION), std::string::npos) << bin << ": " << r.out;
  }
}

// The encoder-input issue's acceptance check: patchfuse-run --output-stage encoder-input agrees
// with Hugging Face's block-0 input (tests/fixtures/encoder_input: each model type's embedding
// module re-implemented in PyTorch, float64) within 1e-5 of max |ref| in f32, on pixel_values
// rows with --grid and on images (--image, --frames: PNGs of the fixture's frames, already at the
// processor's size), on the default backend (encoder_input_test runs every backend, path and
// precision on the same cases in process).
TEST_F(RunCli, EncoderInputMatchesPytorchOnRowsAndImages) {
  for (const char* preset : {"qwen2_5_vl", "qwen3_vl", "glm4v", "siglip", "clip", "dinov2"}) {
    SCOPED_TRACE(preset);
    const std::string fixture = std::string(PATCHFUSE_ENCODER_INPUT_DIR) + "/" + preset;
    ASSERT_NO_FATAL_FAILURE(convert(fixture, std::string(preset) + ".pfb", "--fusion patch_embeddings --fusion conv2d_patch_embeddings"));
    nlohmann::json cases;
    std::ifstream(fixture + "/cases.json") >> cases;
    for (const auto& c : cases) {
      const std::string name = c["name"];
      std::string source;
      if (c.contains("rows")) {
        source = " --input " + fixture + "/" + c["rows"].get<std::string>() + " --grid " + std::to_string(c["grid"][0].get<int>()) +
                 "x" + std::to_string(c["grid"][1].get<int>()) + "x" + std::to_string(c["grid"][2].get<int>());
      } else {
        const NpyArray frames = read_npy(fixture + "/" + c["frames"].get<std::string>()).value();
        const auto h = static_cast<size_t>(frames.shape[1]), w = static_cast<size_t>(frames.shape[2]);
        std::string files;
        for (int64_t f = 0; f < frames.shape[0]; ++f) {
          const std::string png = dir_ / (name + std::to_string(f) + ".png");
          ASSERT_EQ(write_png(png, frames.bytes.data() + static_cast<size_t>(f) * h * w * 3, w, h), "");
          files += (files.empty() ? "" : ",") + png;
        }
        source = (frames.shape[0] == 1 ? " --image " : " --frames ") + files;
      }
      const std::vector<double> want = read_npy(fixture + "/expected_" + name + ".npy").value().to_double();
      SCOPED_TRACE(name);
      const CommandResult r = run_cli((dir_ / (std::string(preset) + ".pfb")) + source + " --output-stage encoder-input --output " +
                                      out() + " --precision f32");
      ASSERT_EQ(r.exit_code, 0) << r.err;
      EXPECT_NE(r.out.find("encoder input: "), std::string::npos) << r.out;
      const testing::OutputError e = testing::output_error(output(), want);
      EXPECT_EQ(output().size(), want.size());
      EXPECT_LE(e.max_err, 1e-5 * e.max_ref) << r.out;  // the f32 bound
      std::remove(out().c_str());
    }
  }
  // --output-stage encoder-input with --input needs --grid; --grid goes with --input only; a grid
  // whose row count is not the input's, or that the model refuses, is a one-line error.
  const std::string m = dir_ / "qwen3_vl.pfb", rows = std::string(PATCHFUSE_ENCODER_INPUT_DIR) + "/qwen3_vl/rows_table.npy";
  EXPECT_EQ(run_cli(m + " --input " + rows + " --output " + out() + " --output-stage encoder-input").exit_code, 2);
  EXPECT_EQ(run_cli(m + " --input " + rows + " --output " + out() + " --grid 1x8").exit_code, 2);
  EXPECT_EQ(run_cli(m + " --input " + rows + " --output " + out() + " --output-stage all").exit_code, 2);
  expect_failure(m + " --input " + rows + " --output " + out() + " --grid 1x4x8 --output-stage encoder-input",
                 "64 rows, but --grid 1x4x8 has 32");
  expect_failure(m + " --input " + rows + " --output " + out() + " --grid 1x1x64 --output-stage encoder-input",
                 "h and w must be multiples of the merge size 2");
}

TEST_F(RunCli, UsageErrorsExitTwo) {
  EXPECT_EQ(run_cli("").exit_code, 2);
  EXPECT_EQ(run_cli(model() + " --input " + input()).exit_code, 2);  // --output missing
  EXPECT_EQ(run_cli(model() + " --input " + input() + " --output " + out() + " --backend gpu").exit_code, 2);
  EXPECT_EQ(run_cli(model() + " --input " + input() + " --output " + out() + " --threads 0").exit_code, 2);
  // Sizes and grids are positive integers joined by 'x', each within int64: a sign, an overflow
  // or a trailing character is a usage error (sscanf read "4x-2" as 4 by 2^64 - 2).
  for (const char* size : {"4x-2", "99999999999999999999x2", "4x2x", "4x+2", "0x2", "x2"}) {
    const CommandResult r = run_cli(model() + " --yuv " + input() + " --format nv12 --size " + size + " --output " + out());
    EXPECT_EQ(r.exit_code, 2) << size << ": " << r.err;
    EXPECT_NE(r.err.find("must be WxH"), std::string::npos) << r.err;
  }
  for (const char* grid : {"1x-2x2", "99999999999999999999x2x2", "1x2x2x", "1x2"}) {
    const CommandResult r = run_cli(model() + " --grid " + grid + " --block-inputs " + (dir_ / "bi"));
    EXPECT_EQ(r.exit_code, 2) << grid << ": " << r.err;
    EXPECT_NE(r.err.find("must be TxHxW"), std::string::npos) << r.err;
  }
}

// --block-inputs: with --grid alone nothing runs and DIR gets each block input as transformers'
// blocks receive it (the PyTorch fixture's bytes: integers equal, floats within 1e-5) and a
// manifest; with an input the run's grid is used and the output written as before.
TEST_F(RunCli, BlockInputsForAGridAndForARun) {
  const std::string fixture = std::string(PATCHFUSE_BLOCK_INPUTS_DIR) + "/qwen2_5_vl";
  ASSERT_NO_FATAL_FAILURE(convert(fixture, "w.pfb", "--fusion patch_embeddings"));
  CommandResult r = run_cli((dir_ / "w.pfb") + " --grid 1x12x20 --block-inputs " + (dir_ / "blocks"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  nlohmann::json manifest;
  std::ifstream(dir_ / "blocks/manifest.json") >> manifest;
  EXPECT_EQ(manifest["grid"], nlohmann::json({1, 12, 20}));
  EXPECT_EQ(manifest["config"]["depth"], 4);
  EXPECT_EQ(manifest["config"]["head_dim"], 16);
  ASSERT_EQ(manifest["tensors"].size(), 7u);
  for (const auto& t : manifest["tensors"]) {
    const std::string name = t["name"];
    SCOPED_TRACE(name);
    const std::vector<uint8_t> got = testing::read_bytes(dir_ / ("blocks/" + t["file"].get<std::string>()));
    const std::vector<uint8_t> want = testing::read_bytes(fixture + "/uneven." + name + ".npy");
    ASSERT_EQ(got.size(), want.size());
    if (t["dtype"] != "float32") {
      EXPECT_EQ(got, want);  // same header layout (numpy's) and the same integers
      continue;
    }
    for (size_t i = 128; i + 4 <= got.size(); i += 4) {  // both headers are 128 bytes
      float g = 0, w = 0;
      std::memcpy(&g, got.data() + i, 4);
      std::memcpy(&w, want.data() + i, 4);
      ASSERT_NEAR(g, w, 1e-5);  // the bound for cos/sin
    }
  }
  r = run_cli(model() + " --input " + input() + " --grid 1x1x5 --output " + out() + " --block-inputs " + (dir_ / "b2"));
  EXPECT_EQ(r.exit_code, 1) << "qwen3_vl blocks need whole merge groups: " << r.err;
  r = run_cli(model() + " --input " + input() + " --output " + out() + " --output-stage patches --block-inputs " +
              (dir_ / "b3"));
  EXPECT_NE(r.exit_code, 0);
  // Usage: --block-inputs with no input needs --grid; --output goes with an input only.
  EXPECT_EQ(run_cli((dir_ / "w.pfb") + " --block-inputs " + (dir_ / "b4")).exit_code, 2);
  EXPECT_EQ(run_cli((dir_ / "w.pfb") + " --grid 1x4x4 --block-inputs " + (dir_ / "b4") + " --output " + out()).exit_code, 2);
  EXPECT_EQ(run_cli((dir_ / "w.pfb") + " --grid 1x5x4 --block-inputs " + (dir_ / "b5")).exit_code, 1);
  EXPECT_FALSE(testing::file_exists(dir_ / "b5/manifest.json"));
}

// The int8 issue's acceptance check: the 448x448 PNG with --precision int8 --compare-reference
// reports an error within the int8 bound on every backend that offers int8; the others refuse
// with their reason.
TEST_F(RunCli, Int8ImageWithinItsBound) {
  const std::string fixture = std::string(PATCHFUSE_FRAMES_DIR) + "/qwen2_vl";
  ASSERT_NO_FATAL_FAILURE(convert(fixture, "f.pfb"));
  const std::vector<double> want = read_npy(fixture + "/expected_image_448.npy").value().to_double();
  int ran = 0;
  for (const char* backend : {"auto", "reference", "onednn", "xnnpack", "gemmlowp"}) {
    SCOPED_TRACE(backend);
    const CommandResult r = run_cli((dir_ / "f.pfb") + " --image " + fixture + "/image_448.png --output " + out() +
                                    " --precision int8 --compare-reference --backend " + backend);
    if (r.exit_code != 0) {  // not built, or XNNPACK's measured refusal
      EXPECT_TRUE(r.err.find("not built") != std::string::npos || r.err.find("4.4e-2 of max |ref|") != std::string::npos)
          << r.err;
      EXPECT_STRNE(backend, "auto") << "auto finds an int8 backend on every CPU";
      continue;
    }
    ASSERT_EQ(printed_precision(r.out), PF_PRECISION_INT8) << r.out;
    const size_t at = r.out.find(" = ", r.out.find("vs reference backend (f32): max |diff| "));
    ASSERT_NE(at, std::string::npos) << r.out;
    EXPECT_LE(std::stod(r.out.substr(at + 3)), testing::max_relative_tolerance(PF_PRECISION_INT8)) << r.out;
    EXPECT_TRUE(testing::within_bound(output(), want, PF_PRECISION_INT8)) << r.out;
    ++ran;
  }
  // auto and reference everywhere; oneDNN on x86-64, gemmlowp on ARM (and x86-64 with AVX2)
  EXPECT_GE(ran, 3);
  std::remove(out().c_str());
  // The reference backend offers int8 on every CPU, so the refusal is about the input, not the ISA.
  expect_failure(model() + " --input " + input() + " --output " + out() + " --precision int8 --backend reference",
                 "precision int8 takes frames only");
}

// --weights-cache: written, then mapped with the same output; a process whose oneDNN resolves
// another ISA (ONEDNN_MAX_CPU_ISA) finds the file stale and rebuilds it (the packed layout is the ISA's).
TEST_F(RunCli, WeightsCacheIsKeyedByTheIsaOneDnnResolved) {
  const std::string fixture = std::string(PATCHFUSE_FRAMES_DIR) + "/qwen2_vl";
  ASSERT_NO_FATAL_FAILURE(convert(fixture, "f.pfb"));
  const std::string args = (dir_ / "f.pfb") + " --image " + fixture + "/image_448.png --backend onednn --weights-cache " +
                           (dir_ / "w.cache") + " --output ";
  const CommandResult first = run_cli(args + (dir_ / "out/1.npy"));
  if (first.exit_code != 0 && first.err.find("not built") != std::string::npos) GTEST_SKIP() << "no oneDNN here";
  ASSERT_EQ(first.exit_code, 0) << first.err;
  EXPECT_NE(first.out.find("weights cache: still: written (no cache file)"), std::string::npos) << first.out;
  const CommandResult second = run_cli(args + (dir_ / "out/2.npy"));
  ASSERT_EQ(second.exit_code, 0) << second.err;
  EXPECT_NE(second.out.find("weights cache: still: loaded"), std::string::npos) << second.out;
  EXPECT_EQ(testing::read_bytes(dir_ / "out/1.npy"), testing::read_bytes(dir_ / "out/2.npy"));
  if (first.out.find(", isa avx2]") != std::string::npos) GTEST_SKIP() << "oneDNN resolves AVX2 here already";
  const CommandResult avx2 = testing::run_command("ONEDNN_MAX_CPU_ISA=AVX2 " + std::string(PATCHFUSE_RUN_BIN) + " " + args +
                                                  (dir_ / "out/3.npy"));
  ASSERT_EQ(avx2.exit_code, 0) << avx2.err;
  EXPECT_NE(avx2.out.find("weights cache: still: written (stale: made for 'oneDNN "), std::string::npos) << avx2.out;
  EXPECT_NE(avx2.out.find(" avx2')"), std::string::npos) << "this session's oneDNN resolves avx2: " << avx2.out;
}

// A Conv2d model (the SigLIP P16 golden fixture): patch rows flat or as [N, C, kh, kw], and its
// image through --image, against PyTorch's Conv2d on every backend and path, at the precision each
// run reports.
TEST(RunCliConv2d, RowsAndImageMatchPytorch) {
  const std::string golden = std::string(PATCHFUSE_GOLDEN_DIR) + "/siglip_p16_bias_bf16";
  TempDir dir;
  ASSERT_EQ(testing::run_command(std::string(PATCHFUSE_CONVERT_BIN) + " convert " + golden + " -o " + (dir / "m.pfb") + " --fusion conv2d_patch_embeddings").exit_code, 0);
  auto x = read_npy(golden + "/input.npy");
  auto image = read_npy(golden + "/image.npy");
  ASSERT_TRUE(x.ok() && image.ok());
  const std::vector<double> want = read_npy(golden + "/expected.npy").value().to_double();
  const int64_t n = x->shape[0];
  ASSERT_TRUE(write_npy_f32(dir / "x4.npy", {n, 3, 16, 16}, reinterpret_cast<const float*>(x->bytes.data())).ok());
  // The image as a binary PPM, which stb_image decodes.
  const std::string header = "P6 " + std::to_string(image->shape[1]) + " " + std::to_string(image->shape[0]) + " 255\n";
  std::vector<uint8_t> ppm(header.begin(), header.end());
  ppm.insert(ppm.end(), image->bytes.begin(), image->bytes.end());
  testing::write_bytes(dir / "image.ppm", ppm);

  int ran = 0;
  for (const std::string& input : {"--input " + golden + "/input.npy", "--input " + (dir / "x4.npy"), "--image " + (dir / "image.ppm")}) {
    for (const char* backend : {"reference", "onednn", "xnnpack"}) {
      for (const char* path : {"", " --no-fuse"}) {
        SCOPED_TRACE(input + " " + backend + path);
        const CommandResult r = run_cli((dir / "m.pfb") + " " + input + " --output " + (dir / "y.npy") + " --backend " + backend + path);
        if (r.exit_code != 0) {
          EXPECT_NE(r.err.find("not built"), std::string::npos) << r.err;
          continue;
        }
        if (input.rfind("--image", 0) == 0) {
          EXPECT_NE(r.out.find("image_grid_thw [1, 4, 3]: 12 patches (Conv2d: one image per frame"), std::string::npos) << r.out;
        }
        const pf_precision computed = printed_precision(r.out);
        ASSERT_NE(computed, PF_PRECISION_AUTO) << r.out;
        EXPECT_TRUE(testing::within_bound(read_npy(dir / "y.npy").value().to_double(), want, computed));
        ++ran;
      }
    }
  }
  EXPECT_GE(ran, 6);  // reference, both paths, three inputs
}

}  // namespace
}  // namespace patchfuse
