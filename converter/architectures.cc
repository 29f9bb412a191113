#include "converter/architectures.h"

namespace patchfuse {

namespace {

// A row of the table, written with named setters so that each row reads on its own. conv3d() and
// conv2d() start from what most rows of their family share; a row states only what differs.
class Row {
 public:
  Row(std::string_view model_type, std::string_view family, std::vector<int64_t> kernel) {
    a_.model_type = model_type;
    a_.family = family;
    a_.kernel = std::move(kernel);
    a_.vision_config_at = "vision_config";
  }
  Row& config_at(std::string_view at) { return a_.vision_config_at = at, *this; }
  Row& channels_key(std::string_view key) { return a_.in_channels_key = key, *this; }
  Row& module(std::string_view path, std::string_view cls) {
    a_.patch_embed_path = path;
    a_.patch_embed_class = cls;
    return *this;
  }
  Row& bias() { return a_.bias = true, *this; }
  Row& width(int64_t embed_dim, int64_t hidden_size) {
    a_.embed_dim = embed_dim;
    a_.vision_hidden_size = hidden_size;
    return *this;
  }
  Row& width(int64_t embed_dim) { return width(embed_dim, embed_dim); }
  Row& processor(std::string_view type, int64_t image_size = 0) {
    a_.image_processor = type;
    a_.image_size = image_size;
    return *this;
  }
  // The encoder input's steps (EncoderSteps), in the order Hugging Face applies them.
  Row& merge_order() { return a_.encoder.merge_order = true, *this; }
  Row& window() { return a_.encoder.window = true, *this; }
  Row& position(std::string_view table, PositionMode mode, std::string_view config_switch = "") {
    a_.encoder.position = table;
    a_.encoder.position_mode = mode;
    a_.encoder.position_switch = config_switch;
    return *this;
  }
  Row& sample_side(int64_t side) { return a_.encoder.sample_side = side, *this; }
  Row& class_row(std::string_view embedding) { return a_.encoder.class_embedding = embedding, *this; }
  Row& norm(NormKind kind, std::string_view weight, std::string_view bias, std::string_view eps_key, double eps) {
    a_.encoder.norm = kind;
    a_.encoder.norm_weight = weight;
    a_.encoder.norm_bias = bias;
    a_.encoder.eps_key = eps_key;
    a_.encoder.eps = eps;
    a_.encoder.norm_before_position = a_.encoder.position.empty();  // written before .position(): applied first
    return *this;
  }
  Row& refuse(std::string_view why) { return a_.encoder.refused = why, *this; }
  // The blocks' schedule defaults (the vision config class's) and what they take per grid.
  Row& blocks(int64_t depth, int64_t heads) {
    a_.blocks.depth = depth;
    a_.blocks.heads = heads;
    return *this;
  }
  Row& vision_rope() {
    a_.blocks.rotary = RotaryKind::kVision2d;
    a_.blocks.segments = true;
    return *this;
  }
  Row& fullatt(std::vector<int64_t> indexes) {
    a_.blocks.fullatt = std::move(indexes);
    a_.blocks.reads_fullatt = true;
    return *this;
  }
  Row& deepstack(std::vector<int64_t> indexes) {
    a_.blocks.deepstack = std::move(indexes);
    a_.blocks.reads_deepstack = true;
    return *this;
  }
  Row& position_ids(PositionIdsKind kind, int64_t image_size) {
    a_.blocks.position_ids = kind;
    a_.blocks.image_size = image_size;
    return *this;
  }
  Row& pixtral_rope() { return a_.blocks.rotary = RotaryKind::kPixtral, *this; }
  operator Architecture() const { return a_; }  // NOLINT: rows convert implicitly in the table

