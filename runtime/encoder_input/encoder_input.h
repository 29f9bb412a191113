// The vision encoder's input: what Hugging Face applies between the patch-embedding conv and the
// first transformer block (position terms, class rows, Qwen2.5-VL's window order, the first norm).
// It is a step after the GEMM, not a backend feature, and it takes plain data (tables, eps, grid),
// never the model reader's types (the reader fills an EncoderInputSpec; this layer never reads a
// file). Facts: shared/research/vision_embeddings.md; what each model type has: the table in
// converter/architectures.cc.
//
// Split in two, like Hugging Face's own export helpers:
//   - grid terms (make_grid_terms): functions of the grid and the stored tables only, computed
//     once per grid in double and rounded once, to the dtype the model runs in (the session's
//     precision plays the dtype transformers loads the model in: at f32 a bf16-stored table is
//     widened exactly and its term stays f32, as transformers' float32 model computes it; at
//     bf16/f16 the term is rounded to that dtype, as the model's own term is): the position term
//     per row, the class row, the window slots. The session caches them.
//   - finish_rows: the per-row epilogue on rows the kernel just wrote (conv + bias already in),
//     in Hugging Face's order: RMSNorm before the position term (GLM-4V), + position term,
//     LayerNorm after it (CLIP), then the row goes to its window slot (Qwen2.5-VL). Norms are
//     computed in double per row; the result is rounded once to f32.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "runtime/core/dtype.h"
#include "runtime/core/result.h"

namespace patchfuse {

enum class PositionMode : uint8_t { kNone = 0, kBicubic = 1, kBilinearAlignCorners = 2, kGridSampleBicubic = 3 };
enum class NormKind : uint8_t { kNone = 0, kLayerNorm = 1, kRmsNorm = 2 };
const char* position_mode_name(PositionMode m);  // "none", "bicubic", "bilinear_align_corners", "grid_sample_bicubic"
const char* norm_kind_name(NormKind n);          // "none", "layer_norm", "rms_norm"

// A stored tensor's bytes (not owned) in its own dtype, seen as rows x cols.
struct TableView {
  std::string name;
  const uint8_t* data = nullptr;
  DType dtype = DType::kF32;
  int64_t rows = 0, cols = 0;
  bool empty() const { return data == nullptr; }
  double at(int64_t r, int64_t c) const { return load_as_f32(data, dtype, static_cast<size_t>(r * cols + c)); }
};

struct EncoderInputSpec {
  std::string refused;               // non-empty: why encoder-input is not offered for this model type
  std::vector<std::string> missing;  // tensors the checkpoint lacked
  int64_t embed_dim = 0;
  int64_t merge_size = 1;            // rows in merge_size^2 blocks, row-major blocks (1: raster order)
  int64_t window_size = 0, patch_size = 0;  // Qwen2.5-VL: window side in pixels; 0: none
  PositionMode position_mode = PositionMode::kNone;
  TableView position;                // [class_rows + side^2, embed_dim]
  int64_t position_side = 0;
  TableView class_embedding;         // [1, embed_dim]; present: one class row first per image
  NormKind norm = NormKind::kNone;
  TableView norm_weight, norm_bias;  // [1, embed_dim]; norm_bias may be empty
  float norm_eps = 0;
  bool norm_before_position = false;

  int64_t class_rows() const { return class_embedding.empty() ? 0 : 1; }
  // The steps in Hugging Face's order, for inspect and errors: e.g. "class row, + position
  // (bicubic from 16x16), LayerNorm", or "none" when the patch embedding is already the input.
  std::string describe() const;
  // The one rule for a stored spec against the module's embed_dim: table shapes, side, eps,
  // merge and window sizes. `where` prefixes the message.
  Status check(const std::string& where) const;
};

// Why `spec` cannot make the encoder input (refused, or a missing tensor), or OK.
Status encoder_input_available(const EncoderInputSpec& spec, const std::string& module);

// The grid-only terms of one frame of an h x w patch grid (every frame of a video has the same).
struct GridTerms {
  int64_t h = 0, w = 0;
  std::vector<float> position;    // [h * w, embed_dim] in the rows' order, empty without a position step
  std::vector<float> class_row;   // [embed_dim]: the whole class row (class + position[0], normed)
  std::vector<int64_t> slot;      // window order: output position of each row of a frame; empty if none
  size_t bytes() const { return (position.size() + class_row.size()) * sizeof(float) + slot.size() * sizeof(int64_t); }
};

// Checks the grid against the spec (sides multiples of merge_size) and computes its terms in
// `model_dtype` (the session's precision; f32 for int8).
Result<GridTerms> make_grid_terms(const EncoderInputSpec& spec, int64_t h, int64_t w, DType model_dtype);

// Rows of one frame's sequence: class rows + h * w.
inline int64_t frame_rows(const EncoderInputSpec& spec, int64_t h, int64_t w) { return spec.class_rows() + h * w; }

// The epilogue for rows [first, first + n) of one frame (row order of the kernel's output):
// `rows` holds them (conv + bias) and is updated in place; `frame_out` is the frame's sequence in
// the output (frame_rows rows). Without a window order `rows` must already be
// frame_out + class_rows + first (the kernel wrote there); with one, each row is copied to its
// slot. Writes the class row when first == 0.
void finish_rows(const EncoderInputSpec& spec, const GridTerms& terms, int64_t first, int64_t n, float* rows,
                 float* frame_out);

// Qwen2.5-VL's window order for t frames of an h x w grid, as transformers'
// get_vision_window_index returns it: window_index (the merge group at each output group
// position; t * h * w / merge^2 entries) and cu_window_seqlens (0, then each non-empty window's
// end, in rows).
struct WindowOrder {
  std::vector<int64_t> window_index, reverse_index, cu_window_seqlens;
};
Result<WindowOrder> window_order(const EncoderInputSpec& spec, int64_t t, int64_t h, int64_t w);
// Its sizes without making it (a size query of a large grid allocates nothing): the entries of
// window_index and of cu_window_seqlens. The grid's checks are here; window_order makes them too.
struct WindowCounts {
  int64_t groups = 0, bounds = 0;
};
Result<WindowCounts> window_counts(const EncoderInputSpec& spec, int64_t t, int64_t h, int64_t w);

}  // namespace patchfuse
