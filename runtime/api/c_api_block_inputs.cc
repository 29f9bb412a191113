// The C API's per-grid answers for the vision blocks: Qwen2.5-VL's window order and the block
// inputs (runtime/encoder_input/block_inputs.h), over the session.
#include <algorithm>

#include "runtime/api/c_api_internal.h"

using namespace patchfuse;
using namespace patchfuse::capi;

pf_status pf_session_window_index(const pf_session* session, const pf_grid* grid, int64_t* window_index,
                                  int64_t* reverse_index, size_t index_capacity, int64_t* cu_window_seqlens,
                                  size_t cu_capacity, size_t* index_count_out, size_t* cu_count_out) {
  if (session == nullptr || grid == nullptr || index_count_out == nullptr || cu_count_out == nullptr) {
    return fail(PF_INVALID_ARGUMENT, "pf_session_window_index: session, grid and the count pointers must not be null");
  }
  return guarded("pf_session_window_index", [&] {
    // The sizes first: a size query, or a capacity too small, makes no order (up to 2^30 groups).
    const FrameGrid g{grid->t, grid->h, grid->w};
    Result<WindowCounts> c = session->session->window_counts(g);
    if (!c.ok()) return fail(c.error());
    const auto groups = static_cast<uint64_t>(c->groups), bounds = static_cast<uint64_t>(c->bounds);
    if (bounds > SIZE_MAX || groups > SIZE_MAX) {  // up to 2^32 + 1: a 32-bit size_t cannot count them
      return fail(PF_INVALID_ARGUMENT, cat("pf_session_window_index: the grid's ", groups, " merge groups are more than ",
                                           "this address space counts"));
    }
    *index_count_out = static_cast<size_t>(groups);
    *cu_count_out = static_cast<size_t>(bounds);
    const bool index_fits = index_capacity >= groups || (window_index == nullptr && reverse_index == nullptr);
    const bool cu_fits = cu_capacity >= bounds || cu_window_seqlens == nullptr;
    if (!index_fits || !cu_fits) {
      return fail(PF_INVALID_ARGUMENT, cat("pf_session_window_index: the grid has ", groups, " merge groups and ", bounds,
                                           " window boundaries; capacities are ", index_capacity, " and ", cu_capacity));
    }
    if (window_index == nullptr && reverse_index == nullptr && cu_window_seqlens == nullptr) return PF_OK;
    Result<WindowOrder> o = session->session->window_order(g);
    if (!o.ok()) return fail(o.error());
    if (window_index != nullptr) std::copy(o->window_index.begin(), o->window_index.end(), window_index);
    if (reverse_index != nullptr) std::copy(o->reverse_index.begin(), o->reverse_index.end(), reverse_index);
    if (cu_window_seqlens != nullptr) std::copy(o->cu_window_seqlens.begin(), o->cu_window_seqlens.end(), cu_window_seqlens);
    return PF_OK;
  });
}

pf_status pf_session_block_input_count(const pf_session* session, const pf_grid* grid, size_t* count_out) {
  if (session == nullptr || grid == nullptr || count_out == nullptr) {
    return fail(PF_INVALID_ARGUMENT, "pf_session_block_input_count: null argument");
  }
  return guarded("pf_session_block_input_count", [&] {
    Result<std::vector<BlockInputDesc>> d = session->session->block_inputs(FrameGrid{grid->t, grid->h, grid->w});
    if (!d.ok()) return fail(d.error());
    *count_out = d->size();
    return PF_OK;
  });
}

pf_status pf_session_block_input_info(const pf_session* session, const pf_grid* grid, size_t index,
                                      pf_block_input_info* info_out) {
  if (session == nullptr || grid == nullptr || info_out == nullptr) {
    return fail(PF_INVALID_ARGUMENT, "pf_session_block_input_info: null argument");
  }
  return guarded("pf_session_block_input_info", [&] {
    Result<std::vector<BlockInputDesc>> d = session->session->block_inputs(FrameGrid{grid->t, grid->h, grid->w});
    if (!d.ok()) return fail(d.error());
    if (index >= d->size()) {
      return fail(PF_INVALID_ARGUMENT, cat("pf_session_block_input_info: index ", index, " is past the ", d->size(),
                                           " block inputs of grid ", grid->t, "x", grid->h, "x", grid->w));
    }
    const BlockInputDesc& b = (*d)[index];
    *info_out = pf_block_input_info{};
    info_out->name = b.name;
    info_out->type = static_cast<pf_element_type>(b.type);
    info_out->rank = static_cast<int32_t>(b.shape.size());
    std::copy(b.shape.begin(), b.shape.end(), info_out->shape);
    info_out->bytes = b.bytes();
    return PF_OK;
  });
}

pf_status pf_session_block_input(pf_session* session, const char* name, const pf_grid* grid, void* buffer,
                                 size_t buffer_bytes) {
  if (session == nullptr || name == nullptr || grid == nullptr || buffer == nullptr) {
    return fail(PF_INVALID_ARGUMENT, "pf_session_block_input: session, name, grid and buffer must not be null");
  }
  return guarded("pf_session_block_input", [&] {
    Status s = session->session->block_input(name, FrameGrid{grid->t, grid->h, grid->w}, buffer, buffer_bytes);
    return s.ok() ? PF_OK : fail(s.error());
  });
}

pf_status pf_session_block_schedule(const pf_session* session, pf_block_schedule* out) {
  if (session == nullptr || out == nullptr) return fail(PF_INVALID_ARGUMENT, "pf_session_block_schedule: null argument");
  return guarded("pf_session_block_schedule", [&] {
    const ModuleView& m = *session->module;
    if (!m.blocks) {
      return fail(PF_UNSUPPORTED, cat("pf_session_block_schedule: module ", m.path,
                                      " stores no block schedule (converted by a patchfuse before 0.6): convert the "
                                      "checkpoint again"));
    }
    const BlockSpec& b = *m.blocks;
    *out = pf_block_schedule{};
    out->depth = static_cast<int32_t>(b.depth);
    out->num_heads = static_cast<int32_t>(b.num_heads);
    out->head_dim = b.rotary == RotaryKind::kNone ? 0 : static_cast<int32_t>(b.head_dim);
    out->rope_theta = b.rope_theta;
    out->rotary = rotary_kind_name(b.rotary);
    out->description = session->schedule.c_str();
    return PF_OK;
  });
}

