#include "runtime/encoder_input/encoder_input.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "runtime/core/checked_math.h"
#include "runtime/frames/preprocessing.h"

namespace patchfuse {

const char* position_mode_name(PositionMode m) {
  switch (m) {
    case PositionMode::kNone: return "none";
    case PositionMode::kBicubic: return "bicubic";
    case PositionMode::kBilinearAlignCorners: return "bilinear_align_corners";
    case PositionMode::kGridSampleBicubic: return "grid_sample_bicubic";
  }
  return "?";
}

const char* norm_kind_name(NormKind n) {
  switch (n) {
    case NormKind::kNone: return "none";
    case NormKind::kLayerNorm: return "layer_norm";
    case NormKind::kRmsNorm: return "rms_norm";
  }
  return "?";
}

std::string EncoderInputSpec::describe() const {
  if (!refused.empty()) return "not computed: " + refused;
  std::vector<std::string> steps;
  const std::string norm_step = cat(norm == NormKind::kLayerNorm ? "LayerNorm" : "RMSNorm", " (", norm_weight.name,
                                    ", eps ", norm_eps, ")");
  if (norm != NormKind::kNone && norm_before_position) steps.push_back(norm_step);
  if (class_rows() > 0) steps.push_back(cat("class row first (", class_embedding.name, ")"));
  if (position_mode != PositionMode::kNone) {
    steps.push_back(cat("+ position (", position.name, ", ", position_side, "x", position_side, ", ",
                        position_mode_name(position_mode), ")"));
  }
  if (norm != NormKind::kNone && !norm_before_position) steps.push_back(norm_step);
  if (window_size > 0) steps.push_back(cat("window order (", window_size, " px windows of ", merge_size, "x", merge_size,
                                            " merge groups)"));
  std::string s;
  for (const std::string& step : steps) s += (s.empty() ? "" : ", ") + step;
  if (s.empty()) s = "none (the patch embedding is the encoder input)";
  if (!missing.empty()) {
    s += "; missing from the checkpoint:";
    for (const std::string& m : missing) s += " " + m;
  }
  return s;
}

Status EncoderInputSpec::check(const std::string& where) const {
  PF_CHECK(merge_size >= 1 && merge_size <= kMaxMergeSize, Code::kInvalidModel, where, ": encoder_input merge_size ",
           merge_size, " must be between 1 and ", kMaxMergeSize);
  PF_CHECK(window_size >= 0 && (window_size == 0 || (patch_size > 0 && window_size / merge_size / patch_size >= 1)),
           Code::kInvalidModel, where, ": encoder_input window_size ", window_size, " with patch_size ", patch_size,
           " and merge_size ", merge_size, " must span at least one merge group");
  const auto row_of = [&](const TableView& t, const char* what) -> Status {
    if (t.empty()) return {};
    PF_CHECK(t.rows == 1 && t.cols == embed_dim, Code::kInvalidModel, where, ": encoder_input ", what, " ", t.name,
             " is ", t.rows, "x", t.cols, "; it must be one row of embed_dim ", embed_dim);
    return {};
  };
  PF_RETURN_IF_ERROR(row_of(class_embedding, "class embedding"));
  PF_RETURN_IF_ERROR(row_of(norm_weight, "norm weight"));
  PF_RETURN_IF_ERROR(row_of(norm_bias, "norm bias"));
  if (!missing.empty()) return {};  // the steps' tensors may be absent; encoder_input_available says which
  PF_CHECK(norm == NormKind::kNone || (!norm_weight.empty() && std::isfinite(norm_eps) && norm_eps > 0),
           Code::kInvalidModel, where, ": encoder_input ", norm_kind_name(norm), " needs a weight and an eps > 0 (eps ",
           norm_eps, ")");
  if (position_mode != PositionMode::kNone) {
    PF_CHECK(position_side >= 1 && position_side <= 4096 && !position.empty(), Code::kInvalidModel, where,
             ": encoder_input position table side ", position_side, " must be 1..4096 with a table");
    PF_CHECK(position.cols == embed_dim && position.rows == class_rows() + position_side * position_side,
             Code::kInvalidModel, where, ": encoder_input position table ", position.name, " is ", position.rows, "x",
             position.cols, "; it must be ", class_rows() + position_side * position_side, "x", embed_dim, " (",
             class_rows(), " class rows + ", position_side, "^2)");
  }
  return {};
}

Status encoder_input_available(const EncoderInputSpec& spec, const std::string& module) {
  PF_CHECK(spec.refused.empty(), Code::kUnsupported, "output stage encoder-input: module ", module, ": ", spec.refused);
  if (!spec.missing.empty()) {
    std::string names;
    for (const std::string& m : spec.missing) names += (names.empty() ? "" : ", ") + m;
    return make_error(Code::kUnsupported, cat("output stage encoder-input: module ", module, ": the checkpoint had no ",
                                              names, ", which the encoder input needs (",
                                              spec.missing.size() == 1 ? "it was" : "they were",
                                              " missing at conversion)"));
  }
  return {};
}

namespace {

// PyTorch's cubic convolution weights for a fraction t (get_cubic_upsample_coefficients, A = -0.75).
void cubic_weights(double t, double w[4]) {
  constexpr double A = -0.75;
  const auto near = [](double x) { return ((A + 2) * x - (A + 3)) * x * x + 1; };
  const auto far = [](double x) { return ((A * x - 5 * A) * x + 8 * A) * x - 4 * A; };
  w[0] = far(t + 1);
  w[1] = near(t);
  w[2] = near(1 - t);
  w[3] = far(2 - t);
}

// One axis of an interpolation: the table indices and weights of one output coordinate.
struct Taps {
  int n = 0;
  int64_t index[4];
  double weight[4];
};

int64_t clamp_index(int64_t i, int64_t side) { return std::clamp<int64_t>(i, 0, side - 1); }

// Bicubic taps at patch centre i of `out` over a table of `side`: the source coordinate
// (i + 0.5) * side / out - 0.5, PyTorch's cubic weights of its fraction (A = -0.75), the four taps
// clamped to the table. This is both
//  - F.interpolate(mode="bicubic", align_corners=False, size=out) on the CPU: its cubic source
//    index is not clamped at 0, so an upsampled border row starts at index -1 with its fraction
//    and is not simply the edge row (guard_index_and_lambda also caps the index at side - 1 and
//    clamps the fraction to [0, 1], which never applies with size=: the coordinate stays below
//    side - 0.5), and
//  - F.grid_sample(mode="bicubic", align_corners=False, padding_mode="border") at the normalized
//    coordinate ((i + 0.5) / out) * 2 - 1, unnormalized without a clip to the same value, with
//    border padding clamping each tap.
Taps bicubic_taps(int64_t i, int64_t out, int64_t side) {
  const double real = (static_cast<double>(i) + 0.5) * static_cast<double>(side) / static_cast<double>(out) - 0.5;
  const double idx = std::floor(real);
  Taps t;
  t.n = 4;
  cubic_weights(real - idx, t.weight);
  for (int j = 0; j < 4; ++j) t.index[j] = clamp_index(static_cast<int64_t>(idx) - 1 + j, side);
  return t;
}

// Qwen3-VL's bilinear, align_corners=True (transformers' vision_utils, the closed form):
// src = i * (side - 1) / max(out - 1, 1); taps floor and floor + 1, clamped, weights
// max(1 - |src - tap|, 0).
Taps bilinear_align_corners_taps(int64_t i, int64_t out, int64_t side) {
  const double src = static_cast<double>(i) * static_cast<double>(side - 1) / static_cast<double>(std::max<int64_t>(out - 1, 1));
  const double floor = std::floor(src);
  Taps t;
  t.n = 2;
  for (int j = 0; j < 2; ++j) {
    t.index[j] = clamp_index(static_cast<int64_t>(floor) + j, side);
    t.weight[j] = std::max(1 - std::fabs(src - floor - j), 0.0);
  }
  return t;
}

Taps axis_taps(PositionMode mode, int64_t i, int64_t out, int64_t side) {
  switch (mode) {
    case PositionMode::kBicubic:
    case PositionMode::kGridSampleBicubic: return bicubic_taps(i, out, side);
    case PositionMode::kBilinearAlignCorners: return bilinear_align_corners_taps(i, out, side);
    case PositionMode::kNone: break;
  }
  return {};
}

// The (row, col) patch coordinates of row p of a frame whose rows come in m x m blocks, blocks
// row-major over a w-wide grid (m = 1: raster order).
std::pair<int64_t, int64_t> row_coordinates(int64_t p, int64_t m, int64_t w) {
  const int64_t in_col = p % m, in_row = (p / m) % m, block = p / (m * m);
  const int64_t blocks_per_row = w / m;
  return {block / blocks_per_row * m + in_row, block % blocks_per_row * m + in_col};
}

void normalize(const EncoderInputSpec& spec, float* row) {
  const int64_t d = spec.embed_dim;
  double mean = 0, sq = 0;
  if (spec.norm == NormKind::kLayerNorm) {
    for (int64_t c = 0; c < d; ++c) mean += row[c];
    mean /= static_cast<double>(d);
  }
  for (int64_t c = 0; c < d; ++c) sq += (row[c] - mean) * (row[c] - mean);
  const double inv = 1 / std::sqrt(sq / static_cast<double>(d) + static_cast<double>(spec.norm_eps));
  for (int64_t c = 0; c < d; ++c) {
    double y = (row[c] - mean) * inv * spec.norm_weight.at(0, c);
    if (!spec.norm_bias.empty()) y += spec.norm_bias.at(0, c);
    row[c] = static_cast<float>(y);
  }
}

// Group slots of Qwen2.5-VL's window order within one frame: slot[g] = the output group position
// of merge group g (row-major over lh x lw), windows row-major, groups row-major inside each.
// `visit(window_rows)` is called with each non-empty window's group count.
template <class Visit>
std::vector<int64_t> window_slots(int64_t vws, int64_t lh, int64_t lw, const Visit& visit) {
  std::vector<int64_t> slot(static_cast<size_t>(lh * lw));
  int64_t k = 0;
  for (int64_t wr = 0; wr < lh; wr += vws) {
    for (int64_t wc = 0; wc < lw; wc += vws) {
      const int64_t first = k;
      for (int64_t r = wr; r < std::min(wr + vws, lh); ++r) {
        for (int64_t c = wc; c < std::min(wc + vws, lw); ++c) slot[static_cast<size_t>(r * lw + c)] = k++;
      }
      visit(k - first);
    }
  }
  return slot;
}

Status check_grid(const EncoderInputSpec& spec, int64_t h, int64_t w) {
  PF_CHECK(h >= 1 && w >= 1 && h <= (int64_t{1} << 20) && w <= (int64_t{1} << 20), Code::kInvalidArgument,
           "encoder input: grid ", h, "x", w, " must have sides of 1 to 2^20 patches");
  PF_CHECK(h % spec.merge_size == 0 && w % spec.merge_size == 0, Code::kInvalidArgument, "encoder input: grid ", h, "x",
           w, " must have sides that are multiples of the merge size ", spec.merge_size);
  const auto values = checked_mul(static_cast<uint64_t>(h * w), static_cast<uint64_t>(spec.embed_dim));
  PF_CHECK(values && *values <= (uint64_t{1} << 32), Code::kInvalidArgument, "encoder input: grid ", h, "x", w,
           " times embed_dim ", spec.embed_dim, " is more than 2^32 values of position terms");
  return {};
}

}  // namespace

Result<GridTerms> make_grid_terms(const EncoderInputSpec& spec, int64_t h, int64_t w, DType model_dtype) {
  PF_RETURN_IF_ERROR(encoder_input_available(spec, "?"));
  PF_RETURN_IF_ERROR(check_grid(spec, h, w));
  GridTerms g;
  g.h = h;
  g.w = w;
  const int64_t d = spec.embed_dim, side = spec.position_side, cls = spec.class_rows();
  if (spec.position_mode != PositionMode::kNone) {
    g.position.resize(static_cast<size_t>(h * w * d));
    // Where transformers adds the table itself (a bicubic grid equal to the table's), the taps
    // below are that row with weight 1 and the others 0: the same values, exactly.
    std::vector<Taps> rows(static_cast<size_t>(h)), cols(static_cast<size_t>(w));
    for (int64_t i = 0; i < h; ++i) rows[static_cast<size_t>(i)] = axis_taps(spec.position_mode, i, h, side);
    for (int64_t i = 0; i < w; ++i) cols[static_cast<size_t>(i)] = axis_taps(spec.position_mode, i, w, side);
    // The table as f32 rows (widened once from bf16 and f16, exactly; an f32 table is read in
    // place: the model file aligns it to 64 bytes), so the sums below are plain loops.
    std::vector<float> widened;
    const float* table = reinterpret_cast<const float*>(spec.position.data);
    if (spec.position.dtype != DType::kF32) {
      widened.resize(static_cast<size_t>(spec.position.rows * d));
      for (size_t i = 0; i < widened.size(); ++i) widened[i] = load_as_f32(spec.position.data, spec.position.dtype, i);
      table = widened.data();
    }
    std::vector<double> acc(static_cast<size_t>(d));
    for (int64_t p = 0; p < h * w; ++p) {
      const auto [r, c] = row_coordinates(p, spec.merge_size, w);
      float* out = g.position.data() + p * d;
      // The inner axis (width) is summed inside each row tap, then the rows: PyTorch's order.
      std::fill(acc.begin(), acc.end(), 0.0);
      const Taps& tr = rows[static_cast<size_t>(r)];
      const Taps& tc = cols[static_cast<size_t>(c)];
      for (int i = 0; i < tr.n; ++i) {
        for (int j = 0; j < tc.n; ++j) {
          const double wgt = tr.weight[i] * tc.weight[j];
          const float* src = table + (cls + tr.index[i] * side + tc.index[j]) * d;
          for (int64_t k = 0; k < d; ++k) acc[static_cast<size_t>(k)] += wgt * static_cast<double>(src[k]);
        }
      }
      for (int64_t k = 0; k < d; ++k) out[k] = rounded_to(static_cast<float>(acc[static_cast<size_t>(k)]), model_dtype);
    }
  }
  if (cls > 0) {
    g.class_row.resize(static_cast<size_t>(d));
    for (int64_t k = 0; k < d; ++k) {
      float v = static_cast<float>(spec.class_embedding.at(0, k));
      if (spec.position_mode != PositionMode::kNone) v += static_cast<float>(spec.position.at(0, k));
      g.class_row[static_cast<size_t>(k)] = v;
    }
    if (spec.norm != NormKind::kNone) normalize(spec, g.class_row.data());
  }
  if (spec.window_size > 0) {
    const int64_t m = spec.merge_size, unit = m * m;
    const int64_t vws = spec.window_size / m / spec.patch_size;
    const std::vector<int64_t> groups = window_slots(vws, h / m, w / m, [](int64_t) {});
    g.slot.resize(static_cast<size_t>(h * w));
    for (int64_t p = 0; p < h * w; ++p) g.slot[static_cast<size_t>(p)] = groups[static_cast<size_t>(p / unit)] * unit + p % unit;
  }
  return g;
}

void finish_rows(const EncoderInputSpec& spec, const GridTerms& terms, int64_t first, int64_t n, float* rows,
                 float* frame_out) {
  const int64_t d = spec.embed_dim;
  if (first == 0 && !terms.class_row.empty()) std::memcpy(frame_out, terms.class_row.data(), static_cast<size_t>(d) * sizeof(float));
  if (spec.norm == NormKind::kNone && terms.slot.empty()) {
    // Only a position term (or nothing): one flat loop over the chunk, which the compiler vectorizes;
    // its cost is reading the cached term.
    if (terms.position.empty()) return;
    const float* pos = terms.position.data() + first * d;
    for (int64_t i = 0; i < n * d; ++i) rows[i] += pos[i];
    return;
  }
  for (int64_t i = 0; i < n; ++i) {
    float* row = rows + i * d;
    if (spec.norm != NormKind::kNone && spec.norm_before_position) normalize(spec, row);
    if (!terms.position.empty()) {
      const float* pos = terms.position.data() + (first + i) * d;
      for (int64_t k = 0; k < d; ++k) row[k] += pos[k];
    }
    if (spec.norm != NormKind::kNone && !spec.norm_before_position) normalize(spec, row);
    if (!terms.slot.empty()) std::memcpy(frame_out + terms.slot[static_cast<size_t>(first + i)] * d, row, static_cast<size_t>(d) * sizeof(float));
  }
}

Result<WindowCounts> window_counts(const EncoderInputSpec& spec, int64_t t, int64_t h, int64_t w) {
  PF_CHECK(spec.window_size > 0, Code::kUnsupported, "window order: this model has no window attention (only Qwen2.5-VL's does)");
  PF_CHECK(t >= 1 && t <= (int64_t{1} << 20), Code::kInvalidArgument, "window order: grid t ", t, " must be 1 to 2^20");
  PF_RETURN_IF_ERROR(check_grid(spec, h, w));
  // Checked before two index arrays of about that size are made (the block inputs bound rows x head_dim the same way).
  PF_CHECK(static_cast<uint64_t>(t * h * w) <= (uint64_t{1} << 32), Code::kInvalidArgument, "window order: grid ", t, "x",
           h, "x", w, " is more than 2^32 patches");
  const int64_t m = spec.merge_size, lh = h / m, lw = w / m;
  const int64_t vws = spec.window_size / m / spec.patch_size;
  // window_slots' windows: vws x vws merge groups from the top left, the last row and column cut
  // short, none empty.
  const int64_t windows = (lh + vws - 1) / vws * ((lw + vws - 1) / vws);
  return WindowCounts{t * lh * lw, t * windows + 1};
}

Result<WindowOrder> window_order(const EncoderInputSpec& spec, int64_t t, int64_t h, int64_t w) {
  PF_ASSIGN_OR_RETURN(const WindowCounts counts, window_counts(spec, t, h, w));
  const int64_t m = spec.merge_size, lh = h / m, lw = w / m, unit = m * m;
  const int64_t vws = spec.window_size / m / spec.patch_size;
  WindowOrder o;
  std::vector<int64_t> sizes;
  const std::vector<int64_t> slot = window_slots(vws, lh, lw, [&](int64_t groups) { sizes.push_back(groups); });
  const auto groups = static_cast<size_t>(lh * lw);
  o.window_index.resize(groups * static_cast<size_t>(t));
  o.reverse_index.resize(o.window_index.size());
  o.cu_window_seqlens.push_back(0);
  for (int64_t f = 0; f < t; ++f) {
    const auto base = static_cast<int64_t>(groups) * f;
    for (size_t g = 0; g < groups; ++g) {
      o.window_index[static_cast<size_t>(base + slot[g])] = base + static_cast<int64_t>(g);
      o.reverse_index[static_cast<size_t>(base) + g] = base + slot[g];
    }
    for (int64_t s : sizes) o.cu_window_seqlens.push_back(o.cu_window_seqlens.back() + s * unit);
  }
  PF_CHECK(static_cast<int64_t>(o.window_index.size()) == counts.groups &&
               static_cast<int64_t>(o.cu_window_seqlens.size()) == counts.bounds,
           Code::kInternal, "window order: grid ", t, "x", h, "x", w, " made ", o.window_index.size(), " groups and ",
           o.cu_window_seqlens.size(), " bounds; window_counts said ", counts.groups, " and ", counts.bounds);
  return o;
}

}  // namespace patchfuse
