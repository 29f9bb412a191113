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
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>

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

}  // namespace patchfuse
