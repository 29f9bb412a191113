// Python arguments into the runtime's types, with errors that name the argument and the value.
#pragma once

#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <string>
#include <vector>

#include "patchfuse/patchfuse.h"

namespace patchfuse::python {

namespace py = pybind11;

// `v` as a T, or a TypeError naming the argument and what it got (pybind11's own cast_error is a
// RuntimeError that names neither).
template <class T>
T cast_arg(const py::handle& v, const std::string& what, const char* expected) {
  try {
    return v.cast<T>();
  } catch (const py::cast_error&) {
    throw py::type_error(what + " must be " + expected + ", got " + py::repr(v).cast<std::string>());
  }
}

inline pf_grid to_grid(const py::object& grid) {
  const auto g = cast_arg<std::vector<int64_t>>(grid, "grid", "(t, h, w) of ints");
  if (g.size() != 3 || py::isinstance<py::str>(grid)) {
    throw py::value_error("grid must be (t, h, w), got " + py::repr(grid).cast<std::string>());
  }
  return pf_grid{g[0], g[1], g[2]};
}
inline py::tuple from_grid(const pf_grid& g) { return py::make_tuple(g.t, g.h, g.w); }

}  // namespace patchfuse::python
