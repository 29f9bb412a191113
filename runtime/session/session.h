// A session: one module, one backend, one precision, one path. Each input path's weights (pixel_values
// rows, a still image's, a video's) are packed once: the path a model is there for at creation
// (its still image when it has preprocessing, else its rows), the others on first use.
// This is where the options are resolved (auto backend, auto precision) and checked against the
// fusion rules; the backends only build and run kernels.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "runtime/backends/backend.h"
#include "runtime/encoder_input/block_inputs.h"
#include "runtime/encoder_input/encoder_input.h"
#include "runtime/frames/pixel_formats.h"
#include "runtime/frames/preprocessing.h"
#include "runtime/frames/resize.h"
#include "runtime/frames/weight_transforms.h"
#include "runtime/session/chunking.h"
#include "runtime/session/recently_used.h"
#include "runtime/session/timed.h"
#include "runtime/session/weights_cache.h"

namespace patchfuse {

// Where the last run spent its time, wall clock on the calling thread (the session's threads
// included), in milliseconds; 0 for a stage it did not have.
struct RunProfile {
  double preprocess_ms = 0;  // pixel format conversion, resize and crop (images)
  double gather_ms = 0;      // patch rows from frames, in the kernel's input type
  double kernel_ms = 0;      // the projection
  double encoder_input_ms = 0;  // the encoder input's epilogue
  // One-time work, outside the stages above: a path's kernel (folded, packed), resize tables, a
  // chunk size's plan, buffer growth, a new grid's terms. Exactly 0 when the size was prepared.
  double setup_ms = 0;
};

// What a run writes: the patch embedding (the conv's output), or the vision encoder's input (the
// first block's input in Hugging Face's row order: runtime/encoder_input/).
enum class OutputStage : uint8_t { kPatches = 0, kEncoderInput = 1 };
const char* output_stage_name(OutputStage s);  // "patches", "encoder-input"

struct SessionOptions {
  std::optional<BackendId> backend;      // nullopt: auto
  int threads = 1;
  std::optional<Precision> precision;    // nullopt: auto
  bool fused = true;
  OutputStage output_stage = OutputStage::kPatches;
  std::string weights_cache;             // "": none (runtime/session/weights_cache.h)
};

class Session {
 public:
  // `module` must outlive the session.
  static Result<std::unique_ptr<Session>> create(const ModuleView& module, const SessionOptions& options);

  // Checks the arguments, then runs the kernel. Not thread-safe: one thread at a time. int8
  // sessions refuse it: float inputs would need lossy quantization (they take frames only).
  // Patches only: encoder-input sessions need the grid (run_grid).
  Status run(const float* input, size_t n, float* output);
  // pixel_values rows of `grid` (t * h * w rows in the processor's order) into output_rows(grid)
  // rows of the session's output stage.
  Status run_grid(const float* input, const FrameGrid& grid, float* output);
  // Output rows for a grid: t * h * w, plus a class row per image for encoder-input sessions of
  // models with one. Checks the grid against the model (merge blocks) for encoder-input sessions.
  Result<int64_t> output_rows(const FrameGrid& grid) const;
  // Qwen2.5-VL's window_index, its reverse and cu_window_seqlens for `grid`; their sizes alone.
  Result<WindowOrder> window_order(const FrameGrid& grid) const;
  Result<WindowCounts> window_counts(const FrameGrid& grid) const;
  // What the blocks take for `grid` besides the hidden states (encoder_input/block_inputs.h), in
  // the encoder input's row order; any output stage answers. The float tables are made once per
  // grid (prepare makes them for encoder-input sessions) and kept for a few recent grids.
  Result<std::vector<BlockInputDesc>> block_inputs(const FrameGrid& grid) const;
  Status block_input(const std::string& name, const FrameGrid& grid, void* out, size_t capacity);

  // The frames path: uint8 RGB frames through the model's preprocessing, folded into the weights.
  // A still image (t = 1) uses the weights summed over time (K = C*P*P), a video the full K.
  // Each of the two weight sets is folded and packed once, on its first use. int8 sessions
  // quantize the folded weights (quantize_int8) and feed the kernel the pixels themselves.
  Result<FrameGrid> frames_grid(size_t t, size_t height, size_t width) const;
  Status run_frames(const uint8_t* const* frames, size_t t, size_t height, size_t width, size_t row_stride,
                    float* output, FrameGrid* grid);

  // Any image in: t images of one size and pixel format (a still image, or a video's frames),
  // each resized and cropped exactly as the processor does (frame_resize_spec: the image rule and
  // semantics for t = 1, the video's otherwise) on the kernel's threads, then the frames path.
  // Scratch: a band of temporal_patch_size resized frames (one for a still image: the rows a chunk
  // gathers) and a few filter rows per thread, kept for the next run.
  Result<FrameGrid> images_grid(size_t t, size_t height, size_t width) const;
  Status run_images(const ImageView* images, size_t t, float* output, FrameGrid* grid);
  // The processor's uint8 RGB pixels of `image` (a still image for t = 1, else one frame of a
  // t-frame video): *height x *width x 3 bytes into `out`, which holds `capacity` bytes.
  Status preprocess(const ImageView& image, size_t t, uint8_t* out, size_t capacity, size_t* height, size_t* width);

