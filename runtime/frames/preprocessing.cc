#include "runtime/frames/preprocessing.h"

#include <algorithm>
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
  PF_CHECK(p.merge_size <= kMaxMergeSize && p.patch_size <= static_cast<int64_t>(kMaxImageSide), Code::kInvalidModel,
           where, ": preprocessing merge_size ", p.merge_size, " and patch_size ", p.patch_size, " must be at most ",
           kMaxMergeSize, " and ", kMaxImageSide);
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
  PF_CHECK(p.resample <= Resample::kHamming, Code::kInvalidModel, where, ": preprocessing resample ",
           static_cast<int>(p.resample), " is not one of Pillow's filters 0 (nearest) to 5 (hamming)");
  for (const auto& [what, s] : {std::pair{"image", p.image_semantics}, std::pair{"video", p.video_semantics}}) {
    PF_CHECK(s <= ResizeSemantics::kTorch, Code::kInvalidModel, where, ": preprocessing ", what, " resize semantics ",
             static_cast<int>(s), " is not pil or torch");
    PF_CHECK(s == ResizeSemantics::kPil || torch_has_filter(p.resample), Code::kInvalidModel, where, ": preprocessing ",
             what, " resize semantics torch has no ", resample_name(p.resample), " filter (nearest, bilinear, bicubic)");
  }
  const bool fixed = p.resize == ResizeVariant::kFixed;
  for (const int64_t side : {p.shortest_edge, p.resize_height, p.resize_width}) {
    PF_CHECK(side >= 0 && side <= static_cast<int64_t>(kMaxImageSide) && (fixed || side == 0), Code::kInvalidModel,
             where, ": preprocessing shortest_edge ", p.shortest_edge, ", resize size ", p.resize_height, "x",
             p.resize_width, " must be 0..", kMaxImageSide, ", and 0 unless the size is fixed");
  }
  PF_CHECK((p.resize_height > 0) == (p.resize_width > 0), Code::kInvalidModel, where, ": preprocessing resize size ",
           p.resize_height, "x", p.resize_width, " must have both sides or neither");
  PF_CHECK(p.do_resize || !fixed, Code::kInvalidModel, where,
           ": fixed-size preprocessing without do_resize has no fixed size");
  if (const auto& v = p.video) {
    PF_CHECK(p.resize != ResizeVariant::kFixed, Code::kInvalidModel, where,
             ": fixed-size preprocessing has a video resize; each frame of such a model is one image");
    PF_CHECK(v->variant == ResizeVariant::kQwen2Vl || v->variant == ResizeVariant::kGlm4v, Code::kInvalidModel, where,
             ": preprocessing video resize ", resize_variant_name(v->variant), " must be qwen2_vl or glm4v");
    PF_CHECK(v->min_pixels > 0 && v->min_pixels <= v->max_pixels, Code::kInvalidModel, where,
             ": preprocessing video min_pixels ", v->min_pixels, " and max_pixels ", v->max_pixels,
             " must satisfy 0 < min_pixels <= max_pixels");
    PF_CHECK(!v->cap_pixels_per_frame || v->variant == ResizeVariant::kGlm4v, Code::kInvalidModel, where,
             ": preprocessing caps video pixels per frame with the qwen2_vl video resize, which has no such option");
  }
  return {};
}

namespace {

// Python's round() on a float: halves go to the even neighbour (the default FP rounding mode).
int64_t py_round(double v) { return static_cast<int64_t>(std::nearbyint(v)); }

// Follows transformers' smart_resize functions line by line (qwen2_vl/image_processing_qwen2_vl.py,
// glm4v/image_processing_glm4v.py, qwen3_vl/video_processing_qwen3_vl.py), in double like Python's
// floats (also the pixel budgets, so no stored value can overflow an integer). kGlm4v budgets
// round(frames / tps) * tps frames of h x w; kQwen2Vl one frame.
Result<std::pair<int64_t, int64_t>> smart_resize_frames(ResizeVariant variant, int64_t factor, int64_t tps,
                                                        double min_pixels, double max_pixels, int64_t frames,
                                                        int64_t height, int64_t width) {
  PF_CHECK(height > 0 && width > 0 && height <= (1 << 20) && width <= (1 << 20), Code::kInvalidArgument,
           "smart_resize: image size ", height, "x", width, " must be between 1 and 2^20 on each side");
  const auto f = static_cast<double>(factor);
  double h = static_cast<double>(height), w = static_cast<double>(width);
  int64_t t_bar = 1;
  if (variant == ResizeVariant::kGlm4v) {
    PF_CHECK(frames >= tps, Code::kInvalidArgument, "smart_resize: ", frames,
             " frames; this video processor needs at least temporal_patch_size = ", tps,
             " (use a still image for one frame)");
    t_bar = py_round(static_cast<double>(frames) / static_cast<double>(tps)) * tps;
    if (h < f || w < f) {  // images smaller than one merge block are first scaled up
      const double scale = std::max(f / h, f / w);
      h = std::trunc(h * scale);
      w = std::trunc(w * scale);
    }
  }
  PF_CHECK(std::max(h, w) / std::min(h, w) <= 200, Code::kInvalidArgument, "smart_resize: image size ", height, "x",
           width, " has an aspect ratio above 200");
  int64_t h_bar = py_round(h / f) * factor;
  int64_t w_bar = py_round(w / f) * factor;
  const double t = variant == ResizeVariant::kGlm4v ? static_cast<double>(frames) : 1.0;
  const double pixels = static_cast<double>(t_bar) * static_cast<double>(h_bar) * static_cast<double>(w_bar);
  if (pixels > max_pixels) {
    const double beta = std::sqrt(t * h * w / max_pixels);
    h_bar = std::max(factor, static_cast<int64_t>(std::floor(h / beta / f)) * factor);
    w_bar = std::max(factor, static_cast<int64_t>(std::floor(w / beta / f)) * factor);
  } else if (pixels < min_pixels) {
    const double beta = std::sqrt(min_pixels / (t * h * w));
    h_bar = static_cast<int64_t>(std::ceil(h * beta / f)) * factor;
    w_bar = static_cast<int64_t>(std::ceil(w * beta / f)) * factor;
  }
  return std::make_pair(h_bar, w_bar);
}

}  // namespace

