#include "converter/sample_checkpoint.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <nlohmann/json.hpp>

#include "runtime/core/output_file.h"
#include "runtime/rules/fusion_rules.h"
#include "converter/safetensors.h"
#include "cli/npy.h"

namespace patchfuse {

namespace {

// SplitMix64: tiny, and gives the same numbers on every platform and standard library.
struct Rng {
  uint64_t s;
  uint64_t next() {
    uint64_t z = (s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  float uniform(float lo, float hi) { return lo + (hi - lo) * static_cast<float>(next() >> 40) / 16777216.0f; }
};

struct Tensor {
  std::string name;
  std::vector<int64_t> shape;
  std::vector<uint8_t> bytes;
  int shard;
};

Tensor random_tensor(Rng& rng, std::string name, std::vector<int64_t> shape, DType dtype, float scale, int shard) {
  size_t n = 1;
  for (int64_t d : shape) n *= static_cast<size_t>(d);
  std::vector<float> values(n);
  for (float& v : values) v = rng.uniform(-scale, scale);
  Tensor t{std::move(name), std::move(shape), std::vector<uint8_t>(n * dtype_size(dtype)), shard};
  convert_elements(reinterpret_cast<const uint8_t*>(values.data()), DType::kF32, t.bytes.data(), dtype, n);
  return t;
}

Status write_text(const std::string& path, const std::string& text) {
  return write_file_atomically(path, std::vector<uint8_t>(text.begin(), text.end()));
}

}  // namespace

Status write_sample_checkpoint(const std::string& dir, const SampleSpec& spec) {
  PF_CHECK(spec.arch != nullptr, Code::kInvalidArgument, "sample checkpoint: no architecture given");
  PF_CHECK(spec.shards >= 1 && spec.shards <= 9, Code::kInvalidArgument, "sample checkpoint: shards ", spec.shards,
           " must be 1..9");
  PF_CHECK(::mkdir(dir.c_str(), 0777) == 0 || errno == EEXIST, Code::kIoError, dir, ": cannot create: ",
           std::strerror(errno));
  const Architecture& a = *spec.arch;
  const FusionFamily& family = *find_family(a.family);
  const int64_t out = spec.embed_dim > 0 ? spec.embed_dim : a.embed_dim;
  const std::string pe(a.patch_embed_path);
  const std::string prefix = pe.find('.') == std::string::npos ? "encoder" : pe.substr(0, pe.find('.'));  // e.g. "visual"
  const bool conv3d = a.kernel.size() == 3;
  Rng rng{spec.seed};

  // The patch embedding sits in the first shard, its bias and the unrelated tensors after it,
  // so a sharded sample really needs the index to be followed.
  std::vector<int64_t> weight_shape = {out, 3};
  weight_shape.insert(weight_shape.end(), a.kernel.begin(), a.kernel.end());
  std::vector<Tensor> tensors;
  tensors.push_back(random_tensor(rng, conv_weight_name(family, pe), weight_shape, spec.dtype, 0.05f, 0));
  if (a.bias) tensors.push_back(random_tensor(rng, conv_bias_name(family, pe), {out}, spec.dtype, 0.5f, spec.shards - 1));
  tensors.push_back(random_tensor(rng, prefix + ".blocks.0.norm1.weight", {out}, spec.dtype, 1.0f, spec.shards - 1));
  tensors.push_back(random_tensor(rng, "model.embed_tokens.weight", {32, 64}, spec.dtype, 1.0f, spec.shards - 1));
  // The encoder input's tensors, beside the patch embedding as the architecture names them. ViT's
  // naming keeps its leading batch axes ([1, 1, D], [1, rows, D]).
  const EncoderSteps& steps = a.encoder;
  const int64_t ph = a.kernel[a.kernel.size() - 2];
  const int64_t side = steps.sample_side > 0 ? steps.sample_side : (a.image_size > 0 ? a.image_size : 16 * ph) / ph;
  const auto with_batch = [](std::string_view name, std::vector<int64_t> shape) {
    if (name.substr(0, 3) == "../") shape.insert(shape.begin(), shape.size() == 1 ? 2 : 1, 1);
    return shape;
  };
  if (!steps.class_embedding.empty()) {
    tensors.push_back(random_tensor(rng, encoder_tensor_name(pe, steps.class_embedding), with_batch(steps.class_embedding, {out}),
                                    spec.dtype, 1.0f, spec.shards - 1));
  }
  if (!steps.position.empty()) {
    const int64_t rows = (steps.class_embedding.empty() ? 0 : 1) + side * side;
    tensors.push_back(random_tensor(rng, encoder_tensor_name(pe, steps.position), with_batch(steps.position, {rows, out}),
                                    spec.dtype, 0.5f, spec.shards - 1));
  }
  for (std::string_view norm : {steps.norm_weight, steps.norm_bias}) {
    if (!norm.empty()) tensors.push_back(random_tensor(rng, encoder_tensor_name(pe, norm), {out}, spec.dtype, 1.0f, spec.shards - 1));
  }

  nlohmann::ordered_json weight_map = nlohmann::ordered_json::object();
  size_t total_size = 0;
  for (int s = 0; s < spec.shards; ++s) {
    const std::string file = spec.shards == 1 ? "model.safetensors"
                                              : cat("model-0000", s + 1, "-of-0000", spec.shards, ".safetensors");
    std::vector<TensorToWrite> in_shard;
    for (const Tensor& t : tensors) {
      if (t.shard != s) continue;
      in_shard.push_back({t.name, spec.dtype, t.shape, t.bytes.data(), t.bytes.size()});
      weight_map[t.name] = file;
      total_size += t.bytes.size();
    }
    PF_RETURN_IF_ERROR(write_file_atomically(dir + "/" + file, serialize_safetensors(in_shard, {{"format", "pt"}})));
  }
  if (spec.shards > 1) {
    nlohmann::ordered_json index = {{"metadata", {{"total_size", total_size}}}, {"weight_map", weight_map}};
    PF_RETURN_IF_ERROR(write_text(dir + "/model.safetensors.index.json", index.dump(2) + "\n"));
  }

  const int64_t pw = a.kernel.back();
  const nlohmann::ordered_json patch_size =
      ph == pw ? nlohmann::ordered_json(ph) : nlohmann::ordered_json(std::vector<int64_t>{ph, pw});
  // The block schedule under the config class's own names, with the real depth and head count
  // where they divide the width into rotary-sized heads (a multiple of 4), else one head.
  const int64_t heads = a.blocks.heads > 0 && out % (4 * a.blocks.heads) == 0 ? a.blocks.heads : 1;
  nlohmann::ordered_json vision = {{conv3d ? "depth" : "num_hidden_layers", a.blocks.depth > 0 ? a.blocks.depth : 2},
                                   {conv3d ? "num_heads" : "num_attention_heads", heads},
                                   {"hidden_size", spec.embed_dim > 0 ? out : a.vision_hidden_size},
                                   {std::string(a.in_channels_key), 3},
                                   {"patch_size", patch_size}};
  if (a.blocks.rotary == RotaryKind::kPixtral) vision["head_dim"] = out / heads;
  if (conv3d) {
    vision["temporal_patch_size"] = a.kernel[0];
    vision["spatial_merge_size"] = 2;
    if (steps.position_mode == PositionMode::kBilinearAlignCorners) vision["num_position_embeddings"] = side * side;
    if (steps.position_mode == PositionMode::kGridSampleBicubic) vision["image_size"] = side * ph;
    if (steps.window) vision["window_size"] = 112;
  } else {
    vision["image_size"] = a.image_size > 0 ? a.image_size : 16 * ph;
  }
  if (a.model_type == "qwen2_vl") vision["embed_dim"] = out;  // Qwen2-VL names the conv width embed_dim
  nlohmann::ordered_json config = {{"model_type", a.model_type}, {"torch_dtype", "bfloat16"}};
  if (a.vision_config_at.empty()) {
    config.update(vision);
  } else if (a.vision_config_at == "thinker_config.vision_config") {
    config["thinker_config"] = {{"vision_config", vision}};
  } else {
    config["vision_config"] = vision;
  }
  PF_RETURN_IF_ERROR(write_text(dir + "/config.json", config.dump(2) + "\n"));
  if (spec.preprocessor) {
    // Shaped like the real checkpoints' preprocessor_config.json: Qwen3 models normalize with
    // 0.5/0.5 and budget pixels with size{}, Qwen2-family with CLIP's mean/std and min/max_pixels,
    // GLM-4V with its own processor; fixed-size processors with size (SigLIP, ViT) or a centre
    // crop (CLIP, DINOv2), CLIP's mean/std for CLIP towers and 0.5 otherwise.
    const bool qwen3 = a.model_type.rfind("qwen3", 0) == 0, glm = a.model_type.rfind("glm", 0) == 0;
    const bool clip = a.image_processor == "CLIPImageProcessor" || a.image_processor == "PixtralImageProcessor";
    const std::vector<double> clip_mean = {0.48145466, 0.4578275, 0.40821073}, clip_std = {0.26862954, 0.26130258, 0.27577711};
    const bool half = qwen3 || (!conv3d && !clip);
    nlohmann::ordered_json pre = {
        {"image_processor_type", a.image_processor},
        {"do_rescale", true}, {"rescale_factor", 1.0 / 255}, {"do_normalize", true},
        {"image_mean", half ? std::vector<double>(3, 0.5) : clip_mean},
        {"image_std", half ? std::vector<double>(3, 0.5) : clip_std}};
    if (conv3d) {
      pre["patch_size"] = a.kernel[1];
      pre["temporal_patch_size"] = a.kernel[0];
      pre["merge_size"] = 2;
    }
    if (!conv3d && a.image_size == 0) {
      pre["size"] = {{"longest_edge", 32 * ph}};  // sized by the longest edge or in tiles: no fixed size
    } else if (!conv3d && (clip || a.image_processor == "BitImageProcessor")) {
      pre["size"] = {{"shortest_edge", a.image_size}};
      pre["do_center_crop"] = true;
      pre["crop_size"] = {{"height", a.image_size}, {"width", a.image_size}};
    } else if (!conv3d) {
      pre["size"] = {{"height", a.image_size}, {"width", a.image_size}};
    } else if (qwen3) {
      pre["size"] = {{"shortest_edge", 65536}, {"longest_edge", 16777216}};
    } else if (glm) {
      pre["size"] = {{"shortest_edge", 12544}, {"longest_edge", 9633792}};
    } else {
      pre["min_pixels"] = 3136;
      pre["max_pixels"] = 12845056;
    }
    PF_RETURN_IF_ERROR(write_text(dir + "/preprocessor_config.json", pre.dump(2) + "\n"));
  }
  if (spec.patches == 0) return {};
  int64_t volume = 3;
  for (int64_t k : a.kernel) volume *= k;
  std::vector<float> pixels(static_cast<size_t>(spec.patches * volume));
  for (float& v : pixels) v = rng.uniform(-2.0f, 2.0f);  // normalized pixel range
  return write_npy_f32(dir + "/pixel_values.npy", {spec.patches, volume}, pixels.data());
}

}  // namespace patchfuse
