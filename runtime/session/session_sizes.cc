// Session, per-size state: what pf_session_prepare fills and a run only looks up: the kernel's
// plan per chunk size, grid terms, resizers, chunk and band sizes, buffers.
#include "runtime/session/session.h"

#include <algorithm>
#include <cstdint>

#include "runtime/frames/gather.h"
#include "runtime/session/timed.h"

namespace patchfuse {

Result<const GridTerms*> Session::grid_terms(int64_t h, int64_t w) {
  return terms_.get([&](const GridTerms& t) { return t.h == h && t.w == w; },
                    [&] { return timed(profile_.setup_ms, [&] { return make_grid_terms(*encoder_, h, w, model_dtype()); }); });
}

Result<const BlockTables*> Session::block_tables(int64_t h, int64_t w) {
  return block_tables_.get([&](const BlockTables& t) { return t.h == h && t.w == w; }, [&] {
    return timed(profile_.setup_ms,
                 [&] { return make_block_tables(*module_.blocks, *module_.encoder_input, h, w, model_dtype()); });
  });
}

Status Session::prepare_grid(const FrameGrid& g) {
  PF_RETURN_IF_ERROR(output_rows(g));
  if (encoder_ && module_.blocks && module_.blocks->refused.empty()) PF_RETURN_IF_ERROR(block_tables(g.h, g.w));
  return {};
}

// oneDNN's plans fail (SIGFPE) from 2^32 rows and gemmlowp counts rows in an int: far past any
// real input, so refused rather than cut.
Status Session::check_call_rows(uint64_t n) {
  PF_CHECK(n <= INT32_MAX, Code::kInvalidArgument, "N = ", n, " patches in one call; at most 2^31 - 1");
  return {};
}

Status Session::ensure_prepared(Kernel& kernel, size_t n) {
  PF_RETURN_IF_ERROR(check_call_rows(n));  // every kernel call's size passes here
  const std::pair<const Kernel*, size_t> plan{&kernel, n};
  if (std::find(prepared_.begin(), prepared_.end(), plan) != prepared_.end()) return {};
  const bool f32_rows = &kernel == kernel_.get() || !kernel.takes_bf16();  // the frames gather makes bf16 rows itself
  PF_RETURN_IF_ERROR(timed(profile_.setup_ms, [&] { return kernel.prepare(n, f32_rows); }));
  prepared_.push_back(plan);
  return {};
}

Status Session::prepare_chunk(Kernel& kernel, const FrameGrid& g, size_t n) {
  PF_RETURN_IF_ERROR(ensure_prepared(kernel, n));
  if (!encoder_) return {};
  PF_ASSIGN_OR_RETURN(const GridTerms* terms, grid_terms(g.h, g.w));
  if (!terms->slot.empty()) grow(window_rows_, n * static_cast<size_t>(module_.geometry.embed_dim));
  return {};
}

size_t Session::row_value_bytes(const FramesKernel& k) const {
  return precision_ == Precision::kInt8 ? 1 : k.kernel->takes_bf16() ? 2 : sizeof(float);
}

Chunking Session::frame_chunks(const FramesKernel& k, const FrameGrid& g) const {
  const int64_t blocks = gather_block_count(g, *module_.preprocessing), blocks_per_t = blocks / g.t;
  const size_t block_bytes = static_cast<size_t>(g.rows() / blocks * k.pitch()) * row_value_bytes(k);
  return chunking(blocks_per_t, block_bytes, k.kernel->threads());
}

size_t Session::band_rows(const FramesKernel& k, const FrameGrid& g) const {
  const Preprocessing& p = *module_.preprocessing;
  return static_cast<size_t>(frame_chunks(k, g).largest() * p.merge_size * p.patch_size);
}

namespace {

bool same_spec(const ResizeSpec& a, const ResizeSpec& b) {
  return a.src_h == b.src_h && a.src_w == b.src_w && a.resized_h == b.resized_h && a.resized_w == b.resized_w &&
         a.top == b.top && a.left == b.left && a.out_h == b.out_h && a.out_w == b.out_w && a.filter == b.filter &&
         a.semantics == b.semantics;
}

}  // namespace

Result<const Resizer*> Session::resizer(size_t t, size_t height, size_t width) {
  PF_CHECK(module_.preprocessing.has_value(), Code::kUnsupported, "module ", module_.path,
           " has no preprocessing (convert the checkpoint with its preprocessor_config.json), so it cannot take images");
  PF_CHECK(t >= 1, Code::kInvalidArgument, "images: t = 0; at least one image is needed");
  const Preprocessing& p = *module_.preprocessing;
  PF_ASSIGN_OR_RETURN(const ResizeSpec spec, frame_resize_spec(p, t == 1 ? 0 : static_cast<int64_t>(t), height, width));
  return resizers_.get([&](const Resizer& r) { return same_spec(r.spec(), spec); },
                       [&] { return timed(profile_.setup_ms, [&] { return Resizer::create(spec, *forms_); }); });
}

size_t Session::size_resize_buffers(const Kernel& kernel, const Resizer& r, const ImageView& image, size_t frames,
                                    size_t rows) {
  const size_t parts = std::min<size_t>(r.spec().out_h, static_cast<size_t>(kernel.threads()));
  resize_scratch_.resize(std::max(resize_scratch_.size(), parts));
  for (auto& s : resize_scratch_) grow(s, r.scratch_bytes(image));
  resized_.resize(std::max(resized_.size(), frames));
  for (size_t i = 0; i < frames; ++i) grow(resized_[i], rows * r.spec().out_w * 3);
  return parts;
}

size_t Session::resized_frames(size_t t) const {
  return t == 1 ? 1 : static_cast<size_t>(module_.preprocessing->temporal_patch_size);
}

}  // namespace patchfuse
