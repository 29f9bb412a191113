#include "runtime/backends/onednn/folded_packing.h"

#include <algorithm>
#include <vector>

namespace patchfuse {

void pack_folded_rows(const FoldedRows& rows, const dnnl::memory& weights, int out_axis, float* bias,
                      const dnnl::engine& engine, dnnl::stream& stream) {
  const dnnl::memory::desc layout = weights.get_desc();
  const dnnl::memory::dims full = layout.dims();
  const auto axis = static_cast<size_t>(out_axis);
  const int64_t out = full[axis];
  int64_t k = 1;  // values a channel's row holds
  for (size_t d = 0; d < full.size(); ++d) k *= d == axis ? 1 : full[d];
  const dnnl_blocking_desc_t& blocking = layout.data.format_desc.blocking;
  int64_t layout_block = 1;
  for (int i = 0; i < blocking.inner_nblks; ++i) {
    if (blocking.inner_idxs[i] == out_axis) layout_block *= blocking.inner_blks[i];
  }
  const int64_t block = std::max<int64_t>(1, kFoldedBlock / layout_block) * layout_block;
  std::vector<float> rows_f32(static_cast<size_t>(block * k));
  auto* packed = static_cast<uint8_t*>(weights.get_data_handle());
  const size_t value_bytes = dnnl::memory::data_type_size(layout.data_type());
  dnnl::reorder put;
  dnnl::memory::desc put_to;
  for (int64_t o = 0; o < out; o += block) {
    const int64_t count = std::min(block, out - o);
    dnnl::memory::dims shape = full, offset(full.size(), 0), strides(full.size());
    shape[axis] = count;
    offset[axis] = o;
    dnnl::memory::desc to = layout.submemory_desc(shape, offset);
    const dnnl_dim_t start = to.data.offset0;  // elements into the packed buffer
    to.data.offset0 = 0;
    // The rows as the fold writes them: channel after channel, each row's values in order.
    int64_t stride = 1;
    for (size_t d = full.size(); d-- > 0;) {
      if (d == axis) continue;
      strides[d] = stride;
      stride *= shape[d];
    }
    strides[axis] = k;
    const dnnl::memory::desc from(shape, dnnl::memory::data_type::f32, strides);
    rows(o, count, rows_f32.data(), bias + o);
    if (!(to == put_to)) {
      put = dnnl::reorder(dnnl::reorder::primitive_desc(engine, from, engine, to));
      put_to = to;
    }
    dnnl::memory src(from, engine, rows_f32.data());
    dnnl::memory dst(to, engine, packed + static_cast<size_t>(start) * value_bytes);
    put.execute(stream, src, dst);
    stream.wait();  // the rows buffer is refilled next
  }
}

}  // namespace patchfuse
