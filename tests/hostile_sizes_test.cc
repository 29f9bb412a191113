// Inputs whose headers claim absurd sizes: each tool must refuse them with one line and exit 1,
// leave no output, and never allocate what the header claims (peak RSS stays under 64 MB, read
// from the tool's own rusage).
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>

#include "converter/sample_checkpoint.h"
#include "runtime/model/model_view.h"
#include "tests/support/test_util.h"

namespace patchfuse {
namespace {

using testing::CommandResult;

constexpr double kPeakRssLimitMb = 64.0;

class HostileSizes : public ::testing::Test {
 protected:
  void SetUp() override {
    SampleSpec spec;
    spec.arch = find_architecture("qwen2_vl");
    spec.embed_dim = 16;
    spec.patches = 2;
    ASSERT_TRUE(write_sample_checkpoint(dir_ / "ckpt", spec).ok());
    ASSERT_EQ(std::system(("mkdir -p '" + (dir_ / "out") + "'").c_str()), 0);
    ASSERT_EQ(testing::run_command(std::string(PATCHFUSE_CONVERT_BIN) + " convert " + (dir_ / "ckpt") + " -o " +
                                   (dir_ / "m.pfb")).exit_code, 0);
  }

  // Exit 1, one line naming `needle`, nothing written to out/, and a small peak RSS.
  void expect_refused(const std::string& command, const std::string& needle) {
    const CommandResult r = testing::run_command(command);
    EXPECT_EQ(r.exit_code, 1) << command << "\n" << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    EXPECT_NE(r.err.find(needle), std::string::npos) << r.err;
    EXPECT_TRUE(testing::list_dir(dir_ / "out").empty());
    if (!testing::kSanitized) {
      EXPECT_LT(r.peak_rss_mb, kPeakRssLimitMb) << command;
    }
  }

  // A safetensors file whose only tensor is the patch embedding with this dtype, shape and offsets.
  void write_safetensors(const std::string& path, const std::string& shape, const std::string& offsets) {
    const std::string header = R"({"visual.patch_embed.proj.weight":{"dtype":"BF16","shape":[)" + shape +
                               R"(],"data_offsets":[)" + offsets + "]}}";
    std::string bytes(8, '\0');
    for (int i = 0; i < 8; ++i) bytes[i] = static_cast<char>(header.size() >> (8 * i));
    testing::write_text(path, bytes + header + std::string(64, '\0'));
  }

  // A float32 .npy whose header claims `shape` over `data_bytes` bytes of data.
  void write_npy_header(const std::string& path, const std::string& shape, size_t data_bytes) {
    std::string header = "{'descr': '<f4', 'fortran_order': False, 'shape': (" + shape + "), }";
    header.resize(((10 + header.size() + 1 + 63) / 64) * 64 - 10 - 1, ' ');
    header += '\n';
    std::string bytes = "\x93NUMPY\x01";
    bytes += '\0';
    bytes += static_cast<char>(header.size() & 0xff);
    bytes += static_cast<char>(header.size() >> 8);
    testing::write_text(path, bytes + header + std::string(data_bytes, '\0'));
  }