  // Does ahead of time everything the first run of this size would do once (resize tables, the
  // folded and packed weights of its path, the kernel's plans for its chunk sizes, buffers and
  // their first touch, the encoder input's grid terms), without running, so the next run of the
  // size runs at steady speed. pixel_values rows of `grid`; t frames of height x width (RGB); t
  // images of height x width in `format`.
  Status prepare_rows(const FrameGrid& grid);
  Status prepare_frames(size_t t, size_t height, size_t width);
  Status prepare_images(PixelFormat format, size_t t, size_t height, size_t width);

  const Backend& backend() const { return *backend_; }
  Precision precision() const { return precision_; }
  bool fused() const { return fused_; }
  int threads() const { return main_kernel().threads(); }
  const std::string& detail() const { return detail_; }
  const std::string& isa() const { return isa_; }
  // The frames path's own loops as this CPU runs them: "resize avx2, planes avx2, gather avx2"
  // (frames/kernels/kernels.h); "" for a model without preprocessing.
  const std::string& frame_kernels() const { return frame_kernels_; }
  const std::string& note() const { return note_; }
  const std::string& weights_cache_report() const { return cache_report_; }  // a line per kernel; "" without a cache
  const RunProfile& last_profile() const { return profile_; }
  OutputStage output_stage() const { return encoder_ ? OutputStage::kEncoderInput : OutputStage::kPatches; }

