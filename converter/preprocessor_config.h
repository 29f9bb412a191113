// Hugging Face's preprocessor_config.json as the Preprocessing a .pfb stores.
// - Qwen2VLImageProcessor (and its fast variant: Qwen2-VL, Qwen2.5-VL, Qwen2.5-Omni, Qwen3-VL,
//   Qwen3-Omni) and Glm4vImageProcessor (GLM-4.1V/4.5V): image_mean, image_std, rescale_factor,
//   do_rescale, do_normalize, patch_size, temporal_patch_size, merge_size, and the smart_resize
//   bounds as min_pixels / max_pixels or size.shortest_edge / size.longest_edge; absent keys take
//   the processor's own defaults.
// - Any other processor (SigLIP's, CLIP's, ViT's, ...: Conv2d patch embeddings) is fixed-size:
//   crop_size when do_center_crop, else size, as an int or {height, width}; image_mean and
//   image_std must be present. patch_size is left 0: the caller takes it from the weight.
//   A processor without a fixed size (Pixtral's longest_edge, Idefics3's tiles) is kUnsupported.
// - video_preprocessor_config.json (Qwen2VLVideoProcessor, Qwen3VLVideoProcessor,
//   Glm4vVideoProcessor): how videos are sized. Its normalization and patch sizes must equal the
//   image processor's, because one set of folded weights serves both.
#pragma once

#include <string>

#include "runtime/core/result.h"
#include "runtime/frames/preprocessing.h"

namespace patchfuse {

// `model_type` (config.json) picks the processor when the file has no image_processor_type.
// Wrong types and values are errors (kInvalidModel) naming the file, key and value.
Result<Preprocessing> load_preprocessor_config(const std::string& path, const std::string& model_type);

// The video rule of a smart_resize `image` preprocessing read from `image_path`; a value that
// disagrees with it is an error naming both files, the key and both values.
Result<VideoResize> load_video_preprocessor_config(const std::string& path, const Preprocessing& image,
                                                   const std::string& image_path);

}  // namespace patchfuse
