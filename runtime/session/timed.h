// Wall-clock timing of a session's stages (RunProfile): timed(ms, f) runs f and adds its wall time
// to ms, also when f returns early through an error.
#pragma once

#include <chrono>

namespace patchfuse {

template <class F>
auto timed(double& ms, const F& f) {
  const auto start = std::chrono::steady_clock::now();
  struct AddOnExit {
    double& ms;
    std::chrono::steady_clock::time_point start;
    ~AddOnExit() { ms += std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count(); }
  } add{ms, start};
  return f();
}

}  // namespace patchfuse
