#include "cli/npy.h"

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "runtime/core/mapped_file.h"
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
    } else if (descr == "|u1") {
      out[i] = bytes[i];
    } else {
      std::memcpy(&out[i], bytes.data() + 8 * i, 8);
    }
  }
  return out;
}

namespace {

// NumPy's own reader refuses headers over 10,000 bytes by default; ours are a few dozen.
constexpr size_t kMaxHeaderBytes = 65536;

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

// Where the value of 'key' starts in the header dict ("{'descr': '<f4', ...}"), or npos. A plain
// scan, not std::regex: libstdc++'s regex recurses per character and overflows the stack on a
// long header (a 60 kB 'descr' crashed it).
size_t value_of(const std::string& h, const std::string& key) {
  size_t at = h.find("'" + key + "'");
  if (at == std::string::npos) return at;
  at += key.size() + 2;
  while (at < h.size() && is_space(h[at])) ++at;
  if (at >= h.size() || h[at] != ':') return std::string::npos;
  ++at;
  while (at < h.size() && is_space(h[at])) ++at;
  return at;
}

Status parse_header(const std::string& path, const std::string& h, NpyArray& a) {
  size_t at = value_of(h, "descr");
  PF_CHECK(at != std::string::npos && at < h.size() && h[at] == '\'', Code::kInvalidArgument, path,
           ": header has no 'descr' string");
  const size_t close = h.find('\'', at + 1);
  PF_CHECK(close != std::string::npos, Code::kInvalidArgument, path, ": header's 'descr' string is not closed");
  a.descr = h.substr(at + 1, close - at - 1);
  PF_CHECK(a.descr == "<f4" || a.descr == "<f8" || a.descr == "|u1", Code::kInvalidArgument, path, ": dtype '",
           a.descr.substr(0, 32), "' is not float32 ('<f4'), float64 ('<f8') or uint8 ('|u1')");

  at = value_of(h, "fortran_order");
  PF_CHECK(at != std::string::npos && (h.compare(at, 4, "True") == 0 || h.compare(at, 5, "False") == 0),
           Code::kInvalidArgument, path, ": header has no 'fortran_order': True or False");
  PF_CHECK(h.compare(at, 5, "False") == 0, Code::kInvalidArgument, path, ": fortran_order is True; arrays must be C order");

  at = value_of(h, "shape");
  PF_CHECK(at != std::string::npos && at < h.size() && h[at] == '(', Code::kInvalidArgument, path,
           ": header has no 'shape' tuple");
  const size_t end = h.find(')', at);
  PF_CHECK(end != std::string::npos, Code::kInvalidArgument, path, ": header's 'shape' tuple is not closed");
  std::string item;
  for (size_t i = at + 1; i <= end; ++i) {
    if (i < end && h[i] != ',') {
      if (!is_space(h[i])) item += h[i];
      continue;
    }
    if (item.empty()) continue;  // "(n,)" and "()"
    PF_CHECK(item.size() <= 20 && item.find_first_not_of("0123456789") == std::string::npos, Code::kInvalidArgument,
             path, ": shape entry '", item.substr(0, 32), "' is not a non-negative integer");
    errno = 0;
    const unsigned long long d = std::strtoull(item.c_str(), nullptr, 10);
    PF_CHECK(errno == 0 && d <= static_cast<unsigned long long>(INT64_MAX), Code::kInvalidArgument, path,
             ": shape entry ", item, " exceeds 2^63 - 1");
    a.shape.push_back(static_cast<int64_t>(d));
    item.clear();
  }
  return {};
}

}  // namespace

// Checks the data size the header implies against the file's size, so a header that claims
// more than the file holds never causes an allocation of that size. A regular file only, as every
// input (MappedFile): a directory, FIFO or /dev/zero is refused by name.
Result<NpyArray> read_npy(const std::string& path) {
  PF_ASSIGN_OR_RETURN(MappedFile file, MappedFile::open(path, MappedFile::Reading::kParts));
  const uint8_t* f = file.data();
  const uint64_t file_size = file.size();
  PF_CHECK(file_size >= 10 && std::memcmp(f, "\x93NUMPY", 6) == 0, Code::kInvalidArgument, path,
           ": not a .npy file (missing the \\x93NUMPY magic)");
  const int major = f[6];
  PF_CHECK(major >= 1 && major <= 3, Code::kInvalidArgument, path, ": .npy format version ", major,
           " is not 1, 2 or 3");
  const size_t len_bytes = major == 1 ? 2 : 4;
  PF_CHECK(file_size >= 8 + len_bytes, Code::kInvalidArgument, path, ": truncated .npy header");
  size_t header_len = 0;
  for (size_t i = 0; i < len_bytes; ++i) header_len |= size_t{f[8 + i]} << (8 * i);
  PF_CHECK(header_len <= kMaxHeaderBytes, Code::kInvalidArgument, path, ": header length ", header_len,
           " exceeds ", kMaxHeaderBytes, " bytes");
  const uint64_t data_start = 8 + len_bytes + header_len;
  PF_CHECK(data_start <= file_size, Code::kInvalidArgument, path, ": header length ", header_len,
           " runs past the end of the file");
  const std::string header(reinterpret_cast<const char*>(f) + 8 + len_bytes, header_len);

  NpyArray a;
  PF_RETURN_IF_ERROR(parse_header(path, header, a));
  const size_t elem = a.descr == "<f4" ? 4 : a.descr == "|u1" ? 1 : 8;
  const auto want = checked_mul(checked_product(a.shape).value_or(UINT64_MAX), elem);
  PF_CHECK(want && *want == file_size - data_start, Code::kInvalidArgument, path, ": shape ", format_dims(a.shape),
           " x ", elem, " bytes needs ", want ? cat(*want) : std::string("more than 2^64"),
           " bytes of data but the file has ", file_size - data_start);
  a.bytes.assign(f + data_start, f + file_size);
  return a;
}

Status write_npy(const std::string& path, const std::string& descr, const std::vector<int64_t>& shape, const void* data) {
  const size_t item = descr == "<f8" || descr == "<i8" ? 8 : descr == "|u1" ? 1 : 4;
  std::string dims;
  for (int64_t d : shape) dims += cat(d, ",");
  if (shape.size() > 1) dims.pop_back();  // numpy writes (n,) for 1-D and (a, b) otherwise
  std::string header = cat("{'descr': '", descr, "', 'fortran_order': False, 'shape': (", dims, "), }");
  header.append((64 - (10 + header.size() + 1) % 64) % 64, ' ');  // data starts 64-byte aligned, as numpy does
  header += '\n';
  std::string preamble("\x93NUMPY\x01\x00", 8);
  preamble += static_cast<char>(header.size() & 0xFF);
  preamble += static_cast<char>(header.size() >> 8);
  const size_t n = checked_product(shape).value_or(0);
  std::vector<uint8_t> out(preamble.size() + header.size() + item * n);
  std::memcpy(out.data(), preamble.data(), preamble.size());
  std::memcpy(out.data() + preamble.size(), header.data(), header.size());
  if (n) std::memcpy(out.data() + preamble.size() + header.size(), data, item * n);
  return write_file_atomically(path, out);
}

Status write_npy_f32(const std::string& path, const std::vector<int64_t>& shape, const float* data) {
  return write_npy(path, "<f4", shape, data);
}

}  // namespace patchfuse
