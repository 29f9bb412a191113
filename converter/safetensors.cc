#include "converter/safetensors.h"

#include <algorithm>
#include <cstring>
#include <nlohmann/json.hpp>

#include "runtime/core/checked_math.h"
#include "runtime/rules/fusion_rules.h"

namespace patchfuse {

using nlohmann::json;

// Same bound as the reference Rust implementation: a larger header is treated as hostile.
constexpr uint64_t kMaxHeaderBytes = 100'000'000;

size_t safetensors_dtype_size(std::string_view dtype) {
  static const std::pair<std::string_view, size_t> table[] = {
      {"BOOL", 1}, {"U8", 1},  {"I8", 1},  {"F8_E4M3", 1}, {"F8_E5M2", 1}, {"I16", 2}, {"U16", 2}, {"F16", 2},
      {"BF16", 2}, {"I32", 4}, {"U32", 4}, {"F32", 4},     {"I64", 8},     {"U64", 8}, {"F64", 8}};
  for (const auto& [name, size] : table) {
    if (name == dtype) return size;
  }
  return 0;
}

static Result<int64_t> read_nonneg_int(const json& v, const std::string& where) {
  PF_CHECK(v.is_number_unsigned() || (v.is_number_integer() && v.get<int64_t>() >= 0), Code::kInvalidModel,
           where, " must be a non-negative integer, got ", v.dump());
  const uint64_t u = v.get<uint64_t>();
  PF_CHECK(u <= static_cast<uint64_t>(INT64_MAX), Code::kInvalidModel, where, " value ", u, " is too large");
  return static_cast<int64_t>(u);
}

static Result<SafetensorsEntry> parse_entry(const std::string& file, const std::string& name, const json& v,
                                            uint64_t data_size) {
  const std::string where = cat(file, ": tensor ", name);
  PF_CHECK(v.is_object(), Code::kInvalidModel, where, ": header entry must be an object, got ", v.dump());
  SafetensorsEntry e;
  e.name = name;
  PF_CHECK(v.contains("dtype") && v["dtype"].is_string(), Code::kInvalidModel, where,
           ": 'dtype' must be a string");
  e.dtype = v["dtype"].get<std::string>();
  const size_t elem = safetensors_dtype_size(e.dtype);
  PF_CHECK(elem != 0, Code::kInvalidModel, where, ": dtype '", e.dtype, "' is not a safetensors dtype");
  PF_CHECK(v.contains("shape") && v["shape"].is_array(), Code::kInvalidModel, where, ": 'shape' must be an array");
  for (const json& d : v["shape"]) {
    PF_ASSIGN_OR_RETURN(int64_t dim, read_nonneg_int(d, where + ": shape entry"));
    e.shape.push_back(dim);
  }
  PF_CHECK(v.contains("data_offsets") && v["data_offsets"].is_array() && v["data_offsets"].size() == 2,
           Code::kInvalidModel, where, ": 'data_offsets' must be [begin, end]");
  PF_ASSIGN_OR_RETURN(int64_t begin, read_nonneg_int(v["data_offsets"][0], where + ": data_offsets[0]"));
  PF_ASSIGN_OR_RETURN(int64_t end, read_nonneg_int(v["data_offsets"][1], where + ": data_offsets[1]"));
  e.begin = static_cast<uint64_t>(begin);
  e.end = static_cast<uint64_t>(end);
  PF_CHECK(e.begin <= e.end, Code::kInvalidModel, where, ": data_offsets [", e.begin, ", ", e.end,
           "] has begin > end");
  PF_CHECK(e.end <= data_size, Code::kInvalidModel, where, ": data_offsets [", e.begin, ", ", e.end,
           "] run past the data section (", data_size, " bytes)");
  const auto elems = checked_product(e.shape);
  const auto want = elems ? checked_mul(*elems, elem) : std::nullopt;
  PF_CHECK(want && *want == e.end - e.begin, Code::kInvalidModel, where, ": data_offsets [", e.begin, ", ", e.end,
           "] hold ", e.end - e.begin, " bytes but shape ", format_dims(e.shape), " x ", e.dtype, " needs ",
           want ? cat(*want) : std::string("more than 2^64"));
  return e;
}

Result<SafetensorsFile> SafetensorsFile::open(const std::string& path) {
  PF_ASSIGN_OR_RETURN(MappedFile file, MappedFile::open(path, MappedFile::Reading::kParts));
  const uint64_t size = file.size();
  PF_CHECK(size >= 8, Code::kInvalidModel, path, ": truncated safetensors file (", size,
           " bytes); it must start with an 8-byte header length");
  uint64_t header_len = 0;
  for (int i = 7; i >= 0; --i) header_len = (header_len << 8) | file.data()[i];  // little-endian
  PF_CHECK(header_len <= size - 8, Code::kInvalidModel, path, ": header length ", header_len,
           " runs past the end of the file (", size, " bytes)");
  PF_CHECK(header_len <= kMaxHeaderBytes, Code::kInvalidModel, path, ": header length ", header_len,
           " exceeds the limit of ", kMaxHeaderBytes, " bytes");
  const char* h = reinterpret_cast<const char*>(file.data() + 8);
  PF_CHECK(header_len >= 2 && h[0] == '{', Code::kInvalidModel, path, ": header must be a JSON object starting with '{'");
  const json header = json::parse(h, h + header_len, nullptr, /*allow_exceptions=*/false);
  PF_CHECK(!header.is_discarded() && header.is_object(), Code::kInvalidModel, path,
           ": header is not a valid JSON object");

  SafetensorsFile st(std::move(file), 8 + header_len);
  const uint64_t data_size = size - 8 - header_len;
  for (const auto& [key, value] : header.items()) {
    if (key == "__metadata__") {
      PF_CHECK(value.is_object(), Code::kInvalidModel, path, ": __metadata__ must be an object of strings");
      for (const auto& [mk, mv] : value.items()) {
        PF_CHECK(mv.is_string(), Code::kInvalidModel, path, ": __metadata__ value '", mk, "' must be a string, got ",
                 mv.dump());
        st.metadata_[mk] = mv.get<std::string>();
      }
      continue;
    }
    PF_ASSIGN_OR_RETURN(SafetensorsEntry e, parse_entry(path, key, value, data_size));
    st.entries_.push_back(std::move(e));
  }
  // Overlap check on the byte ranges, sorted by start; empty tensors occupy nothing.
  std::vector<const SafetensorsEntry*> by_offset;
  for (const SafetensorsEntry& e : st.entries_) {
    if (e.end > e.begin) by_offset.push_back(&e);
  }
  std::sort(by_offset.begin(), by_offset.end(),
            [](const SafetensorsEntry* a, const SafetensorsEntry* b) { return a->begin < b->begin; });
  for (size_t i = 1; i < by_offset.size(); ++i) {
    const SafetensorsEntry& a = *by_offset[i - 1];
    const SafetensorsEntry& b = *by_offset[i];
    PF_CHECK(b.begin >= a.end, Code::kInvalidModel, path, ": tensors ", a.name, " [", a.begin, ", ", a.end, ") and ",
             b.name, " [", b.begin, ", ", b.end, ") overlap; tensors must not share bytes");
  }
  return st;
}

const SafetensorsEntry* SafetensorsFile::find(std::string_view name) const {
  auto it = std::lower_bound(entries_.begin(), entries_.end(), name,
                             [](const SafetensorsEntry& e, std::string_view n) { return e.name < n; });
  return it != entries_.end() && it->name == name ? &*it : nullptr;
}

std::vector<uint8_t> serialize_safetensors(std::vector<TensorToWrite> tensors,
                                           const std::map<std::string, std::string>& metadata) {
  std::sort(tensors.begin(), tensors.end(), [](const TensorToWrite& a, const TensorToWrite& b) { return a.name < b.name; });
  json header = json::object();  // std::map-backed: keys come out sorted, so the bytes are deterministic
  if (!metadata.empty()) header["__metadata__"] = metadata;
  uint64_t offset = 0;
  for (const TensorToWrite& t : tensors) {
    header[t.name] = {{"dtype", dtype_name(t.dtype)}, {"shape", t.shape}, {"data_offsets", {offset, offset + t.bytes}}};
    offset += t.bytes;
  }
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');  // the data section starts 8-byte aligned
  std::vector<uint8_t> out(8 + text.size() + offset);
  const uint64_t n = text.size();
  for (int i = 0; i < 8; ++i) out[i] = static_cast<uint8_t>(n >> (8 * i));
  std::memcpy(out.data() + 8, text.data(), text.size());
  uint8_t* p = out.data() + 8 + text.size();
  for (const TensorToWrite& t : tensors) {
    if (t.bytes) std::memcpy(p, t.data, t.bytes);
    p += t.bytes;
  }
  return out;
}

}  // namespace patchfuse
