// Hugging Face's preprocessor_config.json (Qwen2VLImageProcessor and its fast variant, used by
// Qwen2-VL, Qwen2.5-VL, Qwen2.5-Omni, Qwen3-VL, Qwen3-Omni; Glm4vImageProcessor for GLM-4.1V/4.5V)
// as the Preprocessing a .pfb stores. Keys: image_mean, image_std, rescale_factor, do_rescale,
// do_normalize, patch_size, temporal_patch_size, merge_size, and the smart_resize bounds as
// min_pixels / max_pixels or size.shortest_edge / size.longest_edge; absent keys take the
// processor's own defaults.
#pragma once

#include <string>

#include "runtime/core/result.h"
#include "runtime/frames/preprocessing.h"

namespace patchfuse {

// `model_type` (config.json) picks the smart_resize variant when the file has no
// image_processor_type. Wrong types and values are errors naming the file, key and value.
Result<Preprocessing> load_preprocessor_config(const std::string& path, const std::string& model_type);

}  // namespace patchfuse
