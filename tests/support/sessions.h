// Opening a session on one backend, path and precision through the public C++ layer: what the
// runtime tests that loop over backends do.
#pragma once

#include "patchfuse/patchfuse.hpp"

namespace patchfuse::testing {

inline Expected<Session> make_session(const Model& model, pf_backend backend, pf_path path, pf_precision precision,
                                      size_t module_index = 0, int threads = 1) {
  pf_session_options o = default_options();
  o.threads = threads;
  o.backend = backend;
  o.path = path;
  o.precision = precision;
  return Session::create(model, module_index, o);
}

}  // namespace patchfuse::testing
