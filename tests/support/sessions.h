// Opening a session on one backend, path and precision through the public C++ layer: what the
// runtime tests that loop over backends do.
#pragma once

#include <gtest/gtest.h>

#include <optional>

#include "converter/convert.h"
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

// Converts o.input to o.output with the converter library and opens the result; nullopt (and a
// test failure naming the error) when either fails.
inline std::optional<Model> converted_model(const ConvertOptions& o) {
  auto r = convert_checkpoint(o);
  if (!r.ok()) {
    ADD_FAILURE() << r.error().message;
    return std::nullopt;
  }
  auto m = Model::open_file(o.output);
  if (!m) {
    ADD_FAILURE() << m.error();
    return std::nullopt;
  }
  return std::move(*m);
}

}  // namespace patchfuse::testing
