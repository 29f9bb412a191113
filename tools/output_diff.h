// How far a run's output is from a reference output, as patchfuse-run --compare-reference and
// patchfuse-bench's int8 error report it.
#pragma once

#include <algorithm>
#include <cmath>
#include <vector>

namespace patchfuse {

struct OutputDiff {
  double max_diff = 0;  // max |y - reference|
  double max_ref = 0;   // max |reference|
  double relative() const { return max_ref > 0 ? max_diff / max_ref : 0.0; }
};

// Over the first y.size() values of both.
inline OutputDiff output_diff(const std::vector<float>& y, const std::vector<float>& reference) {
  OutputDiff d;
  for (size_t i = 0; i < y.size(); ++i) {
    d.max_diff = std::max(d.max_diff, std::fabs(static_cast<double>(y[i]) - reference[i]));
    d.max_ref = std::max(d.max_ref, std::fabs(static_cast<double>(reference[i])));
  }
  return d;
}

}  // namespace patchfuse
