// Header-only C++ layer over patchfuse.h: owning handles and exceptions-free results.
//
//   auto model = patchfuse::Model::open_file("qwen2-vl.pfb");
//   if (!model) { std::cerr << model.error() << "\n"; return 1; }
//   auto session = patchfuse::Session::create(*model, 0, patchfuse::default_options());
//   session->run(pixels, n, out);
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "patchfuse/patchfuse.h"

namespace patchfuse {

// A value or (status, message). Checked with operator bool, like std::optional.
template <class T>
class Expected {
 public:
  Expected(T value) : v_(std::move(value)) {}  // NOLINT
  Expected(pf_status status, std::string message) : v_(Failure{status, std::move(message)}) {}
  explicit operator bool() const { return v_.index() == 0; }
  T& operator*() { return std::get<0>(v_); }
  T* operator->() { return &std::get<0>(v_); }
  pf_status status() const { return *this ? PF_OK : std::get<1>(v_).status; }
  const std::string& error() const {
    static const std::string none;
    return *this ? none : std::get<1>(v_).message;
  }

 private:
  struct Failure {
    pf_status status;
    std::string message;
  };
  std::variant<T, Failure> v_;
};

struct ModelDeleter {
  void operator()(pf_model* m) const { pf_model_release(m); }
};
struct SessionDeleter {
  void operator()(pf_session* s) const { pf_session_release(s); }
};

inline pf_session_options default_options() {
  pf_session_options o;
  pf_session_options_init(&o);
  return o;
}

class Model {
 public:
  static Expected<Model> open_file(const std::string& path) {
    pf_model* m = nullptr;
    const pf_status s = pf_model_open_file(path.c_str(), &m);
    if (s != PF_OK) return {s, pf_last_error()};
    return Model(m);
  }
  // `data` must outlive the Model and every Session created from it.
  static Expected<Model> open_memory(const void* data, size_t size) {
    pf_model* m = nullptr;
    const pf_status s = pf_model_open_memory(data, size, &m);
    if (s != PF_OK) return {s, pf_last_error()};
    return Model(m);
  }
  size_t module_count() const {
    size_t n = 0;
    pf_model_module_count(handle_.get(), &n);
    return n;
  }
  pf_module_info module(size_t index) const {
    pf_module_info info{};
    pf_model_get_module(handle_.get(), index, &info);
    return info;
  }
  Expected<size_t> find_module(const std::string& path) const {
    size_t index = 0;
    const pf_status s = pf_model_find_module(handle_.get(), path.c_str(), &index);
    if (s != PF_OK) return {s, pf_last_error()};
    return index;
  }
  // The size Hugging Face resizes a height x width image to, as {height, width}.
  Expected<std::pair<int64_t, int64_t>> frame_size(size_t module_index, int64_t height, int64_t width) const {
    int64_t h = 0, w = 0;
    const pf_status s = pf_model_frame_size(handle_.get(), module_index, height, width, &h, &w);
    if (s != PF_OK) return {s, pf_last_error()};
    return std::make_pair(h, w);
  }
  // The same for each frame of a `frames`-frame video.
  Expected<std::pair<int64_t, int64_t>> video_frame_size(size_t module_index, size_t frames, int64_t height,
                                                         int64_t width) const {
    int64_t h = 0, w = 0;
    const pf_status s = pf_model_video_frame_size(handle_.get(), module_index, frames, height, width, &h, &w);
    if (s != PF_OK) return {s, pf_last_error()};
    return std::make_pair(h, w);
  }
  const pf_model* get() const { return handle_.get(); }

