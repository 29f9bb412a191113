#include "runtime/frames/preprocessing.h"

#include <cmath>

namespace patchfuse {

const char* resize_variant_name(ResizeVariant v) {
  switch (v) {
    case ResizeVariant::kQwen2Vl: return "qwen2_vl";
    case ResizeVariant::kGlm4v: return "glm4v";
    case ResizeVariant::kFixed: return "fixed";
  }
  return "?";
}

Status check_preprocessing(const Preprocessing& p, const ConvGeometry& g, const std::string& where) {
  PF_CHECK(p.patch_size > 0 && p.temporal_patch_size > 0 && p.merge_size > 0, Code::kInvalidModel, where,
           ": preprocessing patch_size ", p.patch_size, ", temporal_patch_size ", p.temporal_patch_size,
           ", merge_size ", p.merge_size, " must all be positive");
  const size_t r = g.kernel.size();
  PF_CHECK(r >= 2 && g.kernel[r - 2] == p.patch_size && g.kernel[r - 1] == p.patch_size, Code::kInvalidModel, where,
           ": preprocessing patch_size ", p.patch_size, " disagrees with the weight's kernel ", format_dims(g.kernel),
           " (frames need square patches of that size)");
  const int64_t kernel_t = r == 3 ? g.kernel[0] : 1;
  PF_CHECK(kernel_t == p.temporal_patch_size, Code::kInvalidModel, where, ": preprocessing temporal_patch_size ",
           p.temporal_patch_size, " disagrees with the weight's kernel t ", kernel_t);
  PF_CHECK(static_cast<int64_t>(p.mean.size()) == g.in_channels && static_cast<int64_t>(p.std.size()) == g.in_channels,
           Code::kInvalidModel, where, ": preprocessing has ", p.mean.size(), " image_mean and ", p.std.size(),
           " image_std values for a weight with in_channels ", g.in_channels);
  for (size_t c = 0; c < p.std.size(); ++c) {
    PF_CHECK(std::isfinite(p.std[c]) && p.std[c] != 0.0f && std::isfinite(p.mean[c]), Code::kInvalidModel, where,
             ": preprocessing image_std[", c, "] = ", p.std[c], ", image_mean[", c, "] = ", p.mean[c],
             " must be finite with a non-zero std");
  }
  PF_CHECK(std::isfinite(p.rescale_factor) && p.rescale_factor > 0, Code::kInvalidModel, where,
           ": preprocessing rescale_factor ", p.rescale_factor, " must be positive and finite");
  if (p.resize == ResizeVariant::kFixed) {
    PF_CHECK(p.merge_size == 1 && p.temporal_patch_size == 1, Code::kInvalidModel, where,
             ": fixed-size preprocessing has merge_size ", p.merge_size, " and temporal_patch_size ",
             p.temporal_patch_size, "; both must be 1 (one image, patches in raster order)");
    PF_CHECK(p.fixed_height >= p.patch_size && p.fixed_width >= p.patch_size && p.fixed_height <= (1 << 20) &&
                 p.fixed_width <= (1 << 20),
             Code::kInvalidModel, where, ": preprocessing size ", p.fixed_height, "x", p.fixed_width,
             " must be at least one patch (", p.patch_size, ") and at most 2^20 on each side");
  } else {
    PF_CHECK(p.min_pixels > 0 && p.min_pixels <= p.max_pixels, Code::kInvalidModel, where,
             ": preprocessing min_pixels ", p.min_pixels, " and max_pixels ", p.max_pixels,
             " must satisfy 0 < min_pixels <= max_pixels");
  }
  return {};
}

namespace {

// Python's round() on a float: halves go to the even neighbour (the default FP rounding mode).
int64_t py_round(double v) { return static_cast<int64_t>(std::nearbyint(v)); }

}  // namespace

// Follows transformers' smart_resize functions line by line (qwen2_vl/image_processing_qwen2_vl.py
// and glm4v/image_processing_glm4v.py), in double like Python's floats.
Result<std::pair<int64_t, int64_t>> smart_resize(const Preprocessing& p, int64_t height, int64_t width) {
  PF_CHECK(height > 0 && width > 0 && height <= (1 << 20) && width <= (1 << 20), Code::kInvalidArgument,
           "smart_resize: image size ", height, "x", width, " must be between 1 and 2^20 on each side");
  const double factor = static_cast<double>(p.factor());
  double h = static_cast<double>(height), w = static_cast<double>(width);
  double t = 1;  // Qwen2-VL budgets pixels of one frame
  if (p.resize == ResizeVariant::kGlm4v) {
    t = static_cast<double>(p.temporal_patch_size);  // an image counts as temporal_patch_size frames
    if (h < factor || w < factor) {
      const double scale = std::max(factor / h, factor / w);
      h = std::trunc(h * scale);
      w = std::trunc(w * scale);
    }
  }
  PF_CHECK(std::max(h, w) / std::min(h, w) <= 200, Code::kInvalidArgument, "smart_resize: image size ", height, "x",
           width, " has an aspect ratio above 200");
  int64_t h_bar = py_round(h / factor) * p.factor();
  int64_t w_bar = py_round(w / factor) * p.factor();
  // GLM-4V's t_bar = round(num_frames / temporal_factor) * temporal_factor with num_frames =
  // temporal_factor for an image, i.e. t itself.
  const double pixels = t * static_cast<double>(h_bar) * static_cast<double>(w_bar);
  if (pixels > static_cast<double>(p.max_pixels)) {
    const double beta = std::sqrt(t * h * w / static_cast<double>(p.max_pixels));
    h_bar = std::max(p.factor(), static_cast<int64_t>(std::floor(h / beta / factor)) * p.factor());
    w_bar = std::max(p.factor(), static_cast<int64_t>(std::floor(w / beta / factor)) * p.factor());
  } else if (pixels < static_cast<double>(p.min_pixels)) {
    const double beta = std::sqrt(static_cast<double>(p.min_pixels) / (t * h * w));
    h_bar = static_cast<int64_t>(std::ceil(h * beta / factor)) * p.factor();
    w_bar = static_cast<int64_t>(std::ceil(w * beta / factor)) * p.factor();
  }
  return std::make_pair(h_bar, w_bar);
}

Result<std::pair<int64_t, int64_t>> resize_target(const Preprocessing& p, int64_t height, int64_t width) {
  if (p.resize != ResizeVariant::kFixed) return smart_resize(p, height, width);
  PF_CHECK(height > 0 && width > 0, Code::kInvalidArgument, "resize: image size ", height, "x", width,
           " must be positive");
  return std::make_pair(p.fixed_height, p.fixed_width);
}

Result<FrameGrid> frame_grid(const Preprocessing& p, size_t frames, size_t height, size_t width) {
  PF_CHECK(frames >= 1, Code::kInvalidArgument, "frames: t = 0; at least one frame is needed");
  const bool fixed = p.resize == ResizeVariant::kFixed;
  const auto f = static_cast<size_t>(fixed ? p.patch_size : p.factor());
  if (!(height >= f && width >= f && (fixed || (height % f == 0 && width % f == 0)))) {
    const auto want = resize_target(p, static_cast<int64_t>(height), static_cast<int64_t>(width));
    const std::string rule = fixed ? cat("is smaller than one patch (", f, ")")
                                   : cat("is not a multiple of patch_size * merge_size = ", f);
    return make_error(Code::kInvalidArgument,
                      cat("frames: size ", height, "x", width, " (height x width) ", rule,
                          want.ok() ? cat("; Hugging Face resizes this image to ", want->first, "x", want->second) : std::string()));
  }
  PF_CHECK(frames <= (1u << 20) && height <= (1u << 20) && width <= (1u << 20), Code::kInvalidArgument, "frames: ",
           frames, " frames of ", height, "x", width, " exceed 2^20 on some axis");
  const auto tps = static_cast<size_t>(p.temporal_patch_size);
  FrameGrid g;
  g.t = static_cast<int64_t>((frames + tps - 1) / tps);
  g.h = static_cast<int64_t>(height) / p.patch_size;  // whole patches: a Conv2d drops the rest
  g.w = static_cast<int64_t>(width) / p.patch_size;
  return g;
}

}  // namespace patchfuse
