#include "kernels/runtime/parallel.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <numeric>
#include <stdexcept>
#include <thread>
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

// Regions started back to back from several threads (as several streams start them), tiny
// and larger, with and without pauses that let workers fall asleep: a chunk a worker claims
// late, or one the caller takes over from it, still runs exactly once per region.
TEST(ParallelFor, ChunksRunOncePerRegionWhoeverClaimsThem) {
  constexpr int kCallers = 3;
  constexpr int kRegions = 1500;
  std::atomic<int> wrong{0};
  std::atomic<int> finished{0};
  std::vector<std::thread> callers;
  for (int c = 0; c < kCallers; ++c) {
    callers.emplace_back([&, c] {
      std::vector<std::atomic<int>> hits(4096);
      for (int r = 0; r < kRegions; ++r) {
        const int64_t size = 2 + (r * 37 + c * 11) % 4000;
        for (int64_t i = 0; i < size; ++i) hits[i].store(0, std::memory_order_relaxed);
        parallel_for(0, size, 1, [&](int64_t begin, int64_t end) {
          for (int64_t i = begin; i < end; ++i) hits[i].fetch_add(1, std::memory_order_relaxed);
        });
        for (int64_t i = 0; i < size; ++i) {
          if (hits[i].load(std::memory_order_relaxed) != 1) wrong.fetch_add(1);
        }
        if (r % 100 == c) std::this_thread::sleep_for(std::chrono::microseconds(200));
      }
      finished.fetch_add(1);
    });
  }
  // A chunk run twice (or never) can also leave its region waiting forever: fail, not hang.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  while (finished.load() < kCallers) {
    if (std::chrono::steady_clock::now() > deadline) {
      std::fprintf(stderr, "parallel_for regions never finished: chunks lost or run twice\n");
      std::_Exit(1);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  for (std::thread& caller : callers) caller.join();
  EXPECT_EQ(wrong.load(), 0);
}

}  // namespace
}  // namespace openneuron::kernels
