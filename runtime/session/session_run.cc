// Session, the run paths: chunk loops over gather and kernel, the threaded stages (resize,
// gather, epilogue), and the prepare passes that walk the same loops.
#include "runtime/session/session.h"

#include <algorithm>
#include <new>

#include "runtime/frames/gather.h"
#include "runtime/session/timed.h"

namespace patchfuse {

template <class T>
void Session::gather_on_threads(FramesKernel& k, const uint8_t* const* frames, size_t t, size_t row_stride,
                                size_t first_row, const FrameGrid& grid, int64_t begin, int64_t end, T* rows) {
  // One contiguous range of blocks per thread, so each gather call sets up its row planes once.
  const Preprocessing& p = *module_.preprocessing;
  const int64_t parts = std::min<int64_t>(end - begin, k.kernel->threads());
  const bool still = t == 1;
  const int64_t values_per_block = grid.rows() / gather_block_count(grid, p) * k.pitch();
  timed(profile_.gather_ms, [&] {
    k.kernel->parallelize(static_cast<size_t>(parts), [&](size_t i) {
      const auto part = static_cast<int64_t>(i);
      const int64_t first = begin + (end - begin) * part / parts;
      gather_rows(frames, t, row_stride, first_row, grid, p, module_.geometry.in_channels, still, first,
                  begin + (end - begin) * (part + 1) / parts, rows + (first - begin) * values_per_block, *forms_,
                  static_cast<size_t>(k.pitch()));
    });
  });
}

template <class Run>
Status Session::run_and_finish(Kernel& kernel, const FrameGrid& g, int64_t t, int64_t first, size_t n, float* output,
                               const Run& run) {
  const auto embed = static_cast<size_t>(module_.geometry.embed_dim);
  if (!encoder_) {
    return timed(profile_.kernel_ms, [&] { return run(output + static_cast<size_t>(t * g.h * g.w + first) * embed); });
  }
  PF_ASSIGN_OR_RETURN(const GridTerms* terms, grid_terms(g.h, g.w));
  float* frame_out = output + static_cast<size_t>(t * frame_rows(*encoder_, g.h, g.w)) * embed;
  float* rows = frame_out + static_cast<size_t>(encoder_->class_rows() + first) * embed;
  if (!terms->slot.empty()) rows = window_rows_.data();  // sized by prepare_chunk
  PF_RETURN_IF_ERROR(timed(profile_.kernel_ms, [&] { return run(rows); }));
  const size_t parts = std::min<size_t>(n, static_cast<size_t>(kernel.threads()));
  timed(profile_.encoder_input_ms, [&] {
    kernel.parallelize(parts, [&](size_t i) {
      const size_t begin = n * i / parts, end = n * (i + 1) / parts;
      finish_rows(*encoder_, *terms, first + static_cast<int64_t>(begin), static_cast<int64_t>(end - begin),
                  rows + begin * embed, frame_out);
    });
  });
  return {};
}

template <class Gather>
Status Session::gather_and_run(FramesKernel& k, const FrameGrid& g, float* output, const Gather& gather, Pass pass) {
  // Rows in the kernel's own input type: a bf16 kernel gets bf16 rows, with no f32 pass between.
  const int64_t blocks = gather_block_count(g, *module_.preprocessing), blocks_per_t = blocks / g.t;
  const auto rows_per_block = static_cast<size_t>(g.rows() / blocks), row_values = static_cast<size_t>(k.pitch());
  // A whole frame in one call where the kernel runs it faster so, but not into a window order's
  // scratch, which would then hold a frame's output (1280x720: 24.5 MB, and 1.2x slower with it).
  const bool whole = k.kernel->whole_frame_calls() && !(encoder_ != nullptr && encoder_->window_size > 0);
  const size_t multiple = whole ? static_cast<size_t>(blocks_per_t) * rows_per_block : k.kernel->row_multiple();
  const auto chunks = [&](auto& buffer, const auto& run) -> Status {
    const Chunking c = frame_chunks(k, g);
    grow(buffer, frame_call_rows(c, rows_per_block, multiple) * row_values);
    for (int64_t gt = 0; gt < g.t; ++gt) {
      const int64_t at = gt * blocks_per_t;  // frame gt's first block
      const auto frame_gather = [&](int64_t b, int64_t e, auto* rows) { gather(at + b, at + e, rows); };
      const auto call = [&](size_t first, size_t n, const auto* rows) -> Status {
        PF_RETURN_IF_ERROR(prepare_chunk(*k.kernel, g, n));
        if (rows == nullptr) return {};  // the prepare pass
        return run_and_finish(*k.kernel, g, gt, static_cast<int64_t>(first), n, output,
                              [&](float* out) { return run(rows, n, out); });
      };
      auto* rows = pass == Pass::kRun ? buffer.data() : nullptr;
      PF_RETURN_IF_ERROR(frame_calls(c, rows_per_block, multiple, rows, row_values, frame_gather, call));
    }
    return {};
  };
  if (precision_ == Precision::kInt8) {
    return chunks(rows_u8_, [&](const uint8_t* r, size_t n, float* out) { return k.kernel->run_u8(r, n, out); });
  }
  if (k.kernel->takes_bf16()) {
    return chunks(rows_bf16_, [&](const uint16_t* r, size_t n, float* out) { return k.kernel->run_bf16(r, n, out); });
  }
  return chunks(rows_, [&](const float* r, size_t n, float* out) { return k.kernel->run(r, n, out); });
}

Status Session::run_frames(const uint8_t* const* frames, size_t t, size_t height, size_t width, size_t row_stride,
                           float* output, FrameGrid* grid) {
  PF_CHECK(frames != nullptr && output != nullptr, Code::kInvalidArgument, "run_frames: frames and output must not be null");
  PF_ASSIGN_OR_RETURN(const FrameGrid g, frames_grid(t, height, width));
  const auto channels = static_cast<size_t>(module_.geometry.in_channels);
  PF_CHECK(row_stride >= width * channels, Code::kInvalidArgument, "run_frames: row_stride_bytes ", row_stride,
           " is less than width * channels = ", width * channels);
  for (size_t f = 0; f < t; ++f) PF_CHECK(frames[f] != nullptr, Code::kInvalidArgument, "run_frames: frame ", f, " is null");
  profile_ = {};
  try {
    PF_ASSIGN_OR_RETURN(FramesKernel * k, frames_kernel(t == 1));
    PF_RETURN_IF_ERROR(gather_and_run(*k, g, output, [&](int64_t begin, int64_t end, auto* rows) {
      gather_on_threads(*k, frames, t, row_stride, 0, g, begin, end, rows);
    }, Pass::kRun));
  } catch (const std::bad_alloc&) {
    return make_error(Code::kOutOfMemory, cat("run_frames: out of memory for ", t, " frames of ", height, "x", width));
  }
  if (grid != nullptr) *grid = g;
  return {};
}

void Session::resize_on_threads(Kernel& kernel, const Resizer& r, const ImageView& image, size_t row_begin, size_t row_end,
                                uint8_t* out) {
  const size_t rows = row_end - row_begin, row_bytes = r.spec().out_w * 3;
  const size_t parts = std::min(size_resize_buffers(kernel, r, image, 0, 0), rows);
  timed(profile_.preprocess_ms, [&] {
    kernel.parallelize(parts, [&](size_t i) {
      const size_t begin = rows * i / parts;
      r.run(image, row_begin + begin, row_begin + rows * (i + 1) / parts, resize_scratch_[i].data(), out + begin * row_bytes);
    });
  });
}

Status Session::run_images(const ImageView* images, size_t t, float* output, FrameGrid* grid) {
  PF_CHECK(images != nullptr && output != nullptr, Code::kInvalidArgument, "run_images: images and output must not be null");
  PF_CHECK(t >= 1, Code::kInvalidArgument, "run_images: t = 0; at least one image is needed");
  for (size_t f = 0; f < t; ++f) {
    PF_RETURN_IF_ERROR(check_image(images[f], f == 0 ? "run_images: image 0" : cat("run_images: image ", f).c_str()));
    PF_CHECK(images[f].width == images[0].width && images[f].height == images[0].height &&
                 images[f].format == images[0].format,
             Code::kInvalidArgument, "run_images: image ", f, " is ", images[f].width, "x", images[f].height, " ",
             pixel_format_name(images[f].format), " but image 0 is ", images[0].width, "x", images[0].height, " ",
             pixel_format_name(images[0].format), "; a video's frames share one size and format");
  }
  profile_ = {};
  try {
    PF_ASSIGN_OR_RETURN(const Resizer* r, resizer(t, images[0].height, images[0].width));
    const ResizeSpec& spec = r->spec();
    PF_ASSIGN_OR_RETURN(const FrameGrid g, frames_grid(t, spec.out_h, spec.out_w));
    PF_ASSIGN_OR_RETURN(FramesKernel * k, frames_kernel(t == 1));
    // A chunk's blocks are rows of merge groups of one time step, which read only the band of
    // image rows they cover in that step's temporal_patch_size frames: each chunk resizes just
    // that band of each frame into band-sized buffers and gathers from them. A whole resized 720p
    // frame was 2.8 MB of fresh pages to a cold session; a band is about a third of it.
    const Preprocessing& p = *module_.preprocessing;
    const size_t tps = resized_frames(t);
    size_resize_buffers(*k->kernel, *r, images[0], tps, band_rows(*k, g));
    std::vector<const uint8_t*> frames(t, nullptr);
    const int64_t blocks_per_t = gather_block_count(g, p) / g.t;
    const auto block_rows = static_cast<size_t>(p.merge_size * p.patch_size);
    PF_RETURN_IF_ERROR(gather_and_run(*k, g, output, [&](int64_t begin, int64_t end, auto* rows) {
      const int64_t gt = begin / blocks_per_t;  // a chunk's blocks are of one time step
      const size_t y0 = static_cast<size_t>(begin - gt * blocks_per_t) * block_rows;
      const size_t y1 = static_cast<size_t>(end - gt * blocks_per_t) * block_rows;
      std::fill(frames.begin(), frames.end(), nullptr);
      for (size_t i = 0; i < tps; ++i) {
        const size_t f = std::min(static_cast<size_t>(gt) * tps + i, t - 1);  // an odd count repeats the last
        if (frames[f] != nullptr) continue;
        resize_on_threads(*k->kernel, *r, images[f], y0, y1, resized_[i].data());
        frames[f] = resized_[i].data();
      }
      gather_on_threads(*k, frames.data(), t, spec.out_w * 3, y0, g, begin, end, rows);
    }, Pass::kRun));
    if (grid != nullptr) *grid = g;
  } catch (const std::bad_alloc&) {
    return make_error(Code::kOutOfMemory, cat("run_images: out of memory for ", t, " images of ", images[0].width, "x",
                                              images[0].height));
  }
  return {};
}

Status Session::grid_chunks(const float* input, const FrameGrid& g, float* output, Pass pass) {
  PF_ASSIGN_OR_RETURN(Kernel * kernel, rows_kernel());
  const auto k = static_cast<size_t>(module_.patch_volume);
  const auto rows_per_frame = static_cast<size_t>(g.h * g.w);
  // Chunks (Chunking, of 1 MiB whatever the threads: chunking.h says why) of input rows, so the
  // epilogue finds the kernel's output rows in cache; whole merge windows, so window slots stay
  // within a frame.
  const auto block = static_cast<size_t>(encoder_->merge_size * encoder_->merge_size);
  const Chunking c = chunking(static_cast<int64_t>(rows_per_frame / block), block * k * sizeof(float), 1);
  for (int64_t t = 0; t < g.t; ++t) {
    for (int64_t j = 0; j < c.count; ++j) {
      const size_t first = static_cast<size_t>(c.begin(j)) * block, n = static_cast<size_t>(c.begin(j + 1)) * block - first;
      PF_RETURN_IF_ERROR(prepare_chunk(*kernel, g, n));
      if (pass == Pass::kPrepare) continue;
      const float* in = input + (static_cast<size_t>(t) * rows_per_frame + first) * k;
      PF_RETURN_IF_ERROR(run_and_finish(*kernel, g, t, static_cast<int64_t>(first), n, output,
                                        [&](float* out) { return kernel->run(in, n, out); }));
    }
  }
  return {};
}

void Session::start_threads(Kernel& kernel) {
  kernel.parallelize(static_cast<size_t>(kernel.threads()), [](size_t) {});
}

Status Session::prepare_frames(size_t t, size_t height, size_t width) {
  PF_CHECK(t >= 1, Code::kInvalidArgument, "prepare: t = 0; at least one frame is needed");
  PF_ASSIGN_OR_RETURN(const FrameGrid g, frames_grid(t, height, width));
  PF_RETURN_IF_ERROR(prepare_grid(g));
  const RunProfile kept = profile_;
  try {
    PF_ASSIGN_OR_RETURN(FramesKernel * k, frames_kernel(t == 1));
    start_threads(*k->kernel);
    Status s = gather_and_run(*k, g, nullptr, [](int64_t, int64_t, auto*) {}, Pass::kPrepare);
    profile_ = kept;
    return s;
  } catch (const std::bad_alloc&) {
    return make_error(Code::kOutOfMemory, cat("prepare: out of memory for ", t, " frames of ", height, "x", width));
  }
}

Status Session::prepare_images(PixelFormat format, size_t t, size_t height, size_t width) {
  PF_CHECK(t >= 1, Code::kInvalidArgument, "prepare: t = 0; at least one image is needed");
  PF_ASSIGN_OR_RETURN(const FrameGrid g, images_grid(t, height, width));
  PF_RETURN_IF_ERROR(prepare_grid(g));
  const RunProfile kept = profile_;
  try {
    PF_ASSIGN_OR_RETURN(const Resizer* r, resizer(t, height, width));
    PF_ASSIGN_OR_RETURN(FramesKernel * k, frames_kernel(t == 1));
    start_threads(*k->kernel);
    size_resize_buffers(*k->kernel, *r, packed_image(format, nullptr, width, height), resized_frames(t), band_rows(*k, g));
    Status s = gather_and_run(*k, g, nullptr, [](int64_t, int64_t, auto*) {}, Pass::kPrepare);
    profile_ = kept;
    return s;
  } catch (const std::bad_alloc&) {
    return make_error(Code::kOutOfMemory, cat("prepare: out of memory for ", t, " images of ", height, "x", width));
  }
}

}  // namespace patchfuse
