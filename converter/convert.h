// `patchfuse-convert convert`: checkpoint -> verified .pfb.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "converter/geometry.h"
#include "runtime/core/dtype.h"
#include "runtime/frames/resize.h"
#include "runtime/rules/fusion_rules.h"

namespace patchfuse {

struct ConvertOptions {
  std::string input;
  std::string output;
  std::string config;           // empty: config.json beside the weights
  std::string preprocessor;     // empty: preprocessor_config.json beside config.json, if present
  std::string video_preprocessor;  // empty: video_preprocessor_config.json beside config.json, if present
  FusionConfig fusion;          // the user's entries; merged with the default
  std::optional<DType> dtype;   // nullopt: keep the checkpoint's dtype
  std::optional<GeometryOverride> geometry;
  // --resize / --video-resize: whose resize arithmetic frames of another size go through.
  // nullopt: pil for images; torch for videos where torch has the filter, else pil.
  std::optional<ResizeSemantics> image_resize, video_resize;
  // --strict: a build pipeline's conversion; every note that means a capability is missing (no
  // preprocessor config, a skipped candidate, a step's tensor or config value the checkpoint
  // lacks) is an error instead, and nothing is written.
  bool strict = false;
};

struct ConvertReport {
  std::vector<std::string> written;  // "visual.patch_embed: fused_linear [1280, 1176] BF16"
  std::vector<std::string> notes;    // skipped modules, lossy dtype conversions
  std::vector<std::string> gaps;     // the notes that mean a capability is missing (--strict refuses them)
};

// Writes options.output atomically, or nothing at all on failure.
Result<ConvertReport> convert_checkpoint(const ConvertOptions& options);

}  // namespace patchfuse
