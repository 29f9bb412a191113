// What the vision encoder's blocks take besides the hidden states, per grid, exactly as
// transformers computes it (shared/research/block_inputs.md): the vision RoPE's cos/sin tables,
// cu_seqlens (one attention segment per frame), Qwen2.5-VL's window schedule, the block
// schedule (full-attention blocks, deepstack taps), and the position ids of Pixtral and of the
// bucketized towers (Idefics3, SmolVLM, Phi-4-multimodal).
//
// Like the grid terms (encoder_input.h) these are functions of the grid and a few config values
// only: the model reader fills a BlockSpec, this layer never reads a file. The float tables of one
// frame are made once per grid (make_block_tables, cached by the session next to its grid terms);
// filling a tensor for t frames copies them and computes the integer ones, which are small.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "runtime/core/dtype.h"
#include "runtime/core/result.h"
#include "runtime/encoder_input/encoder_input.h"
#include "runtime/frames/preprocessing.h"

namespace patchfuse {

// How the blocks' rotary tables are made.
//  kVision2d: Qwen2-VL's VisionRotaryEmbedding(head_dim / 2): inv_freq over head_dim / 2, the
//    row's (h, w) patch position times it, [h | w] columns, cat(x, x); float32 whatever the model
//    dtype (the buffer is float32). Qwen2/2.5/3-VL, Qwen3.5, GLM-4V, GLM-OCR.
//  kPixtral: PixtralRotaryEmbedding: h on the even frequencies and w on the odd ones, cat(x, x),
//    cast to the model dtype.
enum class RotaryKind : uint8_t { kNone = 0, kVision2d = 1, kPixtral = 2 };
// Which position ids the model computes for a grid.
//  kPixtral: h * (image_size / patch) + w per image, all images in one sequence ([1, N]).
//  kBucketized: Idefics3VisionEmbeddings' bucketized fractional coordinates, [t, h * w].
enum class PositionIdsKind : uint8_t { kNone = 0, kPixtral = 1, kBucketized = 2 };
const char* rotary_kind_name(RotaryKind k);             // "none", "vision_2d", "pixtral"
const char* position_ids_kind_name(PositionIdsKind k);  // "none", "pixtral", "bucketized"

struct BlockSpec {
  std::string refused;    // non-empty: why no block inputs are given (config.json left a value out)
  int64_t depth = 0;      // number of blocks (0: not known)
  int64_t num_heads = 0;  // attention heads (0: not known)
  int64_t head_dim = 0;   // the rotary tables' width
  RotaryKind rotary = RotaryKind::kNone;
  double rope_theta = 10000.0;
  bool segments = false;  // cu_seqlens: one full-attention segment per frame
  std::vector<int64_t> fullatt_block_indexes;     // Qwen2.5-VL: blocks on cu_seqlens; the others on cu_window_seqlens
  std::vector<int64_t> deepstack_visual_indexes;  // Qwen3-VL: blocks whose output feeds a deepstack merger
  PositionIdsKind position_ids = PositionIdsKind::kNone;
  int64_t position_side = 0;  // image_size / patch: Pixtral's max_width, the bucketized towers' n

  // The one rule for a stored spec: sizes, head_dim against the rotary's needs, indexes within
  // the depth and increasing. `where` prefixes the message.
  Status check(const std::string& where) const;
  // The block schedule in words, e.g. "32 blocks, 16 heads of 80; full attention at blocks 7, 15,
  // 23, 31 (cu_seqlens), window attention at the others (cu_window_seqlens)".
  std::string schedule(const EncoderInputSpec& encoder) const;
};

enum class ElementType : uint8_t { kF32 = 0, kI32 = 1, kI64 = 2 };
const char* element_type_name(ElementType t);  // "float32", "int32", "int64"
size_t element_size(ElementType t);

// One block input for a grid: its name (transformers' variable name), element type and shape.
struct BlockInputDesc {
  const char* name;  // a string literal: callers may keep it
  ElementType type = ElementType::kF32;
  std::vector<int64_t> shape;
  size_t bytes() const;
};

// What a grid's blocks take, in a fixed order; an empty list for a model type whose blocks take
// the hidden states only. Checks the grid (sides multiples of the merge size, Pixtral's sides
// within its table).
Result<std::vector<BlockInputDesc>> block_inputs(const BlockSpec& blocks, const EncoderInputSpec& encoder,
                                                 const FrameGrid& grid);

// The names block_inputs lists for every grid of the model (for inspect); empty when refused.
std::vector<std::string> block_input_names(const BlockSpec& blocks, const EncoderInputSpec& encoder);

// The float tables of one frame of an h x w grid in the encoder input's row order (window order
// for Qwen2.5-VL): rotary cos and sin, [h * w, head_dim] each, rounded to `dtype` where the model
// rounds them (Pixtral casts to its dtype; the vision RoPE's tables stay float32).
struct BlockTables {
  int64_t h = 0, w = 0;
  std::vector<float> cos, sin;
  size_t bytes() const { return (cos.size() + sin.size()) * sizeof(float); }
};
Result<BlockTables> make_block_tables(const BlockSpec& blocks, const EncoderInputSpec& encoder, int64_t h, int64_t w,
                                      DType dtype);

// Block input `name`'s description for `grid`, where the blocks take it and `out` (`capacity`
// bytes) holds it; else the one-line refusal. Cheap: callers check it before making the tables.
Result<BlockInputDesc> find_block_input(const BlockSpec& blocks, const EncoderInputSpec& encoder, const std::string& name,
                                        const FrameGrid& grid, const void* out, size_t capacity);
// Writes block input `name` for `grid` into `out` (`capacity` bytes, at least its bytes()), from
// the frame's tables. `dtype` as for make_block_tables (the bucketized ids round their
// coordinates to the pixel dtype).
Status fill_block_input(const BlockSpec& blocks, const EncoderInputSpec& encoder, const BlockTables& tables,
                        const std::string& name, const FrameGrid& grid, DType dtype, void* out, size_t capacity);

}  // namespace patchfuse