  std::string convert(const std::string& input) const {
    return std::string(PATCHFUSE_CONVERT_BIN) + " convert " + input + " --config " + (dir_ / "ckpt/config.json") +
           " -o " + (dir_ / "out/m.pfb");
  }
  std::string run(const std::string& model, const std::string& input) const {
    return std::string(PATCHFUSE_RUN_BIN) + " " + model + " --input " + input + " --output " + (dir_ / "out/y.npy");
  }
  testing::TempDir dir_;
};

TEST_F(HostileSizes, SafetensorsTensorOfTwoToTheSixtyElements) {
  write_safetensors(dir_ / "huge.safetensors", "1152921504606846976", "0,64");  // 2^60
  expect_refused(convert(dir_ / "huge.safetensors"), "visual.patch_embed.proj.weight: data_offsets [0, 64] hold 64 bytes but shape (1152921504606846976) x BF16 needs 2305843009213693952");
}

TEST_F(HostileSizes, SafetensorsShapeWhoseProductOverflows) {
  write_safetensors(dir_ / "overflow.safetensors", "4294967296,4294967296,16", "0,64");  // 2^68 elements
  expect_refused(convert(dir_ / "overflow.safetensors"), "x BF16 needs more than 2^64");
}

TEST_F(HostileSizes, SafetensorsOffsetsPastTheFile) {
  write_safetensors(dir_ / "offsets.safetensors", "1280,3,2,14,14", "0,9007199254740992");  // 2^53 bytes
  expect_refused(convert(dir_ / "offsets.safetensors"), "data_offsets [0, 9007199254740992] run past the data section");
}

TEST_F(HostileSizes, NpyShapeWhoseProductOverflows) {
  write_npy_header(dir_ / "x.npy", "4294967296, 4294967296, 1176", 64);  // past 2^64 elements
  expect_refused(run(dir_ / "m.pfb", dir_ / "x.npy"), "x.npy: shape (4294967296,4294967296,1176) x 4 bytes needs more than 2^64");
}

// N x patch_volume x 4 bytes past 2^64 with a shape whose element count alone fits.
TEST_F(HostileSizes, NpyRowsTimesRowBytesOverflow) {
  write_npy_header(dir_ / "x.npy", "4611686018427387904, 1176", 64);  // 2^62 rows
  expect_refused(run(dir_ / "m.pfb", dir_ / "x.npy"), "x.npy: shape (4611686018427387904,1176) x 4 bytes needs more than 2^64");
}

TEST_F(HostileSizes, NpyClaimingMoreRowsThanItHolds) {
  write_npy_header(dir_ / "x.npy", "1099511627776, 1176", 1176 * 4);  // 2^40 rows, data for one
  expect_refused(run(dir_ / "m.pfb", dir_ / "x.npy"), "bytes of data but the file has 4704");
}

// The weight's byte vector claims 2^31 - 1 bytes in a file of a few kilobytes.
TEST_F(HostileSizes, PfbVectorClaimingMoreBytesThanTheFile) {
  std::vector<uint8_t> bytes = testing::read_bytes(dir_ / "m.pfb");
  const ModuleView v = read_model(bytes.data(), bytes.size(), "m.pfb").value().modules.at(0);
  const size_t length_at = static_cast<size_t>(v.weight.data - bytes.data()) - 4;  // FlatBuffers' uint32 length prefix
  const uint32_t huge = 0x7fffffff;
  std::memcpy(bytes.data() + length_at, &huge, 4);
  testing::write_bytes(dir_ / "huge.pfb", bytes);
  expect_refused(run(dir_ / "huge.pfb", dir_ / "ckpt/pixel_values.npy"), "huge.pfb: FlatBuffers verification failed");
  expect_refused(std::string(PATCHFUSE_CONVERT_BIN) + " inspect " + (dir_ / "huge.pfb"), "huge.pfb");
  expect_refused(std::string(PATCHFUSE_CONVERT_BIN) + " export " + (dir_ / "huge.pfb") + " -o " + (dir_ / "out/w.safetensors"),
                 "huge.pfb");
}

// A JSON input that is not a regular file is refused by name: a directory was read as bad JSON,
// and /dev/zero or a FIFO was read without end.
TEST_F(HostileSizes, JsonInputsThatAreNotRegularFiles) {
  const std::string config = dir_ / "ckpt/config.json";
  const std::string convert = std::string(PATCHFUSE_CONVERT_BIN) + " convert " + (dir_ / "ckpt") + " -o " + (dir_ / "out/m.pfb");
  const std::string needle = "config.json: cannot read the model config (pass --config CONFIG.json): not a regular file";
  ASSERT_EQ(std::remove(config.c_str()), 0);
  ASSERT_EQ(::mkdir(config.c_str(), 0700), 0);
  expect_refused(convert, needle);
  ASSERT_EQ(::rmdir(config.c_str()), 0);
  ASSERT_EQ(::symlink("/dev/zero", config.c_str()), 0);
  expect_refused(convert, needle);
  ASSERT_EQ(std::remove(config.c_str()), 0);
  ASSERT_EQ(::mkfifo(config.c_str(), 0600), 0);
  expect_refused(convert, needle);
}

}  // namespace
}  // namespace patchfuse
