#include "converter/preprocessor_config.h"

#include "converter/architectures.h"
#include "converter/json_file.h"

#include <cmath>
#include <fstream>
#include <limits>
#include <optional>
#include <tuple>
#include <nlohmann/json.hpp>
#include <sstream>

namespace patchfuse {

using nlohmann::json;

namespace {

Result<int64_t> positive_int(const json& root, const char* key, int64_t fallback, const std::string& path) {
  if (!root.contains(key)) return fallback;
  const json& v = root[key];
  PF_CHECK(v.is_number_integer() && v.get<int64_t>() > 0, Code::kInvalidModel, path, ": ", key,
           " must be a positive integer, got ", v.dump());
  return v.get<int64_t>();
}

// Absent (or null, as save_pretrained writes an unset option) means `fallback`.
Result<bool> flag(const json& root, const char* key, const std::string& path, bool fallback = true) {
  if (!root.contains(key) || root[key].is_null()) return fallback;
  PF_CHECK(root[key].is_boolean(), Code::kInvalidModel, path, ": ", key, " must be true or false, got ", root[key].dump());
  return root[key].get<bool>();
}

// A number stored as f32: finite and within f32's range (a larger double has no f32 value).
Result<float> f32_number(const json& v, const char* key, const std::string& path) {
  const double d = v.is_number() ? v.get<double>() : 0.0;
  PF_CHECK(v.is_number() && std::isfinite(d) && std::fabs(d) <= std::numeric_limits<float>::max(),
           Code::kInvalidModel, path, ": ", key, " must hold finite numbers within float range, got ", v.dump());
  return static_cast<float>(d);
}

Result<std::vector<float>> numbers(const json& root, const char* key, std::vector<float> fallback, const std::string& path) {
  if (!root.contains(key)) return fallback;
  const json& v = root[key];
  PF_CHECK(v.is_array() && !v.empty(), Code::kInvalidModel, path, ": ", key, " must be a list of numbers, got ", v.dump());
  std::vector<float> out;
  for (const json& x : v) {
    PF_ASSIGN_OR_RETURN(const float f, f32_number(x, key, path));
    out.push_back(f);
  }
  return out;
}

// A size entry: an int (square) or {"height": h, "width": w}; nullopt for anything else (e.g.
// {"shortest_edge": s}, which keeps the aspect ratio, or {"longest_edge": l}).
Result<std::optional<std::pair<int64_t, int64_t>>> fixed_size(const json& root, const char* key, const std::string& path) {
  if (!root.contains(key)) return std::optional<std::pair<int64_t, int64_t>>();
  const json& v = root[key];
  if (v.is_number_integer()) {
    PF_ASSIGN_OR_RETURN(const int64_t side, positive_int(root, key, 0, path));
    return std::optional(std::make_pair(side, side));
  }
  if (v.is_object() && v.contains("height") && v.contains("width")) {
    PF_ASSIGN_OR_RETURN(const int64_t h, positive_int(v, "height", 0, cat(path, ": ", key)));
    PF_ASSIGN_OR_RETURN(const int64_t w, positive_int(v, "width", 0, cat(path, ": ", key)));
    return std::optional(std::make_pair(h, w));
  }
  return std::optional<std::pair<int64_t, int64_t>>();
}

const std::vector<float> kClipMean = {0.48145466f, 0.4578275f, 0.40821073f};
const std::vector<float> kClipStd = {0.26862954f, 0.26130258f, 0.27577711f};
const std::vector<float> kHalf = {0.5f, 0.5f, 0.5f};  // IMAGENET_STANDARD_MEAN and _STD

// A processor's own defaults for the keys a file may leave out (transformers'
// image_processing_qwen2_vl.py, _glm4v.py, video_processing_qwen2_vl.py, _qwen3_vl.py, _glm4v.py).
struct Defaults {
  const std::vector<float>* mean;
  const std::vector<float>* std;
  int64_t patch_size, min_pixels, max_pixels;
};

// The string `key`, or "" when absent.
Result<std::string> processor_type(const json& root, const char* key, const std::string& path) {
  if (!root.contains(key)) return std::string();
  PF_CHECK(root[key].is_string(), Code::kInvalidModel, path, ": ", key, " must be a string, got ", root[key].dump());
  return root[key].get<std::string>();
}

bool starts_with(const std::string& s, const char* prefix) { return s.rfind(prefix, 0) == 0; }

// `resample` (Pillow's filter number), or the processor's default: BILINEAR for ViT's and Gemma 3's
// processors, BICUBIC for the others patchfuse reads (Qwen2-VL, GLM-4V, CLIP, SigLIP, BiT, ...).
Result<Resample> resample(const json& root, const std::string& processor, const std::string& path) {
  if (!root.contains("resample") || root["resample"].is_null()) {
    const bool bilinear = starts_with(processor, "ViTImageProcessor") || starts_with(processor, "Gemma3ImageProcessor");
    return bilinear ? Resample::kBilinear : Resample::kBicubic;
  }
  const json& v = root["resample"];
  PF_CHECK(v.is_number_integer() && v.get<int64_t>() >= 0 && v.get<int64_t>() <= 5, Code::kInvalidModel, path,
           ": resample must be one of Pillow's filters 0 (NEAREST), 1 (LANCZOS), 2 (BILINEAR), 3 (BICUBIC), 4 (BOX), "
           "5 (HAMMING), got ", v.dump());
  return static_cast<Resample>(v.get<int>());
}

// image_mean, image_std, rescale_factor, do_rescale, do_normalize: what image and video processors
// share. `mean`/`std` null: the file must have them.
Status read_normalization(const json& root, const std::string& path, const std::string& processor,
                          const std::vector<float>* mean, const std::vector<float>* std, Preprocessing& p) {
  for (const char* key : {"image_mean", "image_std"}) {
    PF_CHECK(mean != nullptr || root.contains(key), Code::kInvalidModel, path, ": ", key, " is missing; ", processor,
             " has no default patchfuse can assume");
  }
  PF_ASSIGN_OR_RETURN(p.mean, numbers(root, "image_mean", mean ? *mean : std::vector<float>(), path));
  PF_ASSIGN_OR_RETURN(p.std, numbers(root, "image_std", std ? *std : std::vector<float>(), path));
  if (root.contains("rescale_factor")) {
    PF_ASSIGN_OR_RETURN(p.rescale_factor, f32_number(root["rescale_factor"], "rescale_factor", path));
  }
  PF_ASSIGN_OR_RETURN(const bool do_rescale, flag(root, "do_rescale", path));
  PF_ASSIGN_OR_RETURN(const bool do_normalize, flag(root, "do_normalize", path));
  if (!do_rescale) p.rescale_factor = 1.0f;
  if (!do_normalize) {
    p.mean.assign(p.mean.size(), 0.0f);
    p.std.assign(p.std.size(), 1.0f);
  }
  PF_CHECK(p.mean.size() == p.std.size(), Code::kInvalidModel, path, ": image_mean has ", p.mean.size(),
           " values but image_std has ", p.std.size());
  return {};
}

// patch_size, temporal_patch_size, merge_size and the smart_resize bounds (size.shortest_edge /
// size.longest_edge, overridden by min_pixels / max_pixels as in the processors).
Status read_smart_resize(const json& root, const std::string& path, const Defaults& d, Preprocessing& p) {
  PF_ASSIGN_OR_RETURN(p.patch_size, positive_int(root, "patch_size", d.patch_size, path));
  PF_ASSIGN_OR_RETURN(p.temporal_patch_size, positive_int(root, "temporal_patch_size", 2, path));
  PF_ASSIGN_OR_RETURN(p.merge_size, positive_int(root, "merge_size", 2, path));
  p.min_pixels = d.min_pixels;
  p.max_pixels = d.max_pixels;
  if (root.contains("size") && root["size"].is_object()) {
    PF_ASSIGN_OR_RETURN(p.min_pixels, positive_int(root["size"], "shortest_edge", p.min_pixels, path + ": size"));
    PF_ASSIGN_OR_RETURN(p.max_pixels, positive_int(root["size"], "longest_edge", p.max_pixels, path + ": size"));
  }
  PF_ASSIGN_OR_RETURN(p.min_pixels, positive_int(root, "min_pixels", p.min_pixels, path));
  PF_ASSIGN_OR_RETURN(p.max_pixels, positive_int(root, "max_pixels", p.max_pixels, path));
  PF_CHECK(p.min_pixels <= p.max_pixels, Code::kInvalidModel, path, ": min_pixels ", p.min_pixels,
           " exceeds max_pixels ", p.max_pixels);
  return {};
}

std::string floats(const std::vector<float>& v) {
  std::ostringstream out;
  out << '[';
  for (size_t i = 0; i < v.size(); ++i) out << (i ? ", " : "") << v[i];
  return out.str() + ']';
}

}  // namespace

Result<Preprocessing> load_preprocessor_config(const std::string& path, const std::string& model_type) {
  PF_ASSIGN_OR_RETURN(const json root, load_json_object(path, "the preprocessor config"));

  Preprocessing p;
  PF_ASSIGN_OR_RETURN(std::string processor, processor_type(root, "image_processor_type", path));
  if (processor.empty()) {
    if (const Architecture* a = find_architecture(model_type)) processor = std::string(a->image_processor);
  }
  if (starts_with(processor, "Glm4v") || starts_with(processor, "Glm46V")) {  // GLM-4.6V's subclasses Glm4v's
    p.resize = ResizeVariant::kGlm4v;
  } else if (starts_with(processor, "Qwen2VL") || processor.empty()) {
    p.resize = ResizeVariant::kQwen2Vl;
  } else {
    p.resize = ResizeVariant::kFixed;
  }
  // Fixed-size processors differ in their defaults (0.5, CLIP's, ImageNet's), so theirs must be
  // in the file.
  const bool fixed = p.resize == ResizeVariant::kFixed;
  PF_RETURN_IF_ERROR(read_normalization(root, path, processor, fixed ? nullptr : &kClipMean,
                                        fixed ? nullptr : &kClipStd, p));
  PF_ASSIGN_OR_RETURN(p.resample, resample(root, processor, path));
  PF_ASSIGN_OR_RETURN(p.do_resize, flag(root, "do_resize", path));
  // convert("RGB") is what every pixel format goes through; a processor that skips it would feed
  // the model an image's own channels, which a 3-channel weight takes only as RGB anyway.
  PF_ASSIGN_OR_RETURN(const bool convert_rgb, flag(root, "do_convert_rgb", path));
  (void)convert_rgb;

  if (fixed) {
    // One image, patches in raster order; the patch size is the weight's (these processors do
    // not cut patches themselves). The image is resized to `size` (exact, or its shortest edge),
    // then centre-cropped to crop_size when do_center_crop; the frame is the crop, else the size.
    p.patch_size = 0;
    p.temporal_patch_size = p.merge_size = 1;
    PF_CHECK(p.do_resize, Code::kUnsupported, path, ": ", processor,
             " with do_resize false takes images at their own size, not one fixed size");
    PF_ASSIGN_OR_RETURN(const bool crop, flag(root, "do_center_crop", path, false));
    PF_ASSIGN_OR_RETURN(const auto size, fixed_size(root, "size", path));
    int64_t shortest = 0;
    if (!size && root.contains("size") && root["size"].is_object() && root["size"].size() == 1 &&
        root["size"].contains("shortest_edge")) {
      PF_ASSIGN_OR_RETURN(shortest, positive_int(root["size"], "shortest_edge", 0, path + ": size"));
    }
    const std::string how = root.contains("size") ? root["size"].dump() : std::string("(no size)");
    if (crop) {
      PF_ASSIGN_OR_RETURN(const auto crop_size, fixed_size(root, "crop_size", path));
      PF_CHECK(crop_size.has_value(), Code::kInvalidModel, path, ": do_center_crop is true but crop_size ",
               root.contains("crop_size") ? root["crop_size"].dump() : std::string("is missing"),
               " is not an int or {height, width}");
      PF_CHECK(size || shortest > 0, Code::kUnsupported, path, ": ", processor, " sizes images by ", how,
               " before its centre crop, which patchfuse does not reproduce (an int, {height, width} or "
               "{shortest_edge})");
      std::tie(p.fixed_height, p.fixed_width) = *crop_size;
      p.shortest_edge = shortest;
      if (size) std::tie(p.resize_height, p.resize_width) = *size;
    } else {
      PF_CHECK(size.has_value(), Code::kUnsupported, path, ": ", processor, " sizes images by ", how,
               ", not to one fixed size, and patchfuse does not reproduce that resize");
      std::tie(p.fixed_height, p.fixed_width) = *size;
    }
    return p;
  }
  const bool glm = p.resize == ResizeVariant::kGlm4v;
  PF_RETURN_IF_ERROR(read_smart_resize(
      root, path, Defaults{&kClipMean, &kClipStd, 14, glm ? 112 * 112 : 56 * 56, glm ? 28 * 28 * 15000 : 28 * 28 * 1280}, p));
  return p;
}

Result<VideoResize> load_video_preprocessor_config(const std::string& path, const Preprocessing& image,
                                                   const std::string& image_path) {
  PF_ASSIGN_OR_RETURN(const json root, load_json_object(path, "the video preprocessor config"));
  PF_ASSIGN_OR_RETURN(const std::string processor, processor_type(root, "video_processor_type", path));
  PF_CHECK(!processor.empty(), Code::kInvalidModel, path,
           ": video_processor_type is missing; it says how the video processor sizes frames");
  VideoResize video;
  Defaults d{&kClipMean, &kClipStd, 14, 128 * 28 * 28, 28 * 28 * 768};  // Qwen2VLVideoProcessor
  if (starts_with(processor, "Qwen3VL")) {
    video.variant = ResizeVariant::kGlm4v;
    d = Defaults{&kHalf, &kHalf, 16, 128 * 32 * 32, 32 * 32 * 768};
  } else if (starts_with(processor, "Glm4v") || starts_with(processor, "Glm46V")) {
    video.variant = ResizeVariant::kGlm4v;
    d = Defaults{&kClipMean, &kClipStd, 14, 112 * 112, 28 * 28 * 2 * 30000};
  } else {
    PF_CHECK(starts_with(processor, "Qwen2VL"), Code::kInvalidModel, path, ": video_processor_type '", processor,
             "' is not one patchfuse reproduces (Qwen2VLVideoProcessor, Qwen3VLVideoProcessor, Glm4vVideoProcessor, Glm46VVideoProcessor)");
  }
  Preprocessing v;
  PF_RETURN_IF_ERROR(read_normalization(root, path, processor, d.mean, d.std, v));
  PF_RETURN_IF_ERROR(read_smart_resize(root, path, d, v));
  // One set of folded weights serves images and videos, so everything but the sizing must agree.
  const auto differs = [&](const char* key, const std::string& here, const std::string& there) {
    return make_error(Code::kInvalidModel, cat(path, ": ", key, " ", here, " disagrees with ", image_path, "'s ", there,
                                               "; patchfuse needs one normalization and patch shape for images and videos"));
  };
  if (v.mean != image.mean) return differs("image_mean", floats(v.mean), floats(image.mean));
  if (v.std != image.std) return differs("image_std", floats(v.std), floats(image.std));
  if (v.rescale_factor != image.rescale_factor) {
    return differs("rescale_factor", cat(v.rescale_factor), cat(image.rescale_factor));
  }
  for (auto [key, here, there] : {std::tuple{"patch_size", v.patch_size, image.patch_size},
                                  std::tuple{"temporal_patch_size", v.temporal_patch_size, image.temporal_patch_size},
                                  std::tuple{"merge_size", v.merge_size, image.merge_size}}) {
    if (here != there) return differs(key, cat(here), cat(there));
  }
  video.min_pixels = v.min_pixels;
  video.max_pixels = v.max_pixels;
  if (starts_with(processor, "Qwen3VL")) {
    PF_ASSIGN_OR_RETURN(video.cap_pixels_per_frame, flag(root, "cap_pixels_per_frame", path, false));
  }
  return video;
}

}  // namespace patchfuse
