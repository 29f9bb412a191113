// How a run cuts a frame into chunks (runtime/session/chunking.h): the fewest chunks that average
// no more than the target per thread, sizes differing by at most one unit, every unit once.
#include "runtime/session/chunking.h"

#include <gtest/gtest.h>

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

}  // namespace
}  // namespace patchfuse
