#include "tools/image_frames.h"

#include <stb_image.h>
#include <stb_image_resize.h>

#include <memory>
#include <random>

namespace patchfuse {

std::vector<const uint8_t*> LoadedFrames::pointers() const {
  std::vector<const uint8_t*> p;
  for (const std::vector<uint8_t>& f : frames) p.push_back(f.data());
  return p;
}

Expected<LoadedFrames> load_frames(const std::vector<std::string>& files, const Model& model, size_t module_index) {
  LoadedFrames out;
  for (const std::string& file : files) {
    int w = 0, h = 0, channels = 0;
    std::unique_ptr<stbi_uc, void (*)(void*)> pixels(stbi_load(file.c_str(), &w, &h, &channels, 3), stbi_image_free);
    if (!pixels) return {PF_INVALID_ARGUMENT, file + ": cannot decode the image: " + stbi_failure_reason()};
    if (out.frames.empty()) {
      out.source_height = static_cast<size_t>(h);
      out.source_width = static_cast<size_t>(w);
      // One file is a still image; more are a video, sized by the video processor's rule.
      auto target = files.size() == 1 ? model.frame_size(module_index, h, w)
                                      : model.video_frame_size(module_index, files.size(), h, w);
      if (!target) return {target.status(), file + ": " + target.error()};
      out.height = static_cast<size_t>(target->first);
      out.width = static_cast<size_t>(target->second);
      out.resized = out.height != out.source_height || out.width != out.source_width;
    } else if (static_cast<size_t>(h) != out.source_height || static_cast<size_t>(w) != out.source_width) {
      return {PF_INVALID_ARGUMENT, file + ": frame size " + std::to_string(h) + "x" + std::to_string(w) +
                                       " differs from the first frame's " + std::to_string(out.source_height) + "x" +
                                       std::to_string(out.source_width)};
    }
    std::vector<uint8_t> frame(out.height * out.width * 3);
    if (!out.resized) {
      std::copy(pixels.get(), pixels.get() + frame.size(), frame.begin());
    } else if (!stbir_resize_uint8(pixels.get(), w, h, 0, frame.data(), static_cast<int>(out.width),
                                   static_cast<int>(out.height), 0, 3)) {
      return {PF_INTERNAL, file + ": stb_image_resize failed"};
    }
    out.frames.push_back(std::move(frame));
  }
  return out;
}

LoadedFrames synthetic_frames(size_t count, size_t height, size_t width, uint32_t seed) {
  LoadedFrames out;
  out.height = out.source_height = height;
  out.width = out.source_width = width;
  std::mt19937 rng(seed);
  for (size_t f = 0; f < count; ++f) {
    std::vector<uint8_t> frame(height * width * 3);
    for (uint8_t& v : frame) v = static_cast<uint8_t>(rng() >> 24);
    out.frames.push_back(std::move(frame));
  }
  return out;
}

}  // namespace patchfuse
