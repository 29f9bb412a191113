// Overflow-checked size arithmetic for untrusted shapes and byte counts.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

namespace patchfuse {

inline std::optional<uint64_t> checked_mul(uint64_t a, uint64_t b) {
  uint64_t r;
  if (__builtin_mul_overflow(a, b, &r)) return std::nullopt;
  return r;
}

// Product of the dimensions; nullopt on a negative dimension or overflow of uint64.
inline std::optional<uint64_t> checked_product(const std::vector<int64_t>& dims) {
  uint64_t n = 1;
  for (int64_t d : dims) {
    if (d < 0) return std::nullopt;
    auto r = checked_mul(n, static_cast<uint64_t>(d));
    if (!r) return std::nullopt;
    n = *r;
  }
  return n;
}

}  // namespace patchfuse
