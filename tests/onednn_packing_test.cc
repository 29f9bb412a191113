// The folded rows packed into every weights layout oneDNN's matmul and convolution pick on some
// CPU class, AMX's included: a reorder into any blocked layout runs on every x86-64 CPU, so the
// layouts this machine's primitives never ask for are checked here too.
#include <gtest/gtest.h>

#include <oneapi/dnnl/dnnl.hpp>
#include <vector>

#include "runtime/backends/onednn/folded_packing.h"

namespace patchfuse {
namespace {

using tag = dnnl::memory::format_tag;
using dt = dnnl::memory::data_type;

// Small integers: exact in bf16, so packing is checked bit for bit.
float value(int64_t o, int64_t j) { return static_cast<float>((o * 7 + j * 3) % 97 - 48); }

struct Layout {
  dnnl::memory::dims dims;  // the primitive's weights: [K, O] for matmul, [O, C, (kt,) kh, kw] for the conv
  int out_axis;
  dt type;
  tag format;
};

TEST(FoldedPacking, EveryBlockLandsInPlaceInEveryLayout) {
  const dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  dnnl::stream stream(engine);
  int checked = 0;
  for (int64_t out : {40, 64, 200}) {
    const std::vector<Layout> layouts{
        {{12, out}, 1, dt::f32, tag::ab},           // gemm:jit
        {{12, out}, 1, dt::f32, tag::BA16a64b},     // brgemm f32
        {{12, out}, 1, dt::f32, tag::BA16a48b},
        {{12, out}, 1, dt::f32, tag::BA16a32b},
        {{12, out}, 1, dt::f32, tag::BA16a16b},
        {{12, out}, 1, dt::bf16, tag::BA16a64b2a},  // brgemm bf16, AVX512-BF16 and AMX
        {{12, out}, 1, dt::bf16, tag::BA16a48b2a},  // AMX's narrower blocks
        {{12, out}, 1, dt::bf16, tag::BA16a32b2a},
        {{12, out}, 1, dt::bf16, tag::BA16a16b2a},
        {{out, 3, 2, 2}, 0, dt::f32, tag::OIhw16i16o},
        {{out, 3, 2, 2}, 0, dt::f32, tag::Oihw16o},
        {{out, 3, 2, 2}, 0, dt::bf16, tag::OIhw8i16o2i},
        {{out, 3, 2, 2, 2}, 0, dt::f32, tag::OIdhw16i16o},
        {{out, 3, 2, 2, 2}, 0, dt::bf16, tag::OIdhw8i16o2i},
    };
    for (const Layout& l : layouts) {
      SCOPED_TRACE(testing::Message() << "out " << out << " tag " << static_cast<int>(l.format) << " dims "
                                      << l.dims.size() << (l.type == dt::bf16 ? " bf16" : " f32"));
      const auto axis = static_cast<size_t>(l.out_axis);
      int64_t k = 1;
      for (size_t d = 0; d < l.dims.size(); ++d) k *= d == axis ? 1 : l.dims[d];
      dnnl::memory packed(dnnl::memory::desc(l.dims, l.type, l.format), engine);
      std::vector<int> times(static_cast<size_t>(out));
      const FoldedRows rows = [&](int64_t first, int64_t count, float* w, float* b) {
        for (int64_t o = first; o < first + count; ++o) {
          ++times[static_cast<size_t>(o)];
          b[o - first] = static_cast<float>(o);
          for (int64_t j = 0; j < k; ++j) w[(o - first) * k + j] = value(o, j);
        }
      };
      std::vector<float> bias(static_cast<size_t>(out), -1.0f);
      pack_folded_rows(rows, packed, l.out_axis, bias.data(), engine, stream);
      // Back to one f32 row per channel, in the order the fold writes them.
      dnnl::memory::dims strides(l.dims.size());
      int64_t stride = 1;
      for (size_t d = l.dims.size(); d-- > 0;) {
        if (d == axis) continue;
        strides[d] = stride;
        stride *= l.dims[d];
      }
      strides[axis] = k;
      std::vector<float> back(static_cast<size_t>(out * k));
      dnnl::memory plain(dnnl::memory::desc(l.dims, dt::f32, strides), engine, back.data());
      dnnl::reorder(packed, plain).execute(stream, packed, plain);
      stream.wait();
      for (int64_t o = 0; o < out; ++o) {
        ASSERT_EQ(times[static_cast<size_t>(o)], 1) << "channel " << o << " asked for";
        ASSERT_EQ(bias[static_cast<size_t>(o)], static_cast<float>(o)) << "bias of channel " << o;
        for (int64_t j = 0; j < k; ++j) {
          ASSERT_EQ(back[static_cast<size_t>(o * k + j)], value(o, j)) << "channel " << o << " value " << j;
        }
      }
      ++checked;
    }
  }
  EXPECT_EQ(checked, 3 * 14);
}

}  // namespace
}  // namespace patchfuse
