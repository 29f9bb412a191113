#include "runtime/frames/resize_tables.h"

#include <algorithm>
#include <cstddef>
#include <cstdlib>

namespace patchfuse {

void build_tap_tables(const AxisFilter& h, size_t c0, size_t c1, const ResizeForm& form, size_t pixel_bytes,
                      TapTables& t) {
  const size_t block = form.block, window = form.window;
  const bool quads = form.quads;
  const auto taps = static_cast<size_t>(*std::max_element(h.count.begin(), h.count.end()));
  const size_t blocks = (c1 - c0 + block - 1) / block, lanes = block / 4;
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
    for (size_t j = 0; j < block && x + j < c1 && t.ok[b]; ++j) {
      const int32_t offset = h.first[x + j] - h.first[x + j / window * window];
      const auto bytes = static_cast<int32_t>(pixel_bytes);
      if ((offset + static_cast<int32_t>(taps)) * bytes > static_cast<int32_t>(4 * window)) t.ok[b] = 0;
      int64_t sum = 0;
      for (size_t i = 0; i < taps && t.ok[b]; ++i) {
        const int32_t k = h.fixed[(x + j) * h.taps + i];
        const auto at = static_cast<uint8_t>((offset + static_cast<int32_t>(i)) * bytes);
        sum += k;
        if (!quads) {
          const size_t pair = b * t.pairs + i / 2;
          t.index[pair * 16 * lanes + 4 * j + 2 * (i % 2)] = at;
          t.hi[pair * 8 * lanes + 2 * j + i % 2] = pil_halves(k).hi;
          t.lo[pair * 8 * lanes + 2 * j + i % 2] = pil_halves(k).lo;
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

namespace {

// Whether every block fits the blocks form's `windows` windows (WideTablesView): each output's
// taps within the 64 bytes from its window's first pixel (the padding has no taps).
bool blocks_fit(const std::vector<int32_t>& first, const AxisFilter& h, size_t c0, size_t c1, size_t windows) {
  const size_t outputs = 16 / windows;
  for (size_t w = 0; w < first.size(); w += outputs) {
    for (size_t j = w; j < w + outputs; ++j) {
      const int32_t count = c0 + j < c1 ? h.count[c0 + j] : 0;
      if (first[j] < first[w] || first[j] - first[w] + count > 64) return false;
    }
  }
  return true;
}

}  // namespace

bool build_wide_tables(const AxisFilter& h, size_t c0, size_t c1, const WidePass& form, WideTables& t) {
  const auto taps = static_cast<size_t>(*std::max_element(h.count.begin(), h.count.end()));
  if (taps <= kPilKernelTaps || taps > kPilMaxTaps || c1 <= c0) return false;
  const size_t n = c1 - c0, blocks = (n + 15) / 16;
  t.first.assign(16 * blocks, h.first[c1 - 1]);  // the padding: the last output's pixels, zero coefficients
  std::copy(h.first.begin() + static_cast<std::ptrdiff_t>(c0), h.first.begin() + static_cast<std::ptrdiff_t>(c1),
            t.first.begin());
  const auto fits = [&](size_t w) { return form.blocks && blocks_fit(t.first, h, c0, c1, w); };
  const size_t windows = fits(2) ? 2 : fits(4) ? 4 : 0;  // the fewest that fit, if any
  const bool quads = form.quads, by_blocks = windows > 0;
  const size_t groups = by_blocks ? (taps + 3) / 4 : 0, chunks = by_blocks ? 0 : (taps + 15) / 16;
  t.groups = groups;
  t.windows = windows;
  t.chunks = chunks;
  t.index.assign(by_blocks ? 64 * blocks : 0, 0);
  t.digits.assign(!quads ? 0 : by_blocks ? blocks * groups * 3 * 64 : blocks * 4 * chunks * 3 * 64, 0);
  t.halves.assign(quads ? 0 : 16 * blocks * chunks * 32, 0);
  t.bias.assign(quads && !by_blocks ? 16 * blocks : 0, 0);
  for (size_t o = 0; o < t.index.size() / 4; ++o) {  // every output of every block, the padding too
    const size_t window = o / (16 / windows), odd = window % 2;
    for (size_t i = 0; i < 4; ++i) {
      t.index[4 * o + i] =
          static_cast<uint8_t>(t.first[o] - t.first[window * 16 / windows] + static_cast<int32_t>(i + 64 * odd));
    }
  }
  // Output o's tap i, digit `digit` in the form's digit table.
  const auto digit_at = [&](size_t o, size_t i, size_t digit) -> int8_t& {
    const size_t b = o / 16;
    if (by_blocks) return t.digits[((b * groups + i / 4) * 3 + digit) * 64 + 4 * (o % 16) + i % 4];
    return t.digits[(((4 * b + o % 4) * chunks + i / 16) * 3 + digit) * 64 + 16 * (o % 16 / 4) + i % 16];
  };
  for (size_t o = 0; o < n; ++o) {
    const size_t c = c0 + o;
    int64_t sum = 0;
    for (size_t i = 0; i < static_cast<size_t>(h.count[c]); ++i) {
      const int32_t k = h.fixed[c * h.taps + i];
      if (!quads) {
        int16_t* halves = &t.halves[(o * chunks + i / 16) * 32];
        halves[i % 16] = pil_halves(k).hi;
        halves[16 + i % 16] = pil_halves(k).lo;
        continue;
      }
      int8_t d[3];
      if (!pil_digits(k, d)) return false;
      for (size_t digit = 0; digit < 3; ++digit) digit_at(o, i, digit) = d[digit];
      sum += k;
    }
    if (!t.bias.empty()) {  // sdot's first-digit sums start from the bias and add at most 128 * 128 a tap
      if (128 * std::abs(sum) + int64_t{128 * 128} * h.count[c] >= (int64_t{1} << 31)) return false;
      t.bias[o] = static_cast<int32_t>(128 * sum);
    }
  }
  return true;
}

}  // namespace patchfuse