 private:
  Session() = default;
  // Folded weights viewed as a fused module of kernel (1 or T, P, P), and the kernel packed from it.
  struct FramesKernel {
    int64_t k = 0;      // row length: C*P*P (still image) or C*T*P*P (video)
    // Values from one row's start to the next in the rows the kernel takes: k, and the zeros of its
    // row_padding (bf16 rows).
    int64_t pitch() const { return k + static_cast<int64_t>(kernel->row_padding()); }
    Int8Weights int8;   // int8 sessions only: the kernel reads it
    std::unique_ptr<Kernel> kernel;
  };
  // A kernel is made from the weights cache's entry when one verifies and fits, else derived and
  // packed, and then stored in the cache (when the session has one).
  Result<FramesKernel*> frames_kernel(bool still);
  Result<Kernel*> rows_kernel();  // the pixel_values kernel, packed on first use
  bool frames_kernel_from(FramesKernel& k, ModuleView& v, const std::vector<CacheBlob>& blobs);  // false: does not fit
  std::string cache_scope() const;
  void report_cache(const std::string& kind, const std::string& what);
  // Stores `blobs` and the kernel's packed weights (when it exports them) as `kind`.
  void store_in_cache(const std::string& kind, const std::string& why_missing, std::vector<CacheBlob> blobs,
                      const Kernel& kernel);
  // The kernel's plan for n rows, made on its first use and timed as setup.
  Status ensure_prepared(Kernel& kernel, size_t n);
  // The rows one kernel call may take: at most 2^31 - 1. Checked on the 64-bit count, before any
  // cast to size_t (32 bits on armhf).
  static Status check_call_rows(uint64_t n);
  Result<FramesKernel*> make_frames_kernel(bool still);
  Result<Kernel*> make_rows_kernel();
  // A run's chunk loops serve pf_session_prepare too: kPrepare does each chunk size's one-time
  // work (prepare_chunk) instead of gathering and running, so both see the same chunk sizes.
  enum class Pass { kRun, kPrepare };
  // A chunk's one-time work, in both passes: the kernel's plan for n rows, the grid terms, the
  // window buffer; each timed as setup when it is new.
  Status prepare_chunk(Kernel& kernel, const FrameGrid& grid, size_t n);
  // Grows `buffer` to `size` elements (first touching them), timed as setup; never shrinks it.
  template <class V>
  void grow(V& buffer, size_t size);
  // Encoder-input pixel_values rows of `grid`, a chunk at a time (input and output unused in kPrepare).
  Status grid_chunks(const float* input, const FrameGrid& grid, float* output, Pass pass);
  // Starts the kernel's thread pool (OpenMP starts its threads on the first parallel region).
  static void start_threads(Kernel& kernel);
  // Gathers the rows for `grid` in the kernel's input type and runs the kernel on them, a chunk at
  // a time (Chunking): `gather(block_begin, block_end, rows)` fills the rows of those blocks (all
  // of one time step) on the kernel's threads.
  // Runs `run(out)` for rows [first, first + n) of frame `t` of `grid`, where `out` is where the
  // kernel writes them: the output itself, or (window order) a scratch chunk; then the encoder
  // input's epilogue on `kernel`'s threads.
  template <class Run>
  Status run_and_finish(Kernel& kernel, const FrameGrid& grid, int64_t t, int64_t first, size_t n, float* output,
                        const Run& run);
  // The grid terms of an h x w frame, made on first use and kept for a few recent grids.
  Result<const GridTerms*> grid_terms(int64_t h, int64_t w);
  // The block inputs' float tables of an h x w frame, likewise.
  Result<const BlockTables*> block_tables(int64_t h, int64_t w);
  // The checks of output_rows, and (encoder-input sessions) the grid's block tables: what every
  // prepare does for its grid besides the chunks' work.
  Status prepare_grid(const FrameGrid& grid);
  // The dtype the model runs in, as transformers would load it (the session's precision; f32 for int8).
  DType model_dtype() const;
  template <class Gather>
  Status gather_and_run(FramesKernel& k, const FrameGrid& grid, float* output, const Gather& gather, Pass pass);
  // Gathers blocks [begin, end) of `grid` from `frames` into `rows` (block `begin` first), one
  // contiguous range per thread.
  template <class T>
  void gather_on_threads(FramesKernel& k, const uint8_t* const* frames, size_t t, size_t row_stride,
                         size_t first_row, const FrameGrid& grid, int64_t begin, int64_t end, T* rows);
  // The resize for t images of height x width, made on first use and kept for a few recent sizes.
  Result<const Resizer*> resizer(size_t t, size_t height, size_t width);
  // Resizes rows [row_begin, row_end) of `image`'s resized frame into `out` (row row_begin first,
  // out_w * 3 bytes a row) on `kernel`'s threads.
  void resize_on_threads(Kernel& kernel, const Resizer& r, const ImageView& image, size_t row_begin, size_t row_end,
                         uint8_t* out);
  // Sizes the resize's per-thread scratch for `image` and `frames` buffers of `rows` resized rows;
  // returns the number of threads the resize runs on.
  size_t size_resize_buffers(const Kernel& kernel, const Resizer& r, const ImageView& image, size_t frames, size_t rows);
  // A frame's gather blocks in chunks (of rows in the kernel's input type), and the image rows
  // the largest chunk covers (the band a chunk resizes).
  size_t row_value_bytes(const FramesKernel& k) const;
  Chunking frame_chunks(const FramesKernel& k, const FrameGrid& grid) const;
  size_t band_rows(const FramesKernel& k, const FrameGrid& grid) const;
  size_t resized_frames(size_t t) const;  // frames of t images resized at a time: temporal_patch_size, 1 for a still image
  Result<std::unique_ptr<Kernel>> create_kernel(const ModuleView& module, const Int8Weights* int8 = nullptr,
                                                const CacheBlob* packed = nullptr, const FoldedRows* folded = nullptr) const;
  // The kernel packed at creation: the still image's, or the pixel_values rows' for a model without preprocessing.
  const Kernel& main_kernel() const { return still_ ? *still_->kernel : *kernel_; }
  Kernel& main_kernel() { return still_ ? *still_->kernel : *kernel_; }
  int threads_ = 1;
  // Declared before the kernels, so it outlives them: their weights may point into its mappings.
  std::optional<WeightsCache> cache_;
  std::string cache_report_;
  std::vector<std::pair<const Kernel*, size_t>> prepared_;  // (kernel, rows) plans made
  std::unique_ptr<FramesKernel> still_, video_;
  std::vector<float> rows_;          // a chunk of gathered rows, reused across runs (f32 kernels)
  std::vector<uint16_t> rows_bf16_;  // the same for kernels that take bf16 rows
  std::vector<uint8_t> rows_u8_;     // and for int8 kernels
  RecentlyUsed<Resizer> resizers_;  // the resize of a few recent image sizes
  std::vector<std::vector<uint8_t>> resized_;  // a band of each resized frame (temporal_patch_size at most)
  std::vector<std::vector<uint8_t>> resize_scratch_;  // per thread
  // The module as backends and the frames code see it: a Conv2d's geometry as_conv3d(), the same
  // bytes otherwise. Views point into the model, which outlives the session.
  ModuleView module_;
  const Backend* backend_ = nullptr;
  Precision precision_ = Precision::kF32;
  bool fused_ = true;
  std::unique_ptr<Kernel> kernel_;  // pixel_values, once used; never in int8 sessions
  std::string detail_, isa_, note_, frame_kernels_;
  // The frames path's kernel forms, taken from the table once for the process's SIMD level.
  const FrameKernels* forms_ = &best_frame_kernels();
  RunProfile profile_;  // the last run's; each run starts it from zero
  const EncoderInputSpec* encoder_ = nullptr;  // encoder-input sessions: the model's spec
  RecentlyUsed<GridTerms> terms_;
  RecentlyUsed<BlockTables> block_tables_;
  std::vector<float> window_rows_;  // window order: a chunk of kernel rows before they go to their slots
};

template <class V>
void Session::grow(V& buffer, size_t size) {
  if (buffer.size() < size) timed(profile_.setup_ms, [&] { buffer.resize(size); });
}

}  // namespace patchfuse
