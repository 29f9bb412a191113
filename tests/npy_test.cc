// .npy reading and writing, and the errors for files patchfuse-run cannot use.
#include "cli/npy.h"

#include <gtest/gtest.h>

#include "tests/support/test_util.h"

namespace patchfuse {
namespace {

using testing::TempDir;

std::vector<uint8_t> npy_bytes(const std::string& header_dict, size_t data_bytes) {
  std::string h = header_dict;
  h.append((64 - (10 + h.size() + 1) % 64) % 64, ' ');
  h += '\n';
  std::string f("\x93NUMPY\x01\x00", 8);
  f += static_cast<char>(h.size());
  f += '\0';
  f += h;
  f.append(data_bytes, '\0');
  return std::vector<uint8_t>(f.begin(), f.end());
}

std::string error_of(const TempDir& dir, const std::vector<uint8_t>& bytes) {
  testing::write_bytes(dir / "x.npy", bytes);
  auto r = read_npy(dir / "x.npy");
  return r.ok() ? "(accepted)" : r.error().message;
}

TEST(Npy, WriteThenRead) {
  TempDir dir;
  const std::vector<float> v = {1.5f, -2.0f, 3.25f, 0.0f, 7.0f, -1e-3f};
  ASSERT_TRUE(write_npy_f32(dir / "a.npy", {2, 3}, v.data()).ok());
  const auto bytes = testing::read_bytes(dir / "a.npy");
  EXPECT_EQ((bytes.size() - 6 * 4) % 64, 0u);  // data starts 64-byte aligned, like numpy writes it
  auto a = read_npy(dir / "a.npy");
  ASSERT_TRUE(a.ok()) << a.error().message;
  EXPECT_EQ(a->descr, "<f4");
  EXPECT_EQ(a->shape, (std::vector<int64_t>{2, 3}));
  const auto d = a->to_double();
  for (size_t i = 0; i < v.size(); ++i) EXPECT_EQ(d[i], static_cast<double>(v[i]));
  ASSERT_TRUE(write_npy_f32(dir / "b.npy", {4}, v.data()).ok());
  EXPECT_EQ(read_npy(dir / "b.npy")->shape, (std::vector<int64_t>{4}));
}

TEST(Npy, Errors) {
  TempDir dir;
  EXPECT_NE(error_of(dir, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10}).find("not a .npy file"), std::string::npos);
  EXPECT_NE(error_of(dir, npy_bytes("{'descr': '<i4', 'fortran_order': False, 'shape': (2,), }", 8))
                .find("dtype '<i4' is not float32"),
            std::string::npos);
  EXPECT_NE(error_of(dir, npy_bytes("{'descr': '>f4', 'fortran_order': False, 'shape': (2,), }", 8))
                .find("dtype '>f4'"),
            std::string::npos);
  EXPECT_NE(error_of(dir, npy_bytes("{'descr': '<f4', 'fortran_order': True, 'shape': (2, 2), }", 16))
                .find("fortran_order is True"),
            std::string::npos);
  EXPECT_NE(error_of(dir, npy_bytes("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }", 20))
                .find("needs 24 bytes of data but the file has 20"),
            std::string::npos);
  EXPECT_NE(error_of(dir, npy_bytes("{'descr': '<f4', 'fortran_order': False, 'shape': (2, x), }", 8))
                .find("shape entry 'x'"),
            std::string::npos);
  EXPECT_EQ(error_of(dir, npy_bytes("{'descr': '<f8', 'fortran_order': False, 'shape': (), }", 8)), "(accepted)");
  EXPECT_FALSE(read_npy(dir / "missing.npy").ok());
  // The header length at its bound: a file that ends one byte before the header does.
  std::vector<uint8_t> short_header = npy_bytes("{'descr': '<f8', 'fortran_order': False, 'shape': (), }", 0);
  short_header.pop_back();
  EXPECT_NE(error_of(dir, short_header).find("header length 118 runs past the end of the file"), std::string::npos)
      << error_of(dir, short_header);
}

// Long headers: the old std::regex parse recursed per character and overflowed the stack on a
// 60 kB 'descr' (that file is tests/fuzz/regressions/fuzz_npy/, replayed by FuzzReplay.fuzz_npy).
TEST(Npy, LongHeadersAreParsedOrRefusedWithoutCrashing) {
  TempDir dir;
  auto v2 = [](const std::string& header) {
    std::string f("\x93NUMPY\x02\x00", 8);
    for (int i = 0; i < 4; ++i) f += static_cast<char>((header.size() + 1) >> (8 * i));
    f += header + "\n";
    return std::vector<uint8_t>(f.begin(), f.end());
  };
  EXPECT_NE(error_of(dir, v2("{'descr': '" + std::string(60000, 'a') + "', 'fortran_order': False, 'shape': (), }"))
                .find("is not float32"),
            std::string::npos);
  const std::string padded_shape = "{'descr': '<f8', 'fortran_order': False, 'shape': (" + std::string(60000, ' ') + "), }";
  std::vector<uint8_t> ok = v2(padded_shape);
  ok.resize(ok.size() + 8, 0);  // one float64 for shape ()
  EXPECT_EQ(error_of(dir, ok), "(accepted)");
  EXPECT_NE(error_of(dir, v2("{'descr': '<f4', " + std::string(70000, ' ') + "}")).find("exceeds 65536 bytes"),
            std::string::npos);
}

}  // namespace
}  // namespace patchfuse
