// The command-line spellings of backends, precisions, pixel formats and colour matrices, shared by patchfuse-run and
// patchfuse-bench so both accept and print the same words.
#pragma once

#include <charconv>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "patchfuse/patchfuse.h"

namespace patchfuse {

inline const std::map<std::string, pf_backend>& backend_names() {
  static const std::map<std::string, pf_backend> m = {
      {"auto", PF_BACKEND_AUTO}, {"reference", PF_BACKEND_REFERENCE}, {"onednn", PF_BACKEND_ONEDNN}, {"xnnpack", PF_BACKEND_XNNPACK},
      {"gemmlowp", PF_BACKEND_GEMMLOWP}};
  return m;
}

inline const std::map<std::string, pf_precision>& precision_names() {
  static const std::map<std::string, pf_precision> m = {
      {"auto", PF_PRECISION_AUTO}, {"f32", PF_PRECISION_F32}, {"bf16", PF_PRECISION_BF16}, {"f16", PF_PRECISION_F16},
      {"int8", PF_PRECISION_INT8}};
  return m;
}

inline const std::map<std::string, pf_pixel_format>& pixel_format_names() {
  static const std::map<std::string, pf_pixel_format> m = {
      {"rgb", PF_PIXEL_RGB},   {"bgr", PF_PIXEL_BGR},   {"rgba", PF_PIXEL_RGBA}, {"bgra", PF_PIXEL_BGRA}, {"gray8", PF_PIXEL_GRAY8},
      {"nv12", PF_PIXEL_NV12}, {"nv21", PF_PIXEL_NV21}, {"i420", PF_PIXEL_I420}, {"yuyv", PF_PIXEL_YUYV}};
  return m;
}

inline const std::map<std::string, pf_color_matrix>& color_matrix_names() {
  static const std::map<std::string, pf_color_matrix> m = {
      {"bt601_full", PF_COLOR_BT601_FULL}, {"bt601_limited", PF_COLOR_BT601_LIMITED}, {"bt709_limited", PF_COLOR_BT709_LIMITED}};
  return m;
}

inline const std::map<std::string, pf_output_stage>& output_stage_names() {
  static const std::map<std::string, pf_output_stage> m = {{"patches", PF_OUTPUT_PATCHES},
                                                           {"encoder-input", PF_OUTPUT_ENCODER_INPUT}};
  return m;
}

// Parses `n` positive integers joined by 'x' into `out`; false on anything else, a sign or a value
// past INT64_MAX included (sscanf's %llu took "4x-2" as 4 by 2^64 - 2).
inline bool parse_dims(const std::string& text, size_t n, int64_t* out) {
  const char* p = text.data();
  const char* const end = p + text.size();
  for (size_t i = 0; i < n; ++i) {
    if (i > 0 && (p == end || *p++ != 'x')) return false;
    const auto [next, ec] = std::from_chars(p, end, out[i]);
    if (ec != std::errc() || out[i] <= 0) return false;
    p = next;
  }
  return p == end;
}

// Parses an image size "WxH" (width first, as camera and video tools write it: 1280x720) into
// `width` and `height`; false when it is not two positive integers. Every tool's sizes use it.
inline bool parse_size(const std::string& text, size_t& width, size_t& height) {
  int64_t wh[2];
  if (!parse_dims(text, 2, wh)) return false;
  width = static_cast<size_t>(wh[0]);
  height = static_cast<size_t>(wh[1]);
  return true;
}

// Parses "TxHxW" (image_grid_thw) into `grid`; false when it is not three positive integers.
inline bool parse_grid(const std::string& text, pf_grid& grid) {
  int64_t thw[3];
  if (!parse_dims(text, 3, thw)) return false;
  grid = pf_grid{thw[0], thw[1], thw[2]};
  return true;
}

// What pf_session_prepare needs for a run on `views` (a still image or a video's frames, one
// size and format), or, with no views, on pixel_values rows of `grid`.
inline pf_input_shape input_shape(const std::vector<pf_image>& views, const pf_grid& grid) {
  pf_input_shape s{};
  if (views.empty()) {
    s.kind = PF_INPUT_PIXEL_VALUES;
    s.grid = grid;
    return s;
  }
  s.kind = PF_INPUT_IMAGES;
  s.t = views.size();
  s.height = views[0].height;
  s.width = views[0].width;
  s.format = views[0].format;
  return s;
}

inline const char* precision_text(pf_precision p) {
  for (const auto& [name, value] : precision_names()) {
    if (value == p) return name.c_str();
  }
  return "?";
}

// For CLI11's IsMember check.
template <class T>
std::vector<std::string> keys_of(const std::map<std::string, T>& m) {
  std::vector<std::string> k;
  for (const auto& [name, value] : m) k.push_back(name);
  return k;
}

}  // namespace patchfuse
