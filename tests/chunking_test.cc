// How a run cuts a frame into chunks (runtime/session/chunking.h): the fewest chunks that average
// no more than the target per thread, sizes differing by at most one unit, every unit once; and
// the kernel calls over those chunks (frame_calls), every row once, in place, in order.
#include "runtime/session/chunking.h"

#include <gtest/gtest.h>

#include <vector>

namespace patchfuse {
namespace {

TEST(Chunking, EvenChunksOfAtMostTheTargetPerThread) {
  // 720p in the frames path: 26 merge rows of 184 rows; bytes a merge row for f32, bf16, int8 rows.
  struct Case {
    int64_t units;
    size_t unit_bytes;
    int threads;
    int64_t count;
  };
  const Case cases[] = {
      {26, 184 * 588 * 4, 1, 11}, {26, 184 * 588 * 4, 2, 6}, {26, 184 * 588 * 2, 1, 6}, {26, 184 * 588 * 2, 2, 3},
      {26, 184 * 588, 1, 3},      {26, 184 * 588, 2, 2},     {3, 100, 1, 1},           {5, size_t{8} << 20, 1, 5},
      {1, 1, 4, 1},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(testing::Message() << c.units << " units of " << c.unit_bytes << " bytes, " << c.threads << " threads");
    const Chunking k = chunking(c.units, c.unit_bytes, c.threads);
    ASSERT_EQ(k.count, c.count);
    EXPECT_EQ(k.begin(0), 0);
    EXPECT_EQ(k.begin(k.count), c.units);
    int64_t smallest = c.units, largest = 0;
    for (int64_t j = 0; j < k.count; ++j) {
      const int64_t size = k.begin(j + 1) - k.begin(j);
      smallest = std::min(smallest, size);
      largest = std::max(largest, size);
      // Even sizes may pass the target per thread, by less than a unit.
      EXPECT_LT(static_cast<size_t>(size - 1) * c.unit_bytes, kChunkBytesPerThread * static_cast<size_t>(c.threads));
    }
    EXPECT_GE(smallest, 1);
    // The fewest such chunks: one fewer would average more than the target.
    if (k.count > 1) {
      EXPECT_GT(static_cast<size_t>(c.units) * c.unit_bytes, static_cast<size_t>(k.count - 1) * kChunkBytesPerThread *
                                                                  static_cast<size_t>(c.threads));
    }
    EXPECT_LE(largest - smallest, 1);
    EXPECT_EQ(k.largest(), largest);
  }
}

// Calls of a multiple of `multiple` rows over chunks of whole units: each row, gathered as its own
// index, reaches the kernel once, in order, at its place; every call but a frame's last is a
// multiple; fewer than a multiple of rows wait for the next chunk; the gather writes only within
// frame_call_rows, never more than the frame's rows; a prepare pass (no buffer) makes the same
// calls. A multiple of the whole frame (0 below: Kernel::whole_frame_calls) makes one call.
TEST(FrameCalls, EveryRowOnceInOrderInCallsOfTheMultiple) {
  constexpr size_t kValues = 3;  // values a row: the row's index, then two more
  int cases = 0;
  for (const size_t multiple_or_frame : {size_t{1}, size_t{8}, size_t{64}, size_t{0}}) {
    for (const int64_t units : {1, 2, 5, 26}) {
      for (const size_t rows_per_unit : {size_t{3}, size_t{184}, size_t{64}}) {
        for (const int64_t count : {int64_t{1}, int64_t{2}, int64_t{3}, units}) {
          const Chunking c{units, std::clamp<int64_t>(count, 1, units)};
          const size_t frame = static_cast<size_t>(units) * rows_per_unit;
          const size_t multiple = multiple_or_frame == 0 ? frame : multiple_or_frame;
          SCOPED_TRACE(testing::Message() << "multiple " << multiple << ", " << units << " units of " << rows_per_unit
                                          << " rows in " << c.count << " chunks");
          EXPECT_LE(frame_call_rows(c, rows_per_unit, multiple), frame);
          std::vector<int64_t> buffer(frame_call_rows(c, rows_per_unit, multiple) * kValues, -1);
          const auto gather = [&](int64_t begin, int64_t end, int64_t* rows) {
            ASSERT_GE(rows, buffer.data());
            EXPECT_LT(static_cast<size_t>(rows - buffer.data()) / kValues, multiple) << "rows held back past a multiple";
            ASSERT_LE(rows + static_cast<size_t>(end - begin) * rows_per_unit * kValues, buffer.data() + buffer.size());
            for (size_t r = 0; r < static_cast<size_t>(end - begin) * rows_per_unit; ++r) {
              for (size_t v = 0; v < kValues; ++v) {
                rows[r * kValues + v] = static_cast<int64_t>((static_cast<size_t>(begin) * rows_per_unit + r) * kValues + v);
              }
            }
          };
          std::vector<std::pair<size_t, size_t>> calls;
          const auto call = [&](size_t first, size_t n, const int64_t* rows) -> Status {
            for (size_t i = 0; rows != nullptr && i < n * kValues; ++i) {
              EXPECT_EQ(rows[i], static_cast<int64_t>(first * kValues + i)) << "call at row " << first;
            }
            calls.emplace_back(first, n);
            return {};
          };
          ASSERT_TRUE(frame_calls(c, rows_per_unit, multiple, buffer.data(), kValues, gather, call).ok());
          size_t next = 0;
          for (size_t i = 0; i < calls.size(); ++i) {
            EXPECT_EQ(calls[i].first, next);
            EXPECT_GT(calls[i].second, 0u);
            if (i + 1 < calls.size()) {
              EXPECT_EQ(calls[i].second % multiple, 0u) << "call " << i;
            }
            next += calls[i].second;
          }
          EXPECT_EQ(next, frame);
          if (multiple == frame) {
            EXPECT_EQ(calls.size(), 1u) << "a whole frame's rows in one call";
          }
          const std::vector<std::pair<size_t, size_t>> run = calls;
          calls.clear();
          ASSERT_TRUE(frame_calls(c, rows_per_unit, multiple, static_cast<int64_t*>(nullptr), kValues, gather, call).ok());
          EXPECT_EQ(calls, run) << "the prepare pass";
          ++cases;
        }
      }
    }
  }
  EXPECT_EQ(cases, 4 * 4 * 3 * 4);
}

}  // namespace
}  // namespace patchfuse
