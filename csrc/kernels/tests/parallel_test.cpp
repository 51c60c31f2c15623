#include "kernels/runtime/parallel.h"

#include <gtest/gtest.h>

#include <atomic>
#include <numeric>
#include <stdexcept>
#include <vector>

namespace openneuron::kernels {
namespace {

TEST(ParallelFor, CoversEveryIndexExactlyOnce) {
  for (int64_t size : {0, 1, 7, 1000, 100003}) {
    std::vector<std::atomic<int>> hits(size);
    parallel_for(0, size, 16, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) hits[i].fetch_add(1);
    });
    for (int64_t i = 0; i < size; ++i)
      ASSERT_EQ(hits[i].load(), 1) << "size " << size << " index " << i;
  }
}

TEST(ParallelFor, SmallRangesRunInlineAsOneChunk) {
  int calls = 0;
  parallel_for(10, 20, 100, [&](int64_t begin, int64_t end) {
    ++calls;
    EXPECT_EQ(begin, 10);
    EXPECT_EQ(end, 20);
  });
  EXPECT_EQ(calls, 1);
}

TEST(ParallelFor, NestedCallsRunInline) {
  std::atomic<int64_t> total{0};
  parallel_for(0, 64, 1, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      parallel_for(0, 100, 1, [&](int64_t b, int64_t e) { total.fetch_add(e - b); });
    }
  });
  EXPECT_EQ(total.load(), 64 * 100);
}

TEST(ParallelFor, RethrowsAnExceptionFromAChunk) {
  EXPECT_THROW(parallel_for(0, 1000, 1,
                            [](int64_t begin, int64_t) {
                              if (begin == 0) throw std::runtime_error("chunk failed");
                            }),
               std::runtime_error);
  // The pool stays usable afterwards.
  std::atomic<int64_t> count{0};
  parallel_for(0, 1000, 1, [&](int64_t b, int64_t e) { count.fetch_add(e - b); });
  EXPECT_EQ(count.load(), 1000);
}

}  // namespace
}  // namespace openneuron::kernels
