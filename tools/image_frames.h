// Image files -> uint8 RGB frames for the frames API, for patchfuse-run --image/--frames and
// patchfuse-bench --image. Decoding is stb_image's (PNG, JPEG, PPM/PGM, BMP, ...); frames whose
// size is not the model's smart_resize target are resized with stb_image_resize. That resize is
// not PIL's bicubic, so its pixels differ slightly from Hugging Face's: an app should resize with
// its own pipeline to pf_model_frame_size() and hand over frames of that size.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "patchfuse/patchfuse.hpp"

namespace patchfuse {

struct LoadedFrames {
  size_t height = 0, width = 0;          // after resizing
  size_t source_height = 0, source_width = 0;
  bool resized = false;
  std::vector<std::vector<uint8_t>> frames;  // each height * width * 3, HWC

  std::vector<const uint8_t*> pointers() const;
};

// Decodes every file (all must have the first file's size) and resizes each to the model's
// target for that size: the image rule for one file, the video rule for several. Errors name the
// file and the reason.
Expected<LoadedFrames> load_frames(const std::vector<std::string>& files, const Model& model, size_t module_index);

// Seeded random frames of height x width (for benchmarks).
LoadedFrames synthetic_frames(size_t count, size_t height, size_t width, uint32_t seed);

}  // namespace patchfuse
