#pragma once
// A frames kernel's folded weights (KernelRequest::folded) packed into oneDNN's layout a block of
// output channels at a time, each block reordered straight into its place: a submemory of the
// layout. The block is a multiple of the layout's own block of output channels (1 plain, 16 for
// OIhw16i16o, 64 for BA16a64b2a, 48 or 32 for AMX's narrower BA16a48b2a/BA16a32b2a) near
// kFoldedBlock, so every block is one oneDNN takes, whichever layout the CPU's primitive asked for.
#include <oneapi/dnnl/dnnl.hpp>

#include "runtime/backends/backend.h"

namespace patchfuse {

// Writes the rows `rows` gives into `weights`, whose output channels are dimension `out_axis`
// (1 for matmul's [K, O], 0 for the convolution's [O, C, (kt,) kh, kw]), and their biases into
// bias[0, O). Throws dnnl::error where oneDNN refuses (a layout that is not blocked).
void pack_folded_rows(const FoldedRows& rows, const dnnl::memory& weights, int out_axis, float* bias,
                      const dnnl::engine& engine, dnnl::stream& stream);

}  // namespace patchfuse