 private:
  Architecture a_;
};

// Qwen2-VL-style: nn.Conv3d(C, embed_dim, kernel=(t, p, p), stride=kernel) held as `<M>.proj`.
// Every tower of the family runs its blocks on the vision RoPE and one segment per frame.
Row conv3d(std::string_view model_type, int64_t t, int64_t p) {
  return Row(model_type, "patch_embeddings", {t, p, p})
      .channels_key("in_channels")
      .processor("Qwen2VLImageProcessor")
      .merge_order()
      .vision_rope();
}

// SigLIP/CLIP/ViT-style: nn.Conv2d(C, embed_dim, kernel=(ph, pw), stride=kernel), the module itself.
Row conv2d(std::string_view model_type, int64_t ph, int64_t pw) {
  return Row(model_type, "conv2d_patch_embeddings", {ph, pw}).channels_key("num_channels");
}
Row conv2d(std::string_view model_type, int64_t p) { return conv2d(model_type, p, p); }

// The Qwen3-VL family: conv bias, width 1152, + pos_embed bilinearly interpolated from its 48x48
// table (num_position_embeddings 2304); Qwen3VLVisionConfig's 27 blocks of 16 heads with deepstack
// taps after blocks 8, 16 and 24. Qwen3.5 is the same tower without the taps.
Row qwen3_tower(Row r) {
  return r.bias().width(1152).position("pos_embed.weight", PositionMode::kBilinearAlignCorners).sample_side(48).blocks(27, 16);
}
Row qwen3(Row r) { return qwen3_tower(std::move(r)).deepstack({8, 16, 24}); }
// GLM-4.1V/4.5V: conv bias, width 1536, its own processor, RMSNorm then the position table
// (image_size 336 / 14 = 24) sampled by grid_sample; Glm4vVisionConfig's 24 blocks of 12 heads.
Row glm4v(Row r) {
  return r.bias()
      .width(1536)
      .blocks(24, 12)
      .processor("Glm4vImageProcessor")
      .norm(NormKind::kRmsNorm, "post_conv_layernorm.weight", "", "rms_norm_eps", 1e-5)
      .position("embeddings.position_embedding.weight", PositionMode::kGridSampleBicubic)
      .sample_side(24);
}

// The encoder inputs that recur: SigLIP's (the table, bicubic when the grid differs), CLIP's (class
// row, table, pre_layrnorm) and ViT's naming (cls_token and position_embeddings beside the patch
// embeddings).
Row siglip(Row r) { return r.position("position_embedding.weight", PositionMode::kBicubic); }
Row clip(Row r) {
  return r.class_row("class_embedding")
      .position("position_embedding.weight", PositionMode::kBicubic)
      .norm(NormKind::kLayerNorm, "../pre_layrnorm.weight", "../pre_layrnorm.bias", "layer_norm_eps", 1e-5);
}
Row vit(Row r, std::string_view config_switch = "") {
  return r.class_row("../cls_token").position("../position_embeddings", PositionMode::kBicubic, config_switch);
}
constexpr std::string_view kBucketized =
    "its position ids are bucketized fractional coordinates of the patch attention mask (Idefics3VisionEmbeddings), "
    "not computed yet";

}  // namespace

const std::vector<Architecture>& architectures() {
  // Facts from transformers' modeling code and the published config.json / preprocessor_config.json
  // of each family's reference checkpoint (named in the comment).
  static const std::vector<Architecture> table = {
      // Conv3d, the Qwen2-VL family.
      conv3d("qwen2_vl", 2, 14).channels_key("in_chans").module("visual.patch_embed", "PatchEmbed").width(1280, 1536).blocks(32, 16),
      conv3d("qwen2_5_vl", 2, 14)
          .channels_key("in_chans")
          .module("visual.patch_embed", "Qwen2_5_VisionPatchEmbed")
          .width(1280)
          .window()
          .blocks(32, 16)
          .fullatt({7, 15, 23, 31}),
      conv3d("qwen2_5_omni", 2, 14)
          .config_at("thinker_config.vision_config")
          .module("thinker.visual.patch_embed", "Qwen2_5_VisionPatchEmbed")
          .width(1280)
          .window()
          .blocks(32, 16)
          .fullatt({7, 15, 23, 31}),
      qwen3(conv3d("qwen3_vl", 2, 16).module("model.visual.patch_embed", "Qwen3VLVisionPatchEmbed")),
      qwen3(conv3d("qwen3_vl_moe", 2, 16).module("model.visual.patch_embed", "Qwen3VLMoeVisionPatchEmbed")),
      qwen3(conv3d("qwen3_omni_moe", 2, 16)
                .config_at("thinker_config.vision_config")
                .module("thinker.visual.patch_embed", "Qwen3OmniMoeVisionPatchEmbed")),
      glm4v(conv3d("glm4v", 2, 14).module("model.visual.patch_embed", "Glm4vVisionPatchEmbed")),
      glm4v(conv3d("glm4v_moe", 2, 14).module("model.visual.patch_embed", "Glm4vMoeVisionPatchEmbed")),
      // The 2026 towers (shared/research/block_inputs.md §4). Qwen3.5 (Qwen/Qwen3.5-27B): Qwen3-VL's
      // tower without deepstack, patch 16. GLM-4.6V: GLM-4V's tower (glm4v_vision) under another
      // model_type, its processor a Glm4v subclass. GLM-OCR (zai-org/GLM-OCR): GLM-4V's Conv3d with
      // neither norm nor position table, so block 0 takes the conv output; 24 blocks of 16 heads.
      qwen3_tower(conv3d("qwen3_5", 2, 16).module("model.visual.patch_embed", "Qwen3_5VisionPatchEmbed")),
      qwen3_tower(conv3d("qwen3_5_moe", 2, 16).module("model.visual.patch_embed", "Qwen3_5MoeVisionPatchEmbed")),
      glm4v(conv3d("glm46v", 2, 14).module("model.visual.patch_embed", "Glm4vVisionPatchEmbed")).processor("Glm46VImageProcessor"),
      conv3d("glm_ocr", 2, 14)
          .module("model.visual.patch_embed", "GlmOcrVisionPatchEmbed")
          .bias()
          .width(1024)
          .blocks(24, 16)
          .processor("Glm46VImageProcessor"),

      // Conv2d. SigLIP so400m (google/siglip-so400m-patch14-384) and its standalone vision model.
      siglip(conv2d("siglip", 14).module("vision_model.embeddings.patch_embedding", "Conv2d").bias().width(1152).processor("SiglipImageProcessor", 384)),
      siglip(conv2d("siglip_vision_model", 14)
                 .config_at("")
                 .module("vision_model.embeddings.patch_embedding", "Conv2d")
                 .bias()
                 .width(1152)
                 .processor("SiglipImageProcessor", 384)),
      // CLIP ViT-L/14 (openai/clip-vit-large-patch14): no bias, resize + 224 centre crop.
      clip(conv2d("clip", 14).module("vision_model.embeddings.patch_embedding", "Conv2d").width(1024).processor("CLIPImageProcessor", 224)),
      clip(conv2d("clip_vision_model", 14)
               .config_at("")
               .module("vision_model.embeddings.patch_embedding", "Conv2d")
               .width(1024)
               .processor("CLIPImageProcessor", 224)),
      // ViT (google/vit-base-patch16-224) and DINOv2 (facebook/dinov2-base): top-level configs.
      vit(conv2d("vit", 16).config_at("").module("vit.embeddings.patch_embeddings.projection", "Conv2d").bias().width(768).processor("ViTImageProcessor", 224)),
      vit(conv2d("dinov2", 14).config_at("").module("embeddings.patch_embeddings.projection", "Conv2d").bias().width(768).processor("BitImageProcessor", 224))
          .sample_side(37),
      // SigLIP towers inside VLMs: Gemma 3 (gemma-3-4b-it), PaliGemma (paligemma-3b-pt-224),
      // Idefics3 (Idefics3-8B-Llama3), SmolVLM (SmolVLM2-256M, SigLIP base patch16),
      // LLaVA-OneVision (llava-onevision-qwen2-0.5b-ov-hf), Phi-4-multimodal (transformers port).
      siglip(conv2d("gemma3", 14).module("vision_tower.vision_model.embeddings.patch_embedding", "Conv2d").bias().width(1152).processor("Gemma3ImageProcessor", 896)),
      siglip(conv2d("paligemma", 14).module("vision_tower.vision_model.embeddings.patch_embedding", "Conv2d").bias().width(1152).processor("SiglipImageProcessor", 224)),
      // Their blocks' position ids are bucketized over image_size / patch_size (config defaults:
      // Idefics3VisionConfig and SmolVLMVisionConfig 224, Phi4MultimodalVisionConfig 448).
      conv2d("idefics3", 14)
          .module("model.vision_model.embeddings.patch_embedding", "Conv2d")
          .bias()
          .width(1152)
          .processor("Idefics3ImageProcessor")
          .refuse(kBucketized)
          .position_ids(PositionIdsKind::kBucketized, 224),
      conv2d("smolvlm", 16)
          .module("model.vision_model.embeddings.patch_embedding", "Conv2d")
          .bias()
          .width(768)
          .processor("SmolVLMImageProcessor")
          .refuse(kBucketized)
          .position_ids(PositionIdsKind::kBucketized, 224),
      siglip(conv2d("llava_onevision", 14)
                 .module("vision_tower.vision_model.embeddings.patch_embedding", "Conv2d")
                 .bias()
                 .width(1152)
                 .processor("LlavaOnevisionImageProcessor", 384)),
      conv2d("phi4_multimodal", 14)
          .module("model.embed_tokens_extend.image_embed.img_processor.embeddings.patch_embedding", "Conv2d")
          .bias()
          .width(1152)
          .processor("Phi4MultimodalImageProcessorFast")
          .refuse(kBucketized)
          .position_ids(PositionIdsKind::kBucketized, 448),
      // CLIP towers: LLaVA-1.5 (llava-hf/llava-1.5-7b-hf, ViT-L/14-336).
      clip(conv2d("llava", 14).module("vision_tower.vision_model.embeddings.patch_embedding", "Conv2d").width(1024).processor("CLIPImageProcessor", 336)),
      // InternVL (OpenGVLab/InternVL3-1B-hf, InternViT-300M): the ViT naming.
      vit(conv2d("internvl", 14).module("vision_tower.embeddings.patch_embeddings.projection", "Conv2d").bias().width(1024).processor("GotOcr2ImageProcessor", 448),
          "use_absolute_position_embeddings"),
      // Pixtral's standalone vision model (PixtralVisionModel): ln_pre, a fixed-eps RMSNorm; its blocks
      // take 2-D rotary tables and position ids over image_size / patch (PixtralVisionConfig: 24
      // blocks of 16 heads, image_size 1024).
      conv2d("pixtral", 16).config_at("").module("patch_conv", "Conv2d").width(1024).processor("PixtralImageProcessor")
          .norm(NormKind::kRmsNorm, "ln_pre.weight", "", "", 1e-5)
          .blocks(24, 16)
          .pixtral_rope()
          .position_ids(PositionIdsKind::kPixtral, 1024),
      // Mllama (Llama-3.2-11B-Vision): no bias.
      conv2d("mllama", 14).module("vision_model.patch_embedding", "Conv2d").width(1280).processor("MllamaImageProcessor", 560)
          .refuse("its tile and position terms are gated and chosen by the aspect-ratio id of a tiled image (MllamaVisionModel), not computed yet"),
  };
  return table;
}

std::string encoder_tensor_name(const std::string& module, std::string_view relative) {
  std::string base = module;
  const auto up = [&] {
    const size_t dot = base.find_last_of('.');
    base = dot == std::string::npos ? std::string() : base.substr(0, dot);
  };
  up();
  while (relative.substr(0, 3) == "../") {
    up();
    relative.remove_prefix(3);
  }
  return base.empty() ? std::string(relative) : base + "." + std::string(relative);
}

const Architecture* find_architecture(std::string_view model_type) {
  for (const Architecture& a : architectures()) {
    if (a.model_type == model_type) return &a;
  }
  return nullptr;
}

std::string known_model_types() {
  std::string s;
  for (const Architecture& a : architectures()) s += (s.empty() ? "" : ", ") + std::string(a.model_type);
  return s;
}

const char* already_linear_reason(std::string_view model_type) {
  if (model_type == "siglip2" || model_type == "siglip2_vision_model") {
    return "SigLIP2 (NaFlex) embeds patches with nn.Linear(num_channels * patch_size^2, hidden_size) "
           "(embeddings.patch_embedding): it is already the fused form, so there is nothing to fuse";
  }
  if (model_type == "llama4" || model_type == "llama4_vision_model") {
    return "Llama 4 embeds patches with nn.Unfold + nn.Linear (vision_model.patch_embedding.linear): it is already "
           "the fused form, so there is nothing to fuse";
  }
  return nullptr;
}

}  // namespace patchfuse
