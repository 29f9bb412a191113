// libFuzzer target: a .pfb model given to pf_model_open_memory, and for every module it accepts,
// a session on each backend built here, both paths, run on two rows, and where the module has
// preprocessing, on one still frame of the smallest size it takes; and a reference session of the
// encoder-input stage (where the model has it) on a few small grids, with every block input, the
// window order and the schedule. A model that passes verification must never make a backend,
// the grid terms or the block tables read outside it.
#include <cstring>
#include <vector>

#include "patchfuse/patchfuse.h"

namespace {

// What a session computes per grid besides the patches: on the encoder-input stage where the
// model has it whole (else the patch stage, whose session still answers the block inputs), a few
// small grids. A grid the session takes (pf_session_output_rows) must run, and each block input
// listed for a grid must fill.
void grid_terms_and_block_inputs(const pf_model* model, size_t module, const pf_module_info& info) {
  pf_session* s = nullptr;
  for (pf_output_stage stage : {PF_OUTPUT_ENCODER_INPUT, PF_OUTPUT_PATCHES}) {
    pf_session_options o;
    pf_session_options_init(&o);
    o.backend = PF_BACKEND_REFERENCE;
    o.output_stage = stage;
    if (pf_session_create(model, module, &o, &s) == PF_OK) break;
  }
  if (s == nullptr) return;
  pf_block_schedule schedule;
  pf_session_block_schedule(s, &schedule);
  for (const pf_grid grid : {pf_grid{1, 2, 2}, pf_grid{1, 4, 6}, pf_grid{2, 4, 4}, pf_grid{1, 8, 8}}) {
    int64_t rows = 0;
    if (pf_session_output_rows(s, &grid, &rows) == PF_OK) {
      const auto patches = static_cast<size_t>(grid.t * grid.h * grid.w);
      std::vector<float> x(patches * static_cast<size_t>(info.patch_volume), 0.25f);
      std::vector<float> y(static_cast<size_t>(rows) * static_cast<size_t>(info.embed_dim));
      if (pf_session_run_grid(s, x.data(), &grid, y.data()) != PF_OK) __builtin_trap();
    }
    size_t count = 0;
    if (pf_session_block_input_count(s, &grid, &count) == PF_OK) {
      for (size_t i = 0; i < count; ++i) {
        pf_block_input_info b;
        if (pf_session_block_input_info(s, &grid, i, &b) != PF_OK) __builtin_trap();
        std::vector<uint8_t> buffer(b.bytes);
        if (pf_session_block_input(s, b.name, &grid, buffer.data(), buffer.size()) != PF_OK) __builtin_trap();
      }
    }
    size_t windows = 0, cu = 0;
    if (pf_session_window_index(s, &grid, nullptr, nullptr, 0, nullptr, 0, &windows, &cu) == PF_OK) {
      std::vector<int64_t> index(windows), reverse(windows), bounds(cu);
      if (pf_session_window_index(s, &grid, index.data(), reverse.data(), windows, bounds.data(), cu, &windows, &cu) !=
          PF_OK) {
        __builtin_trap();
      }
    }
  }
  pf_session_release(s);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // An exact-size copy at malloc's alignment: the contract asks for 8-byte-aligned memory, and
  // AddressSanitizer then catches any read past the end.
  std::vector<uint8_t> bytes(data, data + size);
  pf_model* model = nullptr;
  if (pf_model_open_memory(bytes.data(), bytes.size(), &model) != PF_OK) return 0;
  size_t count = 0;
  if (pf_model_module_count(model, &count) != PF_OK) __builtin_trap();
  for (size_t i = 0; i < count; ++i) {
    pf_module_info info;
    if (pf_model_get_module(model, i, &info) != PF_OK) __builtin_trap();
    if (!info.eligible) continue;
    grid_terms_and_block_inputs(model, i, info);
    const size_t n = 2;
    std::vector<float> x(n * static_cast<size_t>(info.patch_volume), 0.5f);
    std::vector<float> y(n * static_cast<size_t>(info.embed_dim));
    for (pf_backend b : {PF_BACKEND_REFERENCE, PF_BACKEND_XNNPACK, PF_BACKEND_ONEDNN}) {
      if (!pf_backend_available(b)) continue;
      for (pf_path path : {PF_PATH_FUSED, PF_PATH_UNFUSED}) {
        pf_session_options o;
        pf_session_options_init(&o);
        o.backend = b;
        o.path = path;
        pf_session* s = nullptr;
        if (pf_session_create(model, i, &o, &s) != PF_OK) continue;
        if (pf_session_run(s, x.data(), n, y.data()) != PF_OK) __builtin_trap();
        if (info.has_preprocessing) {
          int64_t side = 0, unused = 0;  // smart_resize of a 1x1 image: at least one merge block
          pf_model_video_frame_size(model, i, 4, 1080, 1920, &side, &unused);  // any stored video rule
          if (pf_model_frame_size(model, i, 1, 1, &side, &unused) == PF_OK && side > 0 && side <= 256) {
            pf_grid g{};
            const size_t sz = static_cast<size_t>(side);
            if (pf_session_frames_grid(s, 1, sz, sz, &g) == PF_OK) {
              std::vector<uint8_t> frame(sz * sz * 3, 128);
              std::vector<float> out(static_cast<size_t>(g.t * g.h * g.w) * static_cast<size_t>(info.embed_dim));
              const uint8_t* f = frame.data();
              if (pf_session_run_frames(s, &f, 1, sz, sz, sz * 3, out.data(), &g) != PF_OK) __builtin_trap();
            }
          }
        }
        pf_session_release(s);
      }
    }
  }
  pf_model_release(model);
  return 0;
}
