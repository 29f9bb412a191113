// The error bounds every comparison with a reference uses, per precision the session computed in.
// Tests ask the runtime what it resolved (pf_session_info.precision, or what patchfuse-run
// prints) and take the bound from here; none assumes f32, because `auto` picks bf16 on CPUs with
// AVX512-BF16 for a bf16 model.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "patchfuse/patchfuse.h"

namespace patchfuse::testing {

// Per element, as a multiple of sum_j |x_j w_j| (+|b|) (the oracle's abs_sum):
//  f32:  K * 2^-24, the worst-case bound (gamma_K) of any summation order in f32.
//  bf16: inputs (and f32 weights) rounded to bf16 add 2 * 2^-9, plus the f32 accumulation.
//  f16:  inputs and weights rounded to f16 (2 * 2^-11) and an f16 accumulation inside
//        XNNPACK's kernels; observed up to 4.0e-3 at K = 1176, bound set at 1e-2.
inline double element_tolerance(pf_precision computed, int64_t k) {
  const double f32 = static_cast<double>(k) * std::ldexp(1.0, -24);
  switch (computed) {
    case PF_PRECISION_BF16: return 2 * std::ldexp(1.0, -9) + f32;
    case PF_PRECISION_F16: return 1e-2;
    case PF_PRECISION_INT8: return 0;  // no per-element bound: int8 runs on frames, bounded over whole outputs
    case PF_PRECISION_F32:
    case PF_PRECISION_AUTO: return f32;
  }
  return f32;
}

// Max |y - torch| as a fraction of max |torch| over a whole output:
//  f32:  1e-4, the acceptance bound of the runtime issue (observed up to 1.3e-6).
//  bf16: inputs rounded to 8 significant bits: 1e-2.
//  f16:  inputs and weights rounded to 11 bits and f16 accumulation in XNNPACK: 3e-2
//        (observed up to 7.3e-3 on 1176- and 1536-long rows).
//  int8: exact uint8 pixels, folded weights quantized per output channel to int8: 2e-2 (the
//        int8 issue's bound; a NumPy estimate for random weights gave 6.9e-3).
//        Observed: 4.4e-3 to 6.3e-3 on the frames fixtures (Qwen2-VL, Qwen3-VL with bias), 6.7e-3
//        on the 448x448 test image.
inline double max_relative_tolerance(pf_precision computed) {
  switch (computed) {
    case PF_PRECISION_BF16: return 1e-2;
    case PF_PRECISION_F16: return 3e-2;
    case PF_PRECISION_INT8: return 2e-2;
    case PF_PRECISION_F32:
    case PF_PRECISION_AUTO: return 1e-4;
  }
  return 1e-4;
}

// A whole output against its reference: max |y - want| and max |want|.
struct OutputError {
  double max_err = 0, max_ref = 0;
  double relative() const { return max_ref > 0 ? max_err / max_ref : max_err; }
};
template <class Y, class W>
OutputError output_error(const std::vector<Y>& y, const std::vector<W>& want) {
  OutputError e;
  for (size_t i = 0; i < std::min(y.size(), want.size()); ++i) {
    e.max_ref = std::max(e.max_ref, std::fabs(static_cast<double>(want[i])));
    e.max_err = std::max(e.max_err, std::fabs(static_cast<double>(y[i]) - static_cast<double>(want[i])));
  }
  return e;
}

// max |y - want| <= max_relative_tolerance(computed) * max |want|, with both figures on failure.
template <class Y, class W>
::testing::AssertionResult within_bound(const std::vector<Y>& y, const std::vector<W>& want, pf_precision computed) {
  if (y.size() != want.size()) return ::testing::AssertionFailure() << y.size() << " values against " << want.size();
  const OutputError e = output_error(y, want);
  if (e.max_err <= max_relative_tolerance(computed) * e.max_ref) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "max |err| " << e.max_err << " = " << e.relative() << " of max |ref| " << e.max_ref
                                       << ", above the bound " << max_relative_tolerance(computed);
}

}  // namespace patchfuse::testing
