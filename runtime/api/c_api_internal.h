// What the C API's files share: the handles' structs and the error plumbing. Every entry point
// catches everything (guarded), and each failure leaves its message in the calling thread's
// pf_last_error() (fail).
#pragma once

#include <memory>
#include <new>
#include <optional>
#include <string>
#include <vector>

#include "patchfuse/patchfuse.h"
#include "runtime/model/model_file.h"
#include "runtime/session/session.h"

struct pf_model {
  std::optional<patchfuse::MappedFile> file;  // set when opened from a path
  patchfuse::ModelView view;
  std::vector<std::string> families;  // NUL-terminated copies of each module's family name
  std::vector<std::string> encoder_inputs;  // each module's encoder input steps (describe())
};

struct pf_session {
  std::unique_ptr<patchfuse::Session> session;
  const patchfuse::ModuleView* module;  // in the model, which outlives the session
  std::string schedule;                 // pf_block_schedule.description; "" without a schedule
};

namespace patchfuse::capi {

pf_status fail(const Error& e);
pf_status fail(pf_status s, std::string message);

// Runs `body` (returning pf_status) with every exception turned into a status.
template <class F>
pf_status guarded(const char* what, F body) {
  try {
    return body();
  } catch (const std::bad_alloc&) {
    return fail(PF_OUT_OF_MEMORY, cat(what, ": out of memory"));
  } catch (const std::exception& e) {
    return fail(PF_INTERNAL, cat(what, ": ", e.what()));
  } catch (...) {
    return fail(PF_INTERNAL, cat(what, ": unknown exception"));
  }
}

}  // namespace patchfuse::capi
