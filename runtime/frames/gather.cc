#include "runtime/frames/gather.h"

#include <algorithm>

namespace patchfuse {

void gather_rows(const uint8_t* const* frames, size_t count, size_t row_stride, const FrameGrid& grid,
                 const Preprocessing& p, int64_t channels, bool still, float* out) {
  const int64_t P = p.patch_size, M = p.merge_size, tps = still ? 1 : p.temporal_patch_size;
  const int64_t pp = P * P, k = channels * tps * pp;
  for (int64_t gt = 0; gt < grid.t; ++gt) {
    for (int64_t bh = 0; bh < grid.h / M; ++bh) {
      for (int64_t bw = 0; bw < grid.w / M; ++bw) {
        for (int64_t mh = 0; mh < M; ++mh) {
          for (int64_t mw = 0; mw < M; ++mw) {
            const size_t y0 = static_cast<size_t>((bh * M + mh) * P), x0 = static_cast<size_t>((bw * M + mw) * P);
            for (int64_t t = 0; t < tps; ++t) {
              const size_t f = std::min(static_cast<size_t>(gt * tps + t), count - 1);  // odd count: repeat the last
              for (int64_t y = 0; y < P; ++y) {
                const uint8_t* src = frames[f] + (y0 + static_cast<size_t>(y)) * row_stride + x0 * static_cast<size_t>(channels);
                // Reads run along the image row; each channel goes to its own column block.
                for (int64_t x = 0; x < P; ++x) {
                  for (int64_t c = 0; c < channels; ++c) {
                    out[(c * tps + t) * pp + y * P + x] = static_cast<float>(src[x * channels + c]);
                  }
                }
              }
            }
            out += k;
          }
        }
      }
    }
  }
}

}  // namespace patchfuse
