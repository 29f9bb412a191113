#include "converter/encoder_input_record.h"

#include <cmath>

#include "runtime/core/checked_math.h"

namespace patchfuse {

Result<EncoderInputRecord> encoder_input_record(Checkpoint& ckpt, const Architecture& arch, const VisionConfig& config,
                                                const std::string& module, const ConvGeometry& geometry,
                                                std::vector<std::string>& notes) {
  const EncoderSteps& steps = arch.encoder;
  const int64_t d = geometry.embed_dim;
  EncoderInputRecord r;
  r.refused = steps.refused;
  if (!r.refused.empty()) return r;
  r.merge_size = steps.merge_order ? config.spatial_merge_size.value_or(2) : 1;
  if (steps.window) {
    r.window_size = config.window_size.value_or(112);  // Qwen2_5_VLVisionConfig's default
    r.patch_size = geometry.kernel.back();
    PF_CHECK(r.window_size / r.merge_size / r.patch_size >= 1, Code::kInvalidModel, config.file, ": window_size ",
             r.window_size, " is smaller than one ", r.merge_size, "x", r.merge_size, " merge group of ", r.patch_size,
             "-pixel patches");
  }
  // Reads a step's tensor of `elements` values (0: any multiple of embed_dim) as `shape`, or
  // lists it as missing.
  const auto take = [&](std::string_view relative, const char* what, int64_t elements,
                        bool table) -> Result<std::optional<TensorRecord>> {
    const std::string name = encoder_tensor_name(module, relative);
    if (!ckpt.has(name)) {
      r.missing.push_back(name);
      return std::optional<TensorRecord>();
    }
    PF_ASSIGN_OR_RETURN(CheckpointTensor t, ckpt.tensor(name));
    const auto count = static_cast<int64_t>(checked_product(t.entry->shape).value_or(0));  // < 2^63: the file holds it
    const bool fits = table ? count > 0 && count % d == 0 : count == elements;
    PF_CHECK(fits, Code::kInvalidModel, *t.file, ": tensor ", name, " (the ", what, ") has shape ",
             format_dims(t.entry->shape), "; it must hold ", table ? cat("rows of embed_dim ", d) : cat(d, " values"));
    std::vector<int64_t> shape = table ? std::vector<int64_t>{count / d, d} : std::vector<int64_t>{d};
    PF_ASSIGN_OR_RETURN(TensorRecord rec, read_tensor(ckpt, name, name, std::move(shape), std::nullopt, notes));
    return std::optional<TensorRecord>(std::move(rec));
  };
  if (!steps.class_embedding.empty()) {
    PF_ASSIGN_OR_RETURN(r.class_embedding, take(steps.class_embedding, "class embedding", d, false));
  }
  const bool position_on = steps.position_switch.empty() || config.use_absolute_position_embeddings.value_or(true);
  if (!steps.position.empty() && position_on) {
    r.position_mode = steps.position_mode;
    PF_ASSIGN_OR_RETURN(r.position, take(steps.position, "position table", 0, true));
    if (r.position) {
      const int64_t class_rows = steps.class_embedding.empty() ? 0 : 1;
      const int64_t grid_rows = r.position->shape[0] - class_rows;
      const auto side = static_cast<int64_t>(std::llround(std::sqrt(static_cast<double>(std::max<int64_t>(grid_rows, 0)))));
      PF_CHECK(grid_rows > 0 && side * side == grid_rows, Code::kInvalidModel, config.file, ": tensor ", r.position->name,
               " has ", r.position->shape[0], " rows; after ", class_rows, " class rows they must be a square grid");
      r.position_side = side;
    }
  }
  if (steps.norm != NormKind::kNone) {
    r.norm = steps.norm;
    r.norm_before_position = steps.norm_before_position;
    const std::optional<double>& configured = steps.eps_key == "rms_norm_eps" ? config.rms_norm_eps : config.layer_norm_eps;
    r.norm_eps = static_cast<float>(steps.eps_key.empty() ? steps.eps : configured.value_or(steps.eps));
    PF_ASSIGN_OR_RETURN(r.norm_weight, take(steps.norm_weight, "norm weight", d, false));
    if (!steps.norm_bias.empty()) {
      PF_ASSIGN_OR_RETURN(r.norm_bias, take(steps.norm_bias, "norm bias", d, false));
    }
  }
  return r;
}

Result<BlockSpec> block_spec(const Architecture& arch, const VisionConfig& config, const ConvGeometry& geometry) {
  const BlockSteps& steps = arch.blocks;
  const std::string at = cat(config.file, ": ", config.location == "(top level)" ? "" : config.location + ".");
  BlockSpec b;
  b.rotary = steps.rotary;
  b.segments = steps.segments;
  b.depth = config.depth.value_or(steps.depth);
  b.num_heads = config.num_heads.value_or(steps.heads);
  const int64_t width = geometry.embed_dim;  // the conv's width is the tower's
  if (config.head_dim) {
    b.head_dim = *config.head_dim;
  } else if (b.num_heads > 0 && width % b.num_heads == 0) {
    b.head_dim = width / b.num_heads;
  }
  const bool head_dim_fits = b.head_dim > 0 && b.head_dim % 4 == 0;  // [h | w] halves of head_dim / 2
  if (b.rotary != RotaryKind::kNone && !head_dim_fits && !config.num_heads && !config.head_dim) {
    // The width is the checkpoint's own and the head count a default: the patch embedding is
    // complete without the blocks' inputs, so the model converts and says why it lacks them
    // (the converter notes it; --strict refuses it).
    b.refused = cat(config.file, " gives no ", config.location, ".num_heads, and the default ", b.num_heads,
                    " heads of the width ", width, " are not a rotary head_dim (a multiple of 4)");
    return b;
  }
  PF_CHECK(b.rotary == RotaryKind::kNone || head_dim_fits, Code::kInvalidModel, at, "num_heads ", b.num_heads,
           config.head_dim ? cat(" and head_dim ", *config.head_dim) : cat(" of the patch embedding's width ", width),
           " give no rotary head_dim: it must be a multiple of 4 (the rotary tables' h and w halves of head_dim / 2)");
  // The vision RoPE is built without a config field (theta 10000); Pixtral reads its config's.
  if (b.rotary == RotaryKind::kPixtral) b.rope_theta = config.rope_theta.value_or(10000.0);
  if (steps.reads_fullatt) b.fullatt_block_indexes = config.fullatt_block_indexes.value_or(steps.fullatt);
  if (steps.reads_deepstack) b.deepstack_visual_indexes = config.deepstack_visual_indexes.value_or(steps.deepstack);
  for (auto [key, v] : {std::pair{"fullatt_block_indexes", &b.fullatt_block_indexes},
                        std::pair{"deepstack_visual_indexes", &b.deepstack_visual_indexes}}) {
    for (size_t i = 0; i < v->size(); ++i) {
      PF_CHECK((b.depth == 0 || (*v)[i] < b.depth) && (i == 0 || (*v)[i] > (*v)[i - 1]), Code::kInvalidModel, at, key, " ",
               (*v)[i], " must be a block number below depth ", b.depth, ", each above the one before");
    }
  }
  b.position_ids = steps.position_ids;
  if (b.rotary == RotaryKind::kPixtral || b.position_ids != PositionIdsKind::kNone) {
    const auto [image_size, image_w] = config.image_size.value_or(std::pair{steps.image_size, steps.image_size});
    PF_CHECK(image_size == image_w, Code::kInvalidModel, at, "image_size [", image_size, ", ", image_w,
             "] must be square: the position ids are over one side");
    b.position_side = image_size / geometry.kernel.back();
    PF_CHECK(b.position_side >= 1 && b.position_side <= 65536, Code::kInvalidModel, at, "image_size ", image_size,
             " over patch_size ", geometry.kernel.back(), " must give 1 to 65536 patches a side");
  }
  PF_RETURN_IF_ERROR(b.check(config.file));
  return b;
}

}  // namespace patchfuse