 private:
  explicit Model(pf_model* m) : handle_(m) {}
  std::unique_ptr<pf_model, ModelDeleter> handle_;
};

class Session {
 public:
  // `model` must outlive the Session.
  static Expected<Session> create(const Model& model, size_t module_index, const pf_session_options& options) {
    pf_session* s = nullptr;
    const pf_status st = pf_session_create(model.get(), module_index, &options, &s);
    if (st != PF_OK) return {st, pf_last_error()};
    return Session(s);
  }
  // Returns "" on success, else the error message.
  std::string run(const float* input, size_t n, float* output) {
    return pf_session_run(handle_.get(), input, n, output) == PF_OK ? std::string() : std::string(pf_last_error());
  }
  // Everything the first run of this input size does once, done now (pf_session_prepare); "" on
  // success, else the error message.
  std::string prepare(const pf_input_shape& shape) {
    return pf_session_prepare(handle_.get(), &shape) == PF_OK ? std::string() : std::string(pf_last_error());
  }
  // pixel_values rows of `grid` into the session's output stage (pf_session_run_grid); "" on
  // success, else the error message.
  std::string run_grid(const float* input, const pf_grid& grid, float* output) {
    return pf_session_run_grid(handle_.get(), input, &grid, output) == PF_OK ? std::string() : std::string(pf_last_error());
  }
  Expected<int64_t> output_rows(const pf_grid& grid) const {
    int64_t rows = 0;
    const pf_status s = pf_session_output_rows(handle_.get(), &grid, &rows);
    if (s != PF_OK) return {s, pf_last_error()};
    return rows;
  }
  // Qwen2.5-VL's window order for `grid` (pf_session_window_index).
  struct WindowOrder {
    std::vector<int64_t> window_index, reverse_index, cu_window_seqlens;
  };
  Expected<WindowOrder> window_order(const pf_grid& grid) const {
    size_t groups = 0, bounds = 0;
    pf_status s = pf_session_window_index(handle_.get(), &grid, nullptr, nullptr, 0, nullptr, 0, &groups, &bounds);
    if (s != PF_OK) return {s, pf_last_error()};
    WindowOrder o{std::vector<int64_t>(groups), std::vector<int64_t>(groups), std::vector<int64_t>(bounds)};
    s = pf_session_window_index(handle_.get(), &grid, o.window_index.data(), o.reverse_index.data(), groups,
                                o.cu_window_seqlens.data(), bounds, &groups, &bounds);
    if (s != PF_OK) return {s, pf_last_error()};
    return o;
  }
  // What the vision encoder's blocks take for `grid` besides the hidden states
  // (pf_session_block_input_count / _info), and one of them written into `buffer`
  // (pf_session_block_input): "" on success, else the error message.
  Expected<std::vector<pf_block_input_info>> block_inputs(const pf_grid& grid) const {
    size_t count = 0;
    pf_status s = pf_session_block_input_count(handle_.get(), &grid, &count);
    if (s != PF_OK) return {s, pf_last_error()};
    std::vector<pf_block_input_info> infos(count);
    for (size_t i = 0; i < count; ++i) {
      s = pf_session_block_input_info(handle_.get(), &grid, i, &infos[i]);
      if (s != PF_OK) return {s, pf_last_error()};
    }
    return infos;
  }
  std::string block_input(const char* name, const pf_grid& grid, void* buffer, size_t buffer_bytes) {
    return pf_session_block_input(handle_.get(), name, &grid, buffer, buffer_bytes) == PF_OK ? std::string()
                                                                                           : std::string(pf_last_error());
  }
  Expected<pf_block_schedule> block_schedule() const {
    pf_block_schedule b{};
    const pf_status s = pf_session_block_schedule(handle_.get(), &b);
    if (s != PF_OK) return {s, pf_last_error()};
    return b;
  }
  Expected<pf_grid> frames_grid(size_t t, size_t height, size_t width) const {
    pf_grid g{};
    const pf_status s = pf_session_frames_grid(handle_.get(), t, height, width, &g);
    if (s != PF_OK) return {s, pf_last_error()};
    return g;
  }
  // Returns "" on success, else the error message.
  std::string run_frames(const uint8_t* const* frames, size_t t, size_t height, size_t width, size_t row_stride_bytes,
                         float* output, pf_grid* grid = nullptr) {
    return pf_session_run_frames(handle_.get(), frames, t, height, width, row_stride_bytes, output, grid) == PF_OK
               ? std::string()
               : std::string(pf_last_error());
  }
  Expected<pf_grid> images_grid(size_t t, int64_t height, int64_t width) const {
    pf_grid g{};
    const pf_status s = pf_session_images_grid(handle_.get(), t, height, width, &g);
    if (s != PF_OK) return {s, pf_last_error()};
    return g;
  }
  // Any image in (pf_session_run_image / pf_session_run_video); "" on success, else the error.
  std::string run_image(const pf_image& image, float* output, pf_grid* grid = nullptr) {
    return pf_session_run_image(handle_.get(), &image, output, grid) == PF_OK ? std::string() : std::string(pf_last_error());
  }
  std::string run_video(const pf_image* frames, size_t t, float* output, pf_grid* grid = nullptr) {
    return pf_session_run_video(handle_.get(), frames, t, output, grid) == PF_OK ? std::string()
                                                                               : std::string(pf_last_error());
  }
  // The processor's RGB frame for `image` (pf_session_preprocess), HWC; its size in `height`, `width`.
  Expected<std::vector<uint8_t>> preprocess(const pf_image& image, size_t t, int64_t* height, int64_t* width) {
    int64_t h = 0, w = 0;
    pf_status s = pf_session_preprocess(handle_.get(), &image, t, nullptr, 0, &h, &w);  // asks the size
    if (s != PF_OK && h * w == 0) return {s, pf_last_error()};
    std::vector<uint8_t> rgb(static_cast<size_t>(h * w * 3));
    s = pf_session_preprocess(handle_.get(), &image, t, rgb.data(), rgb.size(), &h, &w);
    if (s != PF_OK) return {s, pf_last_error()};
    if (height != nullptr) *height = h;
    if (width != nullptr) *width = w;
    return rgb;
  }
  pf_session_info info() const {
    pf_session_info i{};
    pf_session_get_info(handle_.get(), &i);
    return i;
  }
  pf_run_profile last_profile() const {
    pf_run_profile p{};
    pf_session_last_profile(handle_.get(), &p);
    return p;
  }
  pf_session* get() const { return handle_.get(); }

 private:
  explicit Session(pf_session* s) : handle_(s) {}
  std::unique_ptr<pf_session, SessionDeleter> handle_;
};

}  // namespace patchfuse