// An image: GLM-4V's processor counts it as temporal_patch_size frames.
Result<std::pair<int64_t, int64_t>> smart_resize(const Preprocessing& p, int64_t height, int64_t width) {
  return smart_resize_frames(p.resize, p.factor(), p.temporal_patch_size, static_cast<double>(p.min_pixels),
                             static_cast<double>(p.max_pixels), p.temporal_patch_size, height, width);
}

Result<std::pair<int64_t, int64_t>> resize_target(const Preprocessing& p, int64_t height, int64_t width) {
  PF_CHECK(height > 0 && width > 0, Code::kInvalidArgument, "resize: image size ", height, "x", width,
           " must be positive");
  if (p.resize == ResizeVariant::kFixed) return std::make_pair(p.fixed_height, p.fixed_width);
  if (!p.do_resize) return std::make_pair(height, width);
  return smart_resize(p, height, width);
}

Result<std::pair<int64_t, int64_t>> video_resize_target(const Preprocessing& p, int64_t frames, int64_t height,
                                                        int64_t width) {
  PF_CHECK(frames >= 1 && frames <= (1 << 20), Code::kInvalidArgument, "video: ", frames,
           " frames; a video has between 1 and 2^20 frames");
  if (p.resize == ResizeVariant::kFixed || !p.do_resize) return resize_target(p, height, width);
  const VideoResize v = p.video.value_or(VideoResize{p.resize, p.min_pixels, p.max_pixels, false});
  auto max_pixels = static_cast<double>(v.max_pixels);
  if (v.cap_pixels_per_frame) {
    const double f = static_cast<double>(p.factor()), frame_cap = 768 * f * f;
    const double floor_pixels = std::trunc(static_cast<double>(v.min_pixels) * 1.05);
    max_pixels = std::max(std::min(frame_cap, static_cast<double>(v.max_pixels / frames)), floor_pixels) *
                 static_cast<double>(frames);
  }
  return smart_resize_frames(v.variant, p.factor(), p.temporal_patch_size, static_cast<double>(v.min_pixels),
                             max_pixels, frames, height, width);
}

namespace {

int64_t floor_div2(int64_t v) { return v >= 0 ? v / 2 : -((-v + 1) / 2); }  // Python's v // 2

}  // namespace

Result<ResizeSpec> frame_resize_spec(const Preprocessing& p, int64_t frames, size_t height, size_t width) {
  const auto h = static_cast<int64_t>(height), w = static_cast<int64_t>(width);
  PF_ASSIGN_OR_RETURN(const auto target, frames == 0 ? resize_target(p, h, w) : video_resize_target(p, frames, h, w));
  ResizeSpec s;
  s.src_h = height;
  s.src_w = width;
  s.out_h = static_cast<size_t>(target.first);
  s.out_w = static_cast<size_t>(target.second);
  s.resized_h = s.out_h;
  s.resized_w = s.out_w;
  s.filter = p.resample;
  // A fixed-size (Conv2d) model takes each frame of a video as one image.
  s.semantics = frames == 0 || p.resize == ResizeVariant::kFixed ? p.image_semantics : p.video_semantics;
  if (p.resize == ResizeVariant::kFixed) {
    if (p.shortest_edge > 0) {  // transformers' get_resize_output_image_size(default_to_square=False)
      const int64_t short_side = std::min(h, w), long_side = std::max(h, w);
      const auto new_long = static_cast<int64_t>(static_cast<double>(p.shortest_edge) * static_cast<double>(long_side) /
                                                 static_cast<double>(short_side));
      PF_CHECK(new_long >= 1 && new_long <= static_cast<int64_t>(kMaxImageSide), Code::kInvalidArgument, "resize: a ",
               height, "x", width, " image resized to shortest edge ", p.shortest_edge, " would be ", new_long,
               " pixels long (at most ", kMaxImageSide, ")");
      s.resized_h = static_cast<size_t>(w <= h ? new_long : p.shortest_edge);
      s.resized_w = static_cast<size_t>(w <= h ? p.shortest_edge : new_long);
    } else if (p.resize_height > 0) {
      s.resized_h = static_cast<size_t>(p.resize_height);
      s.resized_w = static_cast<size_t>(p.resize_width);
    }
    s.top = floor_div2(static_cast<int64_t>(s.resized_h) - static_cast<int64_t>(s.out_h));
    s.left = floor_div2(static_cast<int64_t>(s.resized_w) - static_cast<int64_t>(s.out_w));
  }
  return s;
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
