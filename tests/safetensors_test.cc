// safetensors reading and writing: every dtype, sharded checkpoints, and each malformed header.
#include "converter/safetensors.h"

#include <gtest/gtest.h>

#include <cstring>

#include "converter/checkpoint.h"
#include "tests/support/test_util.h"

namespace patchfuse {
namespace {

using testing::TempDir;

// Raw file: 8-byte little-endian length, header text, then `data_bytes` bytes of 0xAB.
std::vector<uint8_t> raw_file(const std::string& header, size_t data_bytes, uint64_t declared_len = UINT64_MAX) {
  const uint64_t n = declared_len == UINT64_MAX ? header.size() : declared_len;
  std::vector<uint8_t> out(8);
  for (int i = 0; i < 8; ++i) out[i] = static_cast<uint8_t>(n >> (8 * i));
  out.insert(out.end(), header.begin(), header.end());
  out.insert(out.end(), data_bytes, 0xAB);
  return out;
}

std::string open_error(const TempDir& dir, const std::vector<uint8_t>& bytes) {
  testing::write_bytes(dir / "x.safetensors", bytes);
  auto r = SafetensorsFile::open(dir / "x.safetensors");
  return r.ok() ? std::string("(opened)") : r.error().message;
}

TEST(Safetensors, WriteThenReadEveryWeightDtype) {
  TempDir dir;
  const std::vector<uint8_t> f32(4 * 6, 1), f16(2 * 6, 2), bf16(2 * 6, 3);
  std::vector<TensorToWrite> t = {{"b.f16", DType::kF16, {2, 3}, f16.data(), f16.size()},
                                  {"a.f32", DType::kF32, {6}, f32.data(), f32.size()},
                                  {"c.bf16", DType::kBF16, {3, 2}, bf16.data(), bf16.size()}};
  const auto bytes = serialize_safetensors(t, {{"format", "pt"}});
  testing::write_bytes(dir / "m.safetensors", bytes);
  auto st = SafetensorsFile::open(dir / "m.safetensors");
  ASSERT_TRUE(st.ok()) << st.error().message;
  ASSERT_EQ(st->entries().size(), 3u);
  EXPECT_EQ(st->metadata().at("format"), "pt");
  const SafetensorsEntry* e = st->find("b.f16");
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(e->dtype, "F16");
  EXPECT_EQ(e->shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(std::memcmp(st->data(*e), f16.data(), f16.size()), 0);
  EXPECT_EQ(std::memcmp(st->data(*st->find("c.bf16")), bf16.data(), bf16.size()), 0);
  EXPECT_EQ(st->find("missing"), nullptr);
  // The data section starts 8-byte aligned and the bytes are deterministic.
  uint64_t n = 0;
  std::memcpy(&n, bytes.data(), 8);
  EXPECT_EQ(n % 8, 0u);
  EXPECT_EQ(bytes, serialize_safetensors(t, {{"format", "pt"}}));
}

TEST(Safetensors, AcceptsOtherDtypesInTheHeaderAndEmptyTensors) {
  TempDir dir;
  const std::string h =
      R"({"i":{"dtype":"I64","shape":[2],"data_offsets":[0,16]},"e":{"dtype":"F32","shape":[0,4],"data_offsets":[16,16]},)"
      R"("f8":{"dtype":"F8_E4M3","shape":[4],"data_offsets":[16,20]}})";
  EXPECT_EQ(open_error(dir, raw_file(h, 20)), "(opened)");
}

TEST(Safetensors, TruncatedFile) {
  TempDir dir;
  EXPECT_NE(open_error(dir, {1, 2, 3}).find("truncated safetensors file (3 bytes)"), std::string::npos);
}

TEST(Safetensors, HeaderLengthBeyondFile) {
  TempDir dir;
  const std::string msg = open_error(dir, raw_file("{}", 0, 1000));
  EXPECT_NE(msg.find("header length 1000 runs past the end of the file (10 bytes)"), std::string::npos) << msg;
}

TEST(Safetensors, HeaderNotJson) {
  TempDir dir;
  EXPECT_NE(open_error(dir, raw_file("{not json", 0)).find("not a valid JSON object"), std::string::npos);
  EXPECT_NE(open_error(dir, raw_file("[1,2]", 0)).find("must be a JSON object"), std::string::npos);
}

TEST(Safetensors, OffsetsPastTheData) {
  TempDir dir;
  const std::string msg =
      open_error(dir, raw_file(R"({"w":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}})", 15));  // one byte short
  EXPECT_NE(msg.find("tensor w: data_offsets [0, 16] run past the data section (15 bytes)"), std::string::npos) << msg;
}

TEST(Safetensors, OverlappingTensors) {
  TempDir dir;
  const std::string msg = open_error(
      dir, raw_file(R"({"a":{"dtype":"F32","shape":[4],"data_offsets":[0,16]},"b":{"dtype":"F32","shape":[4],"data_offsets":[8,24]}})",
                    24));
  EXPECT_NE(msg.find("tensors a [0, 16) and b [8, 24) overlap"), std::string::npos) << msg;
}

TEST(Safetensors, ByteCountDisagreesWithShapeAndDtype) {
  TempDir dir;
  const std::string msg =
      open_error(dir, raw_file(R"({"w":{"dtype":"BF16","shape":[4],"data_offsets":[0,16]}})", 16));
  EXPECT_NE(msg.find("hold 16 bytes but shape (4) x BF16 needs 8"), std::string::npos) << msg;
}

TEST(Safetensors, ShapeProductOverflow) {
  TempDir dir;
  const std::string msg = open_error(
      dir, raw_file(R"({"w":{"dtype":"F32","shape":[4294967296,4294967296,16],"data_offsets":[0,16]}})", 16));
  EXPECT_NE(msg.find("needs more than 2^64"), std::string::npos) << msg;
}

TEST(Safetensors, BadFields) {
  TempDir dir;
  EXPECT_NE(open_error(dir, raw_file(R"({"w":{"dtype":"Q4","shape":[1],"data_offsets":[0,1]}})", 1))
                .find("dtype 'Q4' is not a safetensors dtype"),
            std::string::npos);
  EXPECT_NE(open_error(dir, raw_file(R"({"w":{"dtype":"F32","shape":[-1],"data_offsets":[0,4]}})", 4))
                .find("shape entry must be a non-negative integer, got -1"),
            std::string::npos);
  EXPECT_NE(open_error(dir, raw_file(R"({"w":{"dtype":"F32","shape":[1],"data_offsets":[4,0]}})", 4))
                .find("has begin > end"),
            std::string::npos);
  EXPECT_NE(open_error(dir, raw_file(R"({"w":{"dtype":"F32","shape":[1]}})", 4)).find("'data_offsets' must be"),
            std::string::npos);
  EXPECT_NE(open_error(dir, raw_file(R"({"__metadata__":{"a":1}})", 0)).find("__metadata__ value 'a' must be a string"),
            std::string::npos);
}

TEST(Checkpoint, ShardedIndexIsFollowedLazily) {
  TempDir dir;
  const std::vector<uint8_t> a(16, 1), b(8, 2);
  testing::write_bytes(dir / "s1.safetensors", serialize_safetensors({{"x.a", DType::kF32, {4}, a.data(), 16}}, {}));
  testing::write_bytes(dir / "s2.safetensors", serialize_safetensors({{"x.b", DType::kBF16, {4}, b.data(), 8}}, {}));
  testing::write_text(dir / "model.safetensors.index.json",
                      R"({"metadata":{},"weight_map":{"x.a":"s1.safetensors","x.b":"s2.safetensors"}})");
  testing::write_text(dir / "config.json", "{}");
  auto c = Checkpoint::open(dir.path(), "");
  ASSERT_TRUE(c.ok()) << c.error().message;
  EXPECT_EQ(c->tensor_names(), (std::vector<std::string>{"x.a", "x.b"}));
  auto t = c->tensor("x.b");
  ASSERT_TRUE(t.ok()) << t.error().message;
  EXPECT_EQ(t.value().entry->dtype, "BF16");
  EXPECT_EQ(t.value().data[0], 2);
  EXPECT_EQ(c->config_path(), dir / "config.json");
}

TEST(Checkpoint, IndexErrors) {
  TempDir dir;
  testing::write_text(dir / "config.json", "{}");
  testing::write_text(dir / "model.safetensors.index.json", R"({"weight_map":{"x":"../evil.safetensors"}})");
  auto c = Checkpoint::open(dir.path(), "");
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.error().message.find("must be a plain file name"), std::string::npos);

  const std::vector<uint8_t> a(16, 1);
  testing::write_bytes(dir / "s1.safetensors", serialize_safetensors({{"x.a", DType::kF32, {4}, a.data(), 16}}, {}));
  testing::write_text(dir / "model.safetensors.index.json", R"({"weight_map":{"x.z":"s1.safetensors"}})");
  auto c2 = Checkpoint::open(dir.path(), "");
  ASSERT_TRUE(c2.ok());
  auto t = c2->tensor("x.z");
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.error().message.find("that shard has no such tensor"), std::string::npos);

  testing::write_text(dir / "model.safetensors.index.json", R"({"weight_map":{"x.z":"missing.safetensors"}})");
  auto c3 = Checkpoint::open(dir.path(), "");
  ASSERT_TRUE(c3.ok());
  EXPECT_FALSE(c3->tensor("x.z").ok());

  TempDir empty;
  auto c4 = Checkpoint::open(empty.path(), "");
  ASSERT_FALSE(c4.ok());
  EXPECT_NE(c4.error().message.find("neither model.safetensors nor"), std::string::npos);
}

}  // namespace
}  // namespace patchfuse
