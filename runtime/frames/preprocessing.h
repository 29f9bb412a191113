// What Hugging Face's image processor does to pixels before the patch embedding
// (Qwen2VLImageProcessor for Qwen2-VL, Qwen2.5-VL, Qwen2.5-Omni, Qwen3-VL, Qwen3-Omni;
// Glm4vImageProcessor for GLM-4.1V/4.5V; fixed-size processors such as SigLIP's, CLIP's and
// ViT's for Conv2d patch embeddings), as the numbers a device needs to take uint8 frames itself:
// normalization, patch/temporal/merge sizes and how the image is sized. The converter
// reads it from preprocessor_config.json and stores it in the .pfb; the reader checks it with the
// same rule (check_preprocessing) against the module's geometry.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "runtime/core/result.h"
#include "runtime/frames/kernels/kernels.h"
#include "runtime/frames/resize.h"
#include "runtime/rules/fusion_rules.h"

namespace patchfuse {

// Which smart_resize: Qwen2-VL's budgets h*w; GLM-4V's budgets t*h*w with t = temporal_patch_size
// for images and first scales up images smaller than one merge block. kFixed: every image becomes
// fixed_height x fixed_width (after a centre crop for CLIP-style processors).
enum class ResizeVariant : uint8_t { kQwen2Vl = 0, kGlm4v = 1, kFixed = 2 };
const char* resize_variant_name(ResizeVariant v);  // "qwen2_vl", "glm4v", "fixed"

// What the GEMM gets for a pixel, kPixelCentre and kPixelScale: kernels/kernels.h, where the
// gather's rows write it.

// The largest spatial merge a model may declare (models ship 1 or 2); it bounds the merge groups
// the gather and the encoder input walk, and keeps patch_size * merge_size far from overflow.
constexpr int64_t kMaxMergeSize = 64;

// How a video's frames are sized (video_preprocessor_config.json). kQwen2Vl: Qwen2VLVideoProcessor
// (Qwen2-VL, Qwen2.5-VL, Omni), the image smart_resize with the video's own bounds. kGlm4v:
// Glm4vVideoProcessor's and Qwen3VLVideoProcessor's smart_resize, which budgets
// round(frames / temporal_patch_size) * temporal_patch_size * h * w over the video's frame count.
// cap_pixels_per_frame: Qwen3VLVideoProcessor's option (after qwen-vl-utils) that first lowers
// max_pixels to max(min(768 * factor^2, max_pixels // frames), int(min_pixels * 1.05)) * frames.
// Without one (no video_preprocessor_config.json, or an older .pfb) videos are sized by the image
// rule, as transformers does when a checkpoint has no video config.
struct VideoResize {
  ResizeVariant variant = ResizeVariant::kQwen2Vl;
  int64_t min_pixels = 0, max_pixels = 0;
  bool cap_pixels_per_frame = false;
};

struct Preprocessing {
  std::vector<float> mean, std;  // per channel, applied as (u8 * rescale_factor - mean[c]) / std[c]
  float rescale_factor = 1.0f / 255.0f;
  int64_t patch_size = 14, temporal_patch_size = 2, merge_size = 2;
  int64_t min_pixels = 0, max_pixels = 0;  // smart_resize bounds
  ResizeVariant resize = ResizeVariant::kQwen2Vl;
  int64_t fixed_height = 0, fixed_width = 0;  // kFixed's size
  std::optional<VideoResize> video;            // smart_resize variants only; none: as images
  // How frames of another size reach the target: Pillow's filter (`resample`), and whose
  // arithmetic (resize.h) for images and for videos (transformers' video processors resize with
  // torchvision only). do_resize false: frames must come at a size the model takes.
  Resample resample = Resample::kBicubic;
  ResizeSemantics image_semantics = ResizeSemantics::kPil;
  ResizeSemantics video_semantics = ResizeSemantics::kTorch;
  bool do_resize = true;
  // kFixed: how an image becomes fixed_height x fixed_width. shortest_edge > 0 (CLIP, DINOv2): its
  // short side is resized to shortest_edge, the long side to int(shortest_edge * long / short);
  // otherwise to resize_height x resize_width (0: the fixed size itself). Then a centre crop to
  // the fixed size (none where the sizes agree), as transformers' center_crop does it.
  int64_t shortest_edge = 0, resize_height = 0, resize_width = 0;

  int64_t factor() const { return patch_size * merge_size; }  // smart_resize's frame sides are multiples of this
};

// The one rule for a stored preprocessing: sizes positive, patch_size == kernel h and w,
// temporal_patch_size == kernel t (1 for a Conv2d), one mean and std per input channel, every std
// non-zero and finite; 0 < min_pixels <= max_pixels for smart_resize (the video rule's too, a
// smart_resize variant, capped only with kGlm4v), a positive size for kFixed, whose merge and
// temporal sizes are 1. `where` prefixes the message.
Status check_preprocessing(const Preprocessing& p, const ConvGeometry& g, const std::string& where);

// transformers' smart_resize of the variant (kQwen2Vl or kGlm4v), with Python's round-half-to-even.
Result<std::pair<int64_t, int64_t>> smart_resize(const Preprocessing& p, int64_t height, int64_t width);

// The frame size Hugging Face resizes an image of height x width to, as (height, width): the
// variant's smart_resize, or the fixed size.
Result<std::pair<int64_t, int64_t>> resize_target(const Preprocessing& p, int64_t height, int64_t width);

// The same for each frame of a `frames`-frame video: the video rule's smart_resize (kGlm4v refuses
// fewer than temporal_patch_size frames, as transformers does), or the fixed size (each frame of a
// Conv2d model is one image).
Result<std::pair<int64_t, int64_t>> video_resize_target(const Preprocessing& p, int64_t frames, int64_t height,
                                                        int64_t width);

// The resize and crop that make the processor's pixels of a height x width source frame: a still
// image (frames = 0: the image rule and semantics) or each frame of a `frames`-frame video.
Result<ResizeSpec> frame_resize_spec(const Preprocessing& p, int64_t frames, size_t height, size_t width);

// image_grid_thw for `frames` frames of height x width. smart_resize variants: sides must be
// multiples of factor(); grid.t = ceil(frames / temporal_patch_size), an odd count repeating the
// last frame. kFixed (a Conv2d with padding "valid"): sides of at least patch_size, and like
// nn.Conv2d the grid drops the pixels past the last whole patch; each frame is one image.
struct FrameGrid {
  int64_t t = 0, h = 0, w = 0;
  int64_t rows() const { return t * h * w; }
};
Result<FrameGrid> frame_grid(const Preprocessing& p, size_t frames, size_t height, size_t width);

}  // namespace patchfuse
