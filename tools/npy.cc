#include "tools/npy.h"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <regex>
#include <sstream>

#include "runtime/core/output_file.h"
#include "runtime/core/checked_math.h"
#include "runtime/rules/fusion_rules.h"

namespace patchfuse {

size_t NpyArray::count() const { return checked_product(shape).value_or(0); }

std::vector<double> NpyArray::to_double() const {
  std::vector<double> out(count());
  for (size_t i = 0; i < out.size(); ++i) {
    if (descr == "<f4") {
      float v;
      std::memcpy(&v, bytes.data() + 4 * i, 4);
      out[i] = v;
    } else {
      std::memcpy(&out[i], bytes.data() + 8 * i, 8);
    }
  }
  return out;
}

Result<NpyArray> read_npy(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  PF_CHECK(in, Code::kIoError, path, ": cannot open");
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string f = ss.str();
  PF_CHECK(f.size() >= 10 && f.compare(0, 6, "\x93NUMPY") == 0, Code::kInvalidArgument, path,
           ": not a .npy file (missing the \\x93NUMPY magic)");
  const int major = static_cast<uint8_t>(f[6]);
  PF_CHECK(major >= 1 && major <= 3, Code::kInvalidArgument, path, ": .npy format version ", major,
           " is not 1, 2 or 3");
  const size_t len_bytes = major == 1 ? 2 : 4;
  PF_CHECK(f.size() >= 8 + len_bytes, Code::kInvalidArgument, path, ": truncated .npy header");
  size_t header_len = 0;
  for (size_t i = 0; i < len_bytes; ++i) header_len |= size_t{static_cast<uint8_t>(f[8 + i])} << (8 * i);
  const size_t data_start = 8 + len_bytes + header_len;
  PF_CHECK(data_start <= f.size(), Code::kInvalidArgument, path, ": header length ", header_len,
           " runs past the end of the file");
  const std::string header = f.substr(8 + len_bytes, header_len);

  std::smatch m;
  PF_CHECK(std::regex_search(header, m, std::regex(R"('descr'\s*:\s*'([^']*)')")), Code::kInvalidArgument, path,
           ": header has no 'descr'");
  NpyArray a;
  a.descr = m[1];
  PF_CHECK(a.descr == "<f4" || a.descr == "<f8", Code::kInvalidArgument, path, ": dtype '", a.descr,
           "' is not float32 ('<f4') or float64 ('<f8')");
  PF_CHECK(std::regex_search(header, m, std::regex(R"('fortran_order'\s*:\s*(True|False))")), Code::kInvalidArgument,
           path, ": header has no 'fortran_order'");
  PF_CHECK(m[1] == "False", Code::kInvalidArgument, path, ": fortran_order is True; arrays must be C order");
  PF_CHECK(std::regex_search(header, m, std::regex(R"('shape'\s*:\s*\(([^)]*)\))")), Code::kInvalidArgument, path,
           ": header has no 'shape'");
  std::stringstream dims(m[1].str());
  std::string item;
  while (std::getline(dims, item, ',')) {
    item = std::regex_replace(item, std::regex(R"(^\s+|\s+$)"), "");
    if (item.empty()) continue;
    PF_CHECK(std::regex_match(item, std::regex(R"(\d+)")), Code::kInvalidArgument, path, ": shape entry '", item,
             "' is not a non-negative integer");
    errno = 0;
    const unsigned long long d = std::strtoull(item.c_str(), nullptr, 10);
    PF_CHECK(errno == 0 && d <= static_cast<unsigned long long>(INT64_MAX), Code::kInvalidArgument, path,
             ": shape entry ", item, " exceeds 2^63 - 1");
    a.shape.push_back(static_cast<int64_t>(d));
  }
  const size_t elem = a.descr == "<f4" ? 4 : 8;
  const auto want = checked_mul(checked_product(a.shape).value_or(UINT64_MAX), elem);
  PF_CHECK(want && *want == f.size() - data_start, Code::kInvalidArgument, path, ": shape ", format_dims(a.shape),
           " x ", elem, " bytes needs ", want ? cat(*want) : std::string("more than 2^64"), " bytes of data but the file has ",
           f.size() - data_start);
  a.bytes.assign(f.begin() + static_cast<std::ptrdiff_t>(data_start), f.end());
  return a;
}

Status write_npy_f32(const std::string& path, const std::vector<int64_t>& shape, const float* data) {
  std::string dims;
  for (int64_t d : shape) dims += cat(d, ",");
  if (shape.size() > 1) dims.pop_back();  // numpy writes (n,) for 1-D and (a, b) otherwise
  std::string header = cat("{'descr': '<f4', 'fortran_order': False, 'shape': (", dims, "), }");
  header.append((64 - (10 + header.size() + 1) % 64) % 64, ' ');  // data starts 64-byte aligned, as numpy does
  header += '\n';
  std::string preamble("\x93NUMPY\x01\x00", 8);
  preamble += static_cast<char>(header.size() & 0xFF);
  preamble += static_cast<char>(header.size() >> 8);
  const size_t n = checked_product(shape).value_or(0);
  std::vector<uint8_t> out(preamble.size() + header.size() + 4 * n);
  std::memcpy(out.data(), preamble.data(), preamble.size());
  std::memcpy(out.data() + preamble.size(), header.data(), header.size());
  if (n) std::memcpy(out.data() + preamble.size() + header.size(), data, 4 * n);
  return write_file_atomically(path, out);
}

}  // namespace patchfuse
