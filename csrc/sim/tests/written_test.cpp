// The written-state of a buffer: rectangles while they describe it, a bitmap after; both must
// answer exactly which bytes were written.
#include "sim/written.h"

#include <gtest/gtest.h>

#include <random>
#include <vector>

namespace openneuron::sim {
namespace {

TEST(WrittenMap, BlocksMergeAndGapsAreSeen) {
  WrittenMap map(128, 4096);
  EXPECT_FALSE(map.covered(0, 128, 0, 4));
  map.mark(0, 128, 0, 2048);     // left half of every partition
  map.mark(0, 128, 2048, 4096);  // right half
  EXPECT_TRUE(map.covered(0, 128, 0, 4096));
  map.clear();
  map.mark(0, 64, 0, 4096);  // top half, then the bottom one but for its last byte
  map.mark(64, 128, 0, 4095);
  EXPECT_TRUE(map.covered(0, 128, 0, 4095));
  EXPECT_FALSE(map.covered(0, 128, 0, 4096));
  EXPECT_FALSE(map.covered(127, 128, 4095, 4096));
  EXPECT_TRUE(map.covered(63, 64, 4095, 4096));
  map.clear();
  map.mark(0, 8, 0, 10);  // adjacent pieces merge into one rectangle, no wider
  map.mark(0, 8, 10, 20);
  map.mark(8, 16, 0, 20);
  EXPECT_TRUE(map.covered(0, 16, 0, 20));
  EXPECT_FALSE(map.covered(0, 8, 0, 21));
  EXPECT_FALSE(map.covered(0, 17, 0, 20));
}

// The gaps of a few rectangles (no bitmap yet): between, before and after them.
TEST(WrittenMap, UnwrittenRangesOfRectangles) {
  WrittenMap map(4, 100);
  map.mark(0, 4, 10, 20);
  map.mark(0, 2, 30, 40);
  map.mark(0, 4, 15, 25);  // overlaps the first: merged
  using Ranges = std::vector<std::pair<int64_t, int64_t>>;
  EXPECT_EQ(map.unwritten(0), (Ranges{{0, 10}, {25, 30}, {40, 100}}));
  EXPECT_EQ(map.unwritten(3), (Ranges{{0, 10}, {25, 100}}));
  map.mark(3, 4, 0, 100);
  EXPECT_EQ(map.unwritten(3), Ranges{});
}

// Random rectangles against a byte-per-byte model, through the switch to the bitmap.
TEST(WrittenMap, AgreesWithAByteModel) {
  std::mt19937 random(7);
  const int64_t rows = 16, bytes = 200;
  for (int trial = 0; trial < 20; ++trial) {
    WrittenMap map(rows, bytes);
    std::vector<char> model(rows * bytes, 0);
    for (int step = 0; step < 40; ++step) {
      // Half the rectangles span whole row blocks, so merges along rows and bytes happen.
      int64_t r0 = random() % rows, r1 = r0 + 1 + random() % (rows - r0);
      if (random() % 2) {
        r0 = (random() % 2) * 8;
        r1 = r0 + 8;
      }
      const int64_t lo = random() % bytes, hi = lo + 1 + random() % (bytes - lo);
      if (random() % 2) {
        map.mark(r0, r1, lo, hi);
        for (int64_t r = r0; r < r1; ++r)
          for (int64_t b = lo; b < hi; ++b) model[r * bytes + b] = 1;
      } else {
        bool expected = true;
        for (int64_t r = r0; r < r1; ++r)
          for (int64_t b = lo; b < hi; ++b) expected = expected && model[r * bytes + b];
        ASSERT_EQ(map.covered(r0, r1, lo, hi), expected) << "trial " << trial << " step " << step;
      }
    }
    // unwritten() lists exactly the model's zero bytes, as maximal ranges.
    for (int64_t r = 0; r < rows; ++r) {
      std::vector<char> listed(bytes, 1);
      int64_t previous_end = -1;
      for (const auto& [low, high] : map.unwritten(r)) {
        ASSERT_LT(low, high);
        ASSERT_GT(low, previous_end) << "ranges are ordered and not adjacent";
        previous_end = high;
        for (int64_t b = low; b < high; ++b) listed[b] = 0;
      }
      for (int64_t b = 0; b < bytes; ++b)
        ASSERT_EQ(listed[b], model[r * bytes + b]) << "trial " << trial << " row " << r;
    }
  }
}

}  // namespace
}  // namespace openneuron::sim
