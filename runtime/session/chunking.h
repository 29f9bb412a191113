#pragma once
// How a run cuts a frame's rows into chunks: each chunk's rows are gathered (or read) and the
// kernel runs on them while they are still in cache. Gathering a 1080p frame's 23 MB of f32 rows
// first and then running the GEMM made the gather memory-bound.
//
// The frames path cuts a frame into the fewest chunks of at most kChunkBytesPerThread of rows per
// thread on average, in whole gather blocks shared out evenly, so no chunk is a small remainder.
// Measured (docs/performance.md, "How a frame is cut into chunks"): at 1 thread 1 MiB was best or
// within noise at every oneDNN level here (AVX2, AVX512_CORE_VNNI, AVX512_CORE_BF16) and precision;
// at 2 threads a 1 MiB chunk lost 2-9% in f32 and bf16, each thread then running half of one, and a
// short last chunk cost int8 3-6%. pixel_values rows come from the caller, so a chunk there only
// keeps the epilogue's output in cache: per thread measured no clear gain there, so it stays at 1 MiB.
//
// Kernel calls need not follow chunks: a kernel may run at full speed only on a multiple of some
// row count (Kernel::row_multiple: oneDNN's AMX bf16 matmul blocks M by its largest divisor in
// 32..64, and a 720p frame's 184-row merge rows make 46, which ran at half speed), so
// frame_calls carries the rows past that multiple to the next chunk instead. A multiple of a
// whole frame's rows makes one call after the frame's last chunk, its rows gathered chunk by chunk
// (Kernel::whole_frame_calls: oneDNN's AMX kernels ran faster so, docs/amx.md).
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "runtime/core/result.h"

namespace patchfuse {

constexpr size_t kChunkBytesPerThread = size_t{1} << 20;

struct Chunking {
  int64_t units = 1;  // what is cut: gather blocks or merge windows of one frame
  int64_t count = 1;  // chunks
  // Chunk j is units [begin(j), begin(j + 1)): sizes differ by at most one unit.
  int64_t begin(int64_t j) const { return units * j / count; }
  int64_t largest() const { return (units + count - 1) / count; }
};

// `units` of `unit_bytes` each, for a kernel on `threads` threads.
inline Chunking chunking(int64_t units, size_t unit_bytes, int threads) {
  const double target = static_cast<double>(kChunkBytesPerThread) * std::max(threads, 1);
  const auto count = static_cast<int64_t>(std::ceil(static_cast<double>(units) * static_cast<double>(unit_bytes) / target));
  return {units, std::clamp<int64_t>(count, 1, std::max<int64_t>(units, 1))};
}

// One frame's rows through a kernel, a chunk of `c` at a time. `gather(begin, end, rows)` writes
// the rows of units [begin, end), rows_per_unit each, at `rows`; `call(first, n, rows)` runs the
// kernel on the n rows at `rows`, rows [first, first + n) of the frame. Every call but the frame's
// last takes a multiple of `multiple` rows, the rows past it waiting at the buffer's start for the
// next chunk; the last takes what is left, which the kernel cuts (Kernel::row_multiple). `buffer`
// holds frame_call_rows() rows of `row_values` values, never more than the frame's; without one (a
// prepare pass) nothing is gathered and `call` gets nullptr, with the same sizes.
inline size_t frame_call_rows(const Chunking& c, size_t rows_per_unit, size_t multiple) {
  const size_t frame = static_cast<size_t>(c.units) * rows_per_unit;
  return std::min(static_cast<size_t>(c.largest()) * rows_per_unit + multiple - 1, frame);
}

template <class T, class Gather, class Call>
Status frame_calls(const Chunking& c, size_t rows_per_unit, size_t multiple, T* buffer, size_t row_values,
                   const Gather& gather, const Call& call) {
  size_t done = 0, held = 0;  // rows run, and rows gathered but not yet run (at the buffer's start)
  for (int64_t j = 0; j < c.count; ++j) {
    if (buffer != nullptr) gather(c.begin(j), c.begin(j + 1), buffer + held * row_values);
    held += static_cast<size_t>(c.begin(j + 1) - c.begin(j)) * rows_per_unit;
    const size_t n = j + 1 == c.count ? held : held / multiple * multiple;
    if (n == 0) continue;
    PF_RETURN_IF_ERROR(call(done, n, buffer));
    done += n;
    held -= n;
    if (buffer != nullptr && held > 0) std::memmove(buffer, buffer + n * row_values, held * row_values * sizeof(T));
  }
  return {};
}

}  // namespace patchfuse
