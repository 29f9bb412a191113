#include "runtime/frames/resize_tables.h"

#include <algorithm>
#include <cstdlib>

namespace patchfuse {

void build_tap_tables(const AxisFilter& h, size_t c0, size_t c1, const ResizeForm& form, TapTables& t) {
  const size_t block = form.block, window = form.window;
  const bool quads = form.quads;
  const auto taps = static_cast<size_t>(*std::max_element(h.count.begin(), h.count.end()));
  const size_t blocks = (c1 - c0) / block, lanes = block / 4;
  t.block = block;
  t.ok.assign(blocks, 1);
  if (quads) {
    t.groups = (taps + 3) / 4;
    t.quad_index.assign(blocks * t.groups * 16 * lanes, 0x80);
    t.digits.assign(blocks * t.groups * 3 * 16 * lanes, 0);
    t.bias.assign(blocks * block, 0);
  } else {
    t.pairs = (taps + 1) / 2;
    t.index.assign(blocks * t.pairs * 16 * lanes, 0x80);
    t.hi.assign(blocks * t.pairs * 8 * lanes, 0);
    t.lo.assign(blocks * t.pairs * 8 * lanes, 0);
  }
  for (size_t b = 0; b < blocks; ++b) {
    const size_t x = c0 + block * b;
    for (size_t j = 0; j < block && t.ok[b]; ++j) {
      const int32_t offset = h.first[x + j] - h.first[x + j / window * window];
      if (offset + static_cast<int32_t>(taps) > static_cast<int32_t>(4 * window)) t.ok[b] = 0;
      int64_t sum = 0;
      for (size_t i = 0; i < taps && t.ok[b]; ++i) {
        const int32_t k = h.fixed[(x + j) * h.taps + i];
        const auto at = static_cast<uint8_t>(offset + static_cast<int32_t>(i));
        sum += k;
        if (!quads) {
          const size_t pair = b * t.pairs + i / 2;
          t.index[pair * 16 * lanes + 4 * j + 2 * (i % 2)] = at;
          t.hi[pair * 8 * lanes + 2 * j + i % 2] = static_cast<int16_t>(k >> 8);
          t.lo[pair * 8 * lanes + 2 * j + i % 2] = static_cast<int16_t>(k & 255);
          continue;
        }
        const size_t group = b * t.groups + i / 4;
        t.quad_index[group * 16 * lanes + 4 * j + i % 4] = at;
        int8_t d[3];
        if (!pil_digits(k, d)) t.ok[b] = 0;
        for (size_t digit = 0; digit < 3; ++digit) t.digits[(3 * group + digit) * 16 * lanes + 4 * j + i % 4] = d[digit];
      }
      if (quads && t.ok[b]) {
        if (128 * std::abs(sum) >= (int64_t{1} << 30)) t.ok[b] = 0;
        t.bias[block * b + j] = static_cast<int32_t>(128 * sum);
      }
    }
  }
}

bool build_wide_tables(const AxisFilter& h, size_t c0, size_t c1, bool quads, WideTables& t) {
  const auto taps = static_cast<size_t>(*std::max_element(h.count.begin(), h.count.end()));
  if (taps <= kPilKernelTaps || taps > 64 || c1 <= c0) return false;
  const size_t n = c1 - c0, blocks = (n + 15) / 16, chunks = (taps + 15) / 16;
  t.chunks = chunks;
  t.first.assign(16 * blocks, h.first[c1 - 1]);  // the padding: the last output's pixels, zero coefficients
  t.digits.assign(quads ? blocks * 4 * chunks * 3 * 64 : 0, 0);
  t.halves.assign(quads ? 0 : 16 * blocks * chunks * 32, 0);
  t.bias.assign(quads ? 16 * blocks : 0, 0);
  for (size_t o = 0; o < n; ++o) {
    const size_t c = c0 + o, b = o / 16, lane = o % 16 / 4, q = o % 4;
    t.first[o] = h.first[c];
    int64_t sum = 0;
    for (size_t i = 0; i < static_cast<size_t>(h.count[c]); ++i) {
      const int32_t k = h.fixed[c * h.taps + i];
      if (!quads) {
        int16_t* halves = &t.halves[(o * chunks + i / 16) * 32];
        halves[i % 16] = static_cast<int16_t>(k >> 8);
        halves[16 + i % 16] = static_cast<int16_t>(k & 255);
        continue;
      }
      int8_t d[3];
      if (!pil_digits(k, d)) return false;
      for (size_t digit = 0; digit < 3; ++digit) {
        t.digits[(((4 * b + q) * chunks + i / 16) * 3 + digit) * 64 + 16 * lane + i % 16] = d[digit];
      }
      sum += k;
    }
    // sdot's first-digit sums start from the bias and add at most 64 * 128 * 128 = 2^20.
    if (quads && 128 * std::abs(sum) + (int64_t{1} << 20) >= (int64_t{1} << 31)) return false;
    if (quads) t.bias[o] = static_cast<int32_t>(128 * sum);
  }
  return true;
}

}  // namespace patchfuse
