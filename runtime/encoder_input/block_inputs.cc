#include "runtime/encoder_input/block_inputs.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <tuple>

namespace patchfuse {

const char* rotary_kind_name(RotaryKind k) {
  switch (k) {
    case RotaryKind::kNone: return "none";
    case RotaryKind::kVision2d: return "vision_2d";
    case RotaryKind::kPixtral: return "pixtral";
  }
  return "?";
}

const char* position_ids_kind_name(PositionIdsKind k) {
  switch (k) {
    case PositionIdsKind::kNone: return "none";
    case PositionIdsKind::kPixtral: return "pixtral";
    case PositionIdsKind::kBucketized: return "bucketized";
  }
  return "?";
}

const char* element_type_name(ElementType t) {
  switch (t) {
    case ElementType::kF32: return "float32";
    case ElementType::kI32: return "int32";
    case ElementType::kI64: return "int64";
  }
  return "?";
}

size_t element_size(ElementType t) { return t == ElementType::kI64 ? 8 : 4; }

size_t BlockInputDesc::bytes() const {
  size_t n = element_size(type);
  for (int64_t d : shape) n *= static_cast<size_t>(d);
  return n;
}

namespace {

std::string list(const std::vector<int64_t>& v) {
  std::string s;
  for (int64_t x : v) s += (s.empty() ? "" : ", ") + std::to_string(x);
  return s;
}

Status check_indexes(const std::vector<int64_t>& v, int64_t depth, const std::string& where, const char* what) {
  for (size_t i = 0; i < v.size(); ++i) {
    PF_CHECK(v[i] >= 0 && (depth == 0 || v[i] < depth) && (i == 0 || v[i] > v[i - 1]), Code::kInvalidModel, where, ": ",
             what, " [", list(v), "] must be increasing block numbers from 0 to depth - 1 = ", depth - 1);
  }
  return {};
}

}  // namespace

Status BlockSpec::check(const std::string& where) const {
  if (!refused.empty()) return {};
  PF_CHECK(depth >= 0 && depth <= 4096 && num_heads >= 0 && num_heads <= 4096 && head_dim >= 0 && head_dim <= 65536,
           Code::kInvalidModel, where, ": blocks depth ", depth, ", num_heads ", num_heads, ", head_dim ", head_dim,
           " must be 0..4096, 0..4096 and 0..65536");
  PF_CHECK(rotary == RotaryKind::kNone || (head_dim > 0 && head_dim % 4 == 0), Code::kInvalidModel, where,
           ": blocks head_dim ", head_dim, " must be a positive multiple of 4 for the ", rotary_kind_name(rotary),
           " rotary tables (their [h | w] halves of head_dim / 2)");
  PF_CHECK(std::isfinite(rope_theta) && rope_theta > 1, Code::kInvalidModel, where, ": blocks rope_theta ", rope_theta,
           " must be a finite number above 1");
  const bool side_needed = rotary == RotaryKind::kPixtral || position_ids != PositionIdsKind::kNone;
  PF_CHECK(!side_needed || (position_side >= 1 && position_side <= 65536), Code::kInvalidModel, where,
           ": blocks position_side ", position_side, " (image_size / patch_size) must be 1..65536");
  PF_RETURN_IF_ERROR(check_indexes(fullatt_block_indexes, depth, where, "fullatt_block_indexes"));
  PF_RETURN_IF_ERROR(check_indexes(deepstack_visual_indexes, depth, where, "deepstack_visual_indexes"));
  return {};
}

std::string BlockSpec::schedule(const EncoderInputSpec& encoder) const {
  if (!refused.empty()) return "not given: " + refused;
  std::string s = depth > 0 ? cat(depth, " blocks") : std::string("blocks");
  if (num_heads > 0) s += cat(", ", num_heads, " heads");
  if (head_dim > 0) s += cat(" of ", head_dim);
  if (encoder.window_size > 0) {
    s += "; full attention (cu_seqlens) at blocks " + list(fullatt_block_indexes) +
         ", window attention (cu_window_seqlens) at the others";
  } else if (segments) {
    s += "; full attention per frame (cu_seqlens)";
  }
  if (!deepstack_visual_indexes.empty()) s += "; deepstack taps after blocks " + list(deepstack_visual_indexes);
  if (rotary != RotaryKind::kNone) s += cat("; rotary ", rotary_kind_name(rotary), " (theta ", rope_theta, ")");
  if (position_ids != PositionIdsKind::kNone) s += cat("; position ids ", position_ids_kind_name(position_ids), " (side ", position_side, ")");
  return s;
}

namespace {

Status check_grid(const BlockSpec& b, const EncoderInputSpec& e, const FrameGrid& g) {
  PF_CHECK(g.t >= 1 && g.h >= 1 && g.w >= 1 && g.t <= (int64_t{1} << 20) && g.h <= (int64_t{1} << 20) &&
               g.w <= (int64_t{1} << 20),
           Code::kInvalidArgument, "block inputs: grid ", g.t, "x", g.h, "x", g.w, " must have sides of 1 to 2^20");
  PF_CHECK(g.h % e.merge_size == 0 && g.w % e.merge_size == 0, Code::kInvalidArgument, "block inputs: grid ", g.t, "x",
           g.h, "x", g.w, ": h and w must be multiples of the merge size ", e.merge_size);
  PF_CHECK(static_cast<uint64_t>(g.rows()) * static_cast<uint64_t>(std::max<int64_t>(b.head_dim, 1)) <= (uint64_t{1} << 32),
           Code::kInvalidArgument, "block inputs: grid ", g.t, "x", g.h, "x", g.w, " times head_dim ", b.head_dim,
           " is more than 2^32 values");
  if (b.rotary == RotaryKind::kPixtral || b.position_ids == PositionIdsKind::kPixtral) {
    PF_CHECK(g.h <= b.position_side && g.w <= b.position_side, Code::kInvalidArgument, "block inputs: grid ", g.t, "x",
             g.h, "x", g.w, " has a side above image_size / patch_size = ", b.position_side,
             ", past Pixtral's rotary table (its position ids would alias)");
  }
  if (b.position_ids == PositionIdsKind::kBucketized) {
    PF_CHECK(g.h <= b.position_side && g.w <= b.position_side, Code::kInvalidArgument, "block inputs: grid ", g.t, "x",
             g.h, "x", g.w, " has a side above image_size / patch_size = ", b.position_side,
             ": the processor cuts larger images into tiles");
  }
  return {};
}

// 1 / theta ** (2i / dim) for i < dim / 2, each step in float32 as torch computes it: the
// exponent a float32 quotient, the power rounded once to float32, its float32 reciprocal.
std::vector<float> inverse_frequencies(double theta, int64_t dim) {
  std::vector<float> f(static_cast<size_t>((dim + 1) / 2));
  for (size_t i = 0; i < f.size(); ++i) {
    const float exponent = static_cast<float>(2 * i) / static_cast<float>(dim);
    f[i] = 1.0f / static_cast<float>(std::pow(theta, static_cast<double>(exponent)));
  }
  return f;
}

// The angles of patch (r, c): [h | w] halves of head_dim / 2, each one float32 product.
//   vision_2d: [r * inv_freq | c * inv_freq], inv_freq over head_dim / 2.
//   pixtral:   [r * freqs[0::2] | c * freqs[1::2]], freqs over head_dim.
void angles(const BlockSpec& b, const std::vector<float>& freqs, int64_t r, int64_t c, float* half) {
  const auto quarter = static_cast<size_t>(b.head_dim / 4);
  const bool pixtral = b.rotary == RotaryKind::kPixtral;
  for (size_t i = 0; i < quarter; ++i) {
    half[i] = static_cast<float>(r) * freqs[pixtral ? 2 * i : i];
    half[quarter + i] = static_cast<float>(c) * freqs[pixtral ? 2 * i + 1 : i];
  }
}

// Row p of a frame in the encoder input's order comes from patch (row, col): merge-block order
// (encoder_input.h), then Qwen2.5-VL's window order, whose window_index moves whole merge groups.
std::vector<int64_t> source_rows(const EncoderInputSpec& e, int64_t h, int64_t w) {
  std::vector<int64_t> src(static_cast<size_t>(h * w));
  for (int64_t p = 0; p < h * w; ++p) src[static_cast<size_t>(p)] = p;
  if (e.window_size > 0) {
    const int64_t unit = e.merge_size * e.merge_size;
    const WindowOrder o = *window_order(e, 1, h, w);  // the grid was checked
    for (int64_t p = 0; p < h * w; ++p) src[static_cast<size_t>(p)] = o.window_index[static_cast<size_t>(p / unit)] * unit + p % unit;
  }
  return src;
}

std::pair<int64_t, int64_t> patch_of(int64_t p, int64_t m, int64_t w) {
  const int64_t block = p / (m * m), blocks_per_row = w / m;
  return {block / blocks_per_row * m + (p / m) % m, block % blocks_per_row * m + p % m};
}

// Idefics3VisionEmbeddings' bucket of each of `count` patches along a side of a table of n:
// bucketize(clamp(arange(count, f32) * (1.0 / count), max=1 - 1e-6).to(dtype), arange(1/n, 1.0, 1/n), right=True).
std::vector<int64_t> buckets(int64_t count, int64_t n, DType dtype) {
  // torch.arange(1/n, 1.0, 1/n) in float32: ceil((end - start) / step) values start + i * step,
  // computed in double and rounded to float32.
  const double step = 1.0 / static_cast<double>(n);
  const auto size = static_cast<int64_t>(std::ceil((1.0 - step) / step));
  std::vector<float> boundaries(static_cast<size_t>(std::max<int64_t>(size, 0)));
  for (size_t i = 0; i < boundaries.size(); ++i) boundaries[i] = static_cast<float>(step + static_cast<double>(i) * step);
  const float scale = static_cast<float>(1.0 / static_cast<double>(count));
  const float cap = static_cast<float>(1 - 1e-6);
  std::vector<int64_t> out(static_cast<size_t>(count));
  for (int64_t i = 0; i < count; ++i) {
    const float frac = rounded_to(std::min(static_cast<float>(i) * scale, cap), dtype);
    out[static_cast<size_t>(i)] = std::upper_bound(boundaries.begin(), boundaries.end(), frac) - boundaries.begin();
  }
  return out;
}

template <class T>
void put(void* out, size_t i, T v) {
  std::memcpy(static_cast<uint8_t*>(out) + i * sizeof(T), &v, sizeof(T));
}

}  // namespace

Result<std::vector<BlockInputDesc>> block_inputs(const BlockSpec& b, const EncoderInputSpec& e, const FrameGrid& g) {
  PF_CHECK(b.refused.empty(), Code::kUnsupported, "block inputs: ", b.refused);
  PF_RETURN_IF_ERROR(check_grid(b, e, g));
  const int64_t n = g.rows();
  std::vector<BlockInputDesc> d;
  if (b.position_ids == PositionIdsKind::kPixtral) d.push_back({"position_ids", ElementType::kI64, {1, n}});
  if (b.position_ids == PositionIdsKind::kBucketized) d.push_back({"position_ids", ElementType::kI64, {g.t, g.h * g.w}});
  if (b.rotary != RotaryKind::kNone) {
    d.push_back({"rotary_cos", ElementType::kF32, {n, b.head_dim}});
    d.push_back({"rotary_sin", ElementType::kF32, {n, b.head_dim}});
  }
  if (b.segments) d.push_back({"cu_seqlens", ElementType::kI32, {g.t + 1}});
  if (e.window_size > 0 && b.segments) {
    PF_ASSIGN_OR_RETURN(const WindowCounts c, window_counts(e, g.t, g.h, g.w));
    d.push_back({"cu_window_seqlens", ElementType::kI32, {c.bounds}});
    d.push_back({"window_index", ElementType::kI64, {c.groups}});
    d.push_back({"reverse_indices", ElementType::kI64, {c.groups}});
    d.push_back({"fullatt_block_indexes", ElementType::kI64, {static_cast<int64_t>(b.fullatt_block_indexes.size())}});
  }
  if (!b.deepstack_visual_indexes.empty()) {
    d.push_back({"deepstack_visual_indexes", ElementType::kI64, {static_cast<int64_t>(b.deepstack_visual_indexes.size())}});
  }
  return d;
}

std::vector<std::string> block_input_names(const BlockSpec& b, const EncoderInputSpec& e) {
  std::vector<std::string> names;
  // The list depends on the model, not the grid: the smallest grid the model takes shows it.
  const Result<std::vector<BlockInputDesc>> d = block_inputs(b, e, FrameGrid{1, e.merge_size, e.merge_size});
  if (d.ok()) {
    for (const BlockInputDesc& x : *d) names.emplace_back(x.name);
  }
  return names;
}

Result<BlockTables> make_block_tables(const BlockSpec& b, const EncoderInputSpec& e, int64_t h, int64_t w, DType dtype) {
  PF_CHECK(b.refused.empty(), Code::kUnsupported, "block inputs: ", b.refused);
  PF_RETURN_IF_ERROR(check_grid(b, e, FrameGrid{1, h, w}));
  BlockTables t;
  t.h = h;
  t.w = w;
  if (b.rotary == RotaryKind::kNone) return t;
  const int64_t hd = b.head_dim;
  const std::vector<float> freqs = inverse_frequencies(b.rope_theta, b.rotary == RotaryKind::kPixtral ? hd : hd / 2);
  // Pixtral's rows are raster order; the vision RoPE's are the encoder input's.
  const int64_t m = b.rotary == RotaryKind::kPixtral ? 1 : e.merge_size;
  const std::vector<int64_t> src = b.rotary == RotaryKind::kPixtral ? source_rows(EncoderInputSpec{}, h, w) : source_rows(e, h, w);
  // Pixtral casts its float32 tables to the model dtype; the vision RoPE's stay float32 (its
  // inv_freq buffer is float32 and apply_rotary_pos_emb_vision upcasts q and k).
  const DType out_dtype = b.rotary == RotaryKind::kPixtral ? dtype : DType::kF32;
  // A row is [h angles | w angles], twice (cat(emb, emb)): the h quarter depends on the patch's
  // row alone and the w quarter on its column, so each side's cos and sin are taken once (in
  // double, rounded once) and the rows are copies of them.
  const auto quarter = static_cast<size_t>(hd / 4);
  const auto side_tables = [&](int64_t count, bool rows, std::vector<float>& cos, std::vector<float>& sin) {
    std::vector<float> half(2 * quarter);
    cos.resize(static_cast<size_t>(count) * quarter);
    sin.resize(cos.size());
    for (int64_t i = 0; i < count; ++i) {
      angles(b, freqs, rows ? i : 0, rows ? 0 : i, half.data());
      for (size_t k = 0; k < quarter; ++k) {
        const double a = half[rows ? k : quarter + k];
        cos[static_cast<size_t>(i) * quarter + k] = rounded_to(static_cast<float>(std::cos(a)), out_dtype);
        sin[static_cast<size_t>(i) * quarter + k] = rounded_to(static_cast<float>(std::sin(a)), out_dtype);
      }
    }
  };
  std::vector<float> row_cos, row_sin, col_cos, col_sin;
  side_tables(h, true, row_cos, row_sin);
  side_tables(w, false, col_cos, col_sin);
  t.cos.resize(static_cast<size_t>(h * w * hd));
  t.sin.resize(t.cos.size());
  const size_t bytes = quarter * sizeof(float);
  for (int64_t p = 0; p < h * w; ++p) {
    const auto [r, c] = patch_of(src[static_cast<size_t>(p)], m, w);
    for (auto [table, by_row, by_col] : {std::tuple{&t.cos, &row_cos, &col_cos}, std::tuple{&t.sin, &row_sin, &col_sin}}) {
      float* out = table->data() + p * hd;
      std::memcpy(out, by_row->data() + static_cast<size_t>(r) * quarter, bytes);
      std::memcpy(out + quarter, by_col->data() + static_cast<size_t>(c) * quarter, bytes);
      std::memcpy(out + 2 * quarter, out, 2 * bytes);
    }
  }
  return t;
}

Result<BlockInputDesc> find_block_input(const BlockSpec& b, const EncoderInputSpec& e, const std::string& name,
                                        const FrameGrid& g, const void* out, size_t capacity) {
  PF_ASSIGN_OR_RETURN(const std::vector<BlockInputDesc> descs, block_inputs(b, e, g));
  const auto desc = std::find_if(descs.begin(), descs.end(), [&](const BlockInputDesc& d) { return name == d.name; });
  if (desc == descs.end()) {
    std::string names;
    for (const BlockInputDesc& d : descs) names += (names.empty() ? "" : ", ") + std::string(d.name);
    return make_error(Code::kInvalidArgument, cat("block input '", name, "': this model's blocks take ",
                                                  names.empty() ? std::string("the hidden states only") : names));
  }
  PF_CHECK(out != nullptr && capacity >= desc->bytes(), Code::kInvalidArgument, "block input ", name, " for grid ", g.t,
           "x", g.h, "x", g.w, " takes ", desc->bytes(), " bytes; the buffer has ", capacity);
  return *desc;
}

Status fill_block_input(const BlockSpec& b, const EncoderInputSpec& e, const BlockTables& tables, const std::string& name,
                        const FrameGrid& g, DType dtype, void* out, size_t capacity) {
  PF_ASSIGN_OR_RETURN(const BlockInputDesc desc, find_block_input(b, e, name, g, out, capacity));
  PF_CHECK(tables.h == g.h && tables.w == g.w, Code::kInternal, "block input ", name, ": tables of grid ", tables.h, "x",
           tables.w, " for grid ", g.h, "x", g.w);
  const int64_t frame = g.h * g.w;
  if (name == "rotary_cos" || name == "rotary_sin") {
    const std::vector<float>& table = name == "rotary_cos" ? tables.cos : tables.sin;
    for (int64_t f = 0; f < g.t; ++f) {
      std::memcpy(static_cast<float*>(out) + f * frame * b.head_dim, table.data(), table.size() * sizeof(float));
    }
  } else if (name == "cu_seqlens") {
    for (int64_t f = 0; f <= g.t; ++f) put(out, static_cast<size_t>(f), static_cast<int32_t>(f * frame));
  } else if (name == "cu_window_seqlens" || name == "window_index" || name == "reverse_indices") {
    PF_ASSIGN_OR_RETURN(const WindowOrder o, window_order(e, g.t, g.h, g.w));
    const std::vector<int64_t>& v = name == "cu_window_seqlens" ? o.cu_window_seqlens
                                    : name == "window_index"    ? o.window_index
                                                                : o.reverse_index;
    for (size_t i = 0; i < v.size(); ++i) {
      if (desc.type == ElementType::kI32) {
        put(out, i, static_cast<int32_t>(v[i]));
      } else {
        put(out, i, v[i]);
      }
    }
  } else if (name == "fullatt_block_indexes" || name == "deepstack_visual_indexes") {
    const std::vector<int64_t>& v = name == "fullatt_block_indexes" ? b.fullatt_block_indexes : b.deepstack_visual_indexes;
    for (size_t i = 0; i < v.size(); ++i) put(out, i, v[i]);
  } else if (b.position_ids == PositionIdsKind::kPixtral) {
    for (int64_t f = 0; f < g.t; ++f) {
      for (int64_t p = 0; p < frame; ++p) put(out, static_cast<size_t>(f * frame + p), p / g.w * b.position_side + p % g.w);
    }
  } else {  // bucketized position_ids
    const std::vector<int64_t> rows = buckets(g.h, b.position_side, dtype), cols = buckets(g.w, b.position_side, dtype);
    for (int64_t f = 0; f < g.t; ++f) {
      for (int64_t p = 0; p < frame; ++p) {
        put(out, static_cast<size_t>(f * frame + p), rows[static_cast<size_t>(p / g.w)] * b.position_side + cols[static_cast<size_t>(p % g.w)]);
      }
    }
  }
  return {};
}

}  // namespace patchfuse
