#include "runtime/caching_allocator.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "runtime/errors.h"
#include "runtime/stream.h"
#include "runtime/tests/test_helpers.h"

namespace openneuron::runtime {
namespace {

using testing::becomes_true_within;
using testing::Gate;
using testing::OpenLater;

constexpr uint64_t kMiB = uint64_t{1} << 20;
constexpr uint64_t kGiB = uint64_t{1} << 30;

// Streams are declared before the allocator so that the allocator, which remembers which
// stream each cached block belongs to, goes away first.
class CachingAllocatorTest : public ::testing::Test {
 protected:
  Stream stream_a_{0, 1, false};
  Stream stream_b_{0, 2, false};
};

uintptr_t address(const void* ptr) { return reinterpret_cast<uintptr_t>(ptr); }

// Checks that each counter's "all pools" entry is the sum of the small and large pools and
// that no current value went negative.
void expect_pools_add_up(const MemoryStats& stats) {
  const std::pair<const char*, const StatArray*> arrays[] = {
      {"allocation", &stats.allocation},
      {"segment", &stats.segment},
      {"active", &stats.active},
      {"allocated_bytes", &stats.allocated_bytes},
      {"reserved_bytes", &stats.reserved_bytes},
      {"active_bytes", &stats.active_bytes},
      {"requested_bytes", &stats.requested_bytes}};
  for (const auto& [name, array] : arrays) {
    const StatArray& stat = *array;
    EXPECT_EQ(stat[kAllPools].current, stat[kSmallPool].current + stat[kLargePool].current) << name;
    EXPECT_EQ(stat[kAllPools].allocated, stat[kSmallPool].allocated + stat[kLargePool].allocated)
        << name;
    EXPECT_EQ(stat[kAllPools].freed, stat[kSmallPool].freed + stat[kLargePool].freed) << name;
    for (int pool : {kAllPools, kSmallPool, kLargePool}) {
      EXPECT_GE(stat[pool].current, 0) << name << " pool " << pool;
      EXPECT_GE(stat[pool].peak, stat[pool].current) << name << " pool " << pool;
      EXPECT_EQ(stat[pool].current, stat[pool].allocated - stat[pool].freed)
          << name << " pool " << pool;
    }
  }
}

// Checks that nothing is allocated or active, in any pool.
void expect_nothing_live(const MemoryStats& stats) {
  for (int pool : {kAllPools, kSmallPool, kLargePool}) {
    EXPECT_EQ(stats.allocation[pool].current, 0) << "pool " << pool;
    EXPECT_EQ(stats.active[pool].current, 0) << "pool " << pool;
    EXPECT_EQ(stats.allocated_bytes[pool].current, 0) << "pool " << pool;
    EXPECT_EQ(stats.active_bytes[pool].current, 0) << "pool " << pool;
    EXPECT_EQ(stats.requested_bytes[pool].current, 0) << "pool " << pool;
  }
}

TEST_F(CachingAllocatorTest, BlocksAre64ByteAlignedAndWritable) {
  CachingAllocator allocator(0, kGiB);
  std::vector<void*> blocks;
  for (size_t bytes : {size_t{1}, size_t{7}, size_t{64}, size_t{513}, size_t{4095}, size_t{kMiB},
                       size_t{kMiB + 3}, size_t{5 * kMiB + 1}}) {
    void* ptr = allocator.allocate(bytes, stream_a_);
    ASSERT_NE(ptr, nullptr) << bytes;
    EXPECT_EQ(address(ptr) % 64, 0u) << bytes;
    std::memset(ptr, 0xab, bytes);  // ASAN checks the whole request is backed
    blocks.push_back(ptr);
  }
  for (void* ptr : blocks) allocator.free(ptr);
}

TEST_F(CachingAllocatorTest, ZeroBytesGiveNullAndChangeNothing) {
  CachingAllocator allocator(0, kGiB);
  EXPECT_EQ(allocator.allocate(0, stream_a_), nullptr);
  allocator.free(nullptr);  // a no-op, like std::free
  MemoryStats stats = allocator.stats();
  EXPECT_EQ(stats.allocation[kAllPools].allocated, 0);
  EXPECT_EQ(stats.reserved_bytes[kAllPools].current, 0);
  EXPECT_EQ(stats.num_device_alloc, 0);
}

TEST_F(CachingAllocatorTest, ReleaseFreesOnlyItsOwnPointersAndSaysWhatItFreed) {
  CachingAllocator mine(0, kGiB), other(1, kGiB);
  void* block = mine.allocate(1000, stream_b_);
  int64_t inside = 0;
  EXPECT_FALSE(other.release(block)) << "another device's pointer";
  EXPECT_FALSE(mine.release(static_cast<char*>(block) + 64)) << "an interior pointer";
  EXPECT_FALSE(mine.release(&inside)) << "host memory";
  EXPECT_FALSE(mine.release(nullptr));
  CachingAllocator::Freed freed;
  ASSERT_TRUE(mine.release(block, &freed));
  EXPECT_EQ(freed.requested, 1000u);
  EXPECT_EQ(freed.stream, stream_b_.id());
  EXPECT_FALSE(mine.release(block)) << "already freed";
  expect_nothing_live(mine.stats());
  expect_pools_add_up(mine.stats());
}

TEST_F(CachingAllocatorTest, FreedBlockIsReusedOnTheSameStream) {
  CachingAllocator allocator(0, kGiB);
  void* first = allocator.allocate(1000, stream_a_);
  allocator.free(first);
  void* second = allocator.allocate(1000, stream_a_);
  EXPECT_EQ(second, first);
  EXPECT_EQ(allocator.stats().num_device_alloc, 1);
  allocator.free(second);

  void* large = allocator.allocate(3 * kMiB, stream_a_);
  allocator.free(large);
  EXPECT_EQ(allocator.allocate(3 * kMiB - 100, stream_a_), large) << "a near size should reuse too";
  allocator.free(large);
}

TEST_F(CachingAllocatorTest, FreedBlockIsNotReusedOnAnotherStream) {
  CachingAllocator allocator(0, kGiB);
  void* on_a = allocator.allocate(1000, stream_a_);
  allocator.free(on_a);
  void* on_b = allocator.allocate(1000, stream_b_);
  EXPECT_NE(on_b, on_a);
  EXPECT_EQ(allocator.stats().num_device_alloc, 2);
  allocator.free(on_b);
  EXPECT_EQ(allocator.allocate(1000, stream_a_), on_a);  // still cached for stream A
  allocator.free(on_a);
}

TEST_F(CachingAllocatorTest, BlocksKeepTheirPlacesThroughManyReuses) {
  // Freed and reused again and again (as every op's small output is), on two streams, the
  // blocks keep being found by address (owns, blocks) and by stream and size (reuse).
  CachingAllocator allocator(0, kGiB);
  struct Use {
    size_t bytes;
    Stream* stream;
    void* ptr;
  } uses[] = {{1000, &stream_a_, nullptr},
              {5000, &stream_b_, nullptr},
              {3000, &stream_a_, nullptr},
              {3 * kMiB, &stream_b_, nullptr}};
  for (auto& use : uses) use.ptr = allocator.allocate(use.bytes, *use.stream);
  for (int round = 0; round < 50; ++round) {
    for (int k : {2, 0, 3, 1}) {
      allocator.free(uses[k].ptr);
      EXPECT_FALSE(allocator.owns(uses[k].ptr)) << "round " << round;
    }
    for (int k : {1, 3, 0, 2}) {
      EXPECT_EQ(allocator.allocate(uses[k].bytes, *uses[k].stream), uses[k].ptr)
          << "round " << round << " use " << k;
      EXPECT_TRUE(allocator.owns(static_cast<char*>(uses[k].ptr) + 10));
    }
  }
  EXPECT_EQ(allocator.stats().num_device_alloc, 4);
  EXPECT_EQ(allocator.blocks().size(), 4u);
  expect_pools_add_up(allocator.stats());
  for (auto& use : uses) allocator.free(use.ptr);
  expect_nothing_live(allocator.stats());
}

TEST_F(CachingAllocatorTest, SmallRequestDoesNotTakeAMuchLargerBlock) {
  CachingAllocator allocator(0, kGiB);
  void* big = allocator.allocate(64 * 1024, stream_a_);
  allocator.free(big);
  void* small = allocator.allocate(512, stream_a_);
  EXPECT_NE(small, big);
  allocator.free(small);
}

TEST_F(CachingAllocatorTest, StatsFollowAllocateAndFree) {
  CachingAllocator allocator(0, kGiB);
  void* small = allocator.allocate(1000, stream_a_);      // small pool, rounded to 1024
  void* large = allocator.allocate(3 * kMiB, stream_a_);  // large pool, exactly 3 MiB
  MemoryStats stats = allocator.stats();
  EXPECT_EQ(stats.allocation[kAllPools].current, 2);
  EXPECT_EQ(stats.allocation[kSmallPool].current, 1);
  EXPECT_EQ(stats.allocation[kLargePool].current, 1);
  EXPECT_EQ(stats.allocated_bytes[kAllPools].current, static_cast<int64_t>(1024 + 3 * kMiB));
  EXPECT_EQ(stats.allocated_bytes[kSmallPool].current, 1024);
  EXPECT_EQ(stats.reserved_bytes[kAllPools].current, static_cast<int64_t>(1024 + 3 * kMiB));
  EXPECT_EQ(stats.segment[kAllPools].current, 2);
  EXPECT_EQ(stats.active[kAllPools].current, 2);
  EXPECT_EQ(stats.active_bytes[kLargePool].current, static_cast<int64_t>(3 * kMiB));
  EXPECT_EQ(stats.requested_bytes[kAllPools].current, static_cast<int64_t>(1000 + 3 * kMiB));
  EXPECT_EQ(stats.requested_bytes[kSmallPool].current, 1000);
  EXPECT_EQ(stats.num_device_alloc, 2);
  expect_pools_add_up(stats);

  allocator.free(small);
  stats = allocator.stats();
  EXPECT_EQ(stats.allocation[kAllPools].current, 1);
  EXPECT_EQ(stats.allocation[kSmallPool].current, 0);
  EXPECT_EQ(stats.allocation[kSmallPool].peak, 1);
  EXPECT_EQ(stats.allocated_bytes[kAllPools].current, static_cast<int64_t>(3 * kMiB));
  EXPECT_EQ(stats.active[kSmallPool].current, 0);
  EXPECT_EQ(stats.reserved_bytes[kAllPools].current, static_cast<int64_t>(1024 + 3 * kMiB))
      << "a freed block stays reserved in the cache";
  EXPECT_EQ(stats.requested_bytes[kSmallPool].current, 0);
  EXPECT_EQ(stats.requested_bytes[kSmallPool].peak, 1000);
  EXPECT_EQ(stats.requested_bytes[kSmallPool].allocated, 1000);
  EXPECT_EQ(stats.requested_bytes[kSmallPool].freed, 1000);
  EXPECT_EQ(stats.requested_bytes[kAllPools].freed, 1000);
  expect_pools_add_up(stats);

  // Reusing the cached block counts the new request, not the old one.
  void* reused = allocator.allocate(900, stream_a_);
  ASSERT_EQ(reused, small);
  stats = allocator.stats();
  EXPECT_EQ(stats.num_device_alloc, 2);
  EXPECT_EQ(stats.allocated_bytes[kSmallPool].current, 1024);
  EXPECT_EQ(stats.requested_bytes[kSmallPool].current, 900);
  EXPECT_EQ(stats.requested_bytes[kSmallPool].peak, 1000);
  EXPECT_EQ(stats.requested_bytes[kSmallPool].allocated, 1900);
  EXPECT_EQ(stats.allocation[kAllPools].allocated, 3);
  EXPECT_EQ(stats.allocation[kAllPools].peak, 2);
  expect_pools_add_up(stats);

  allocator.free(reused);
  allocator.free(large);
  stats = allocator.stats();
  expect_nothing_live(stats);
  EXPECT_EQ(stats.requested_bytes[kAllPools].peak, static_cast<int64_t>(1000 + 3 * kMiB));
  EXPECT_EQ(stats.requested_bytes[kLargePool].freed, static_cast<int64_t>(3 * kMiB));
  EXPECT_EQ(stats.segment[kAllPools].current, 2);
  expect_pools_add_up(stats);
}

TEST_F(CachingAllocatorTest, PoolStatsStayConsistentAtThePoolBoundary) {
  // 1 MiB + 1 byte rounds to a 1.125 MiB large block; a later 1 MiB request belongs to the
  // small pool. Whatever block serves it, its bytes must leave the pool they entered.
  CachingAllocator allocator(0, kGiB);
  void* large = allocator.allocate(kMiB + 1, stream_a_);
  allocator.free(large);
  void* boundary = allocator.allocate(kMiB, stream_a_);
  MemoryStats stats = allocator.stats();
  expect_pools_add_up(stats);
  EXPECT_EQ(stats.allocation[kSmallPool].current, 1);
  EXPECT_EQ(stats.requested_bytes[kSmallPool].current, static_cast<int64_t>(kMiB));
  allocator.free(boundary);
  stats = allocator.stats();
  expect_pools_add_up(stats);
  expect_nothing_live(stats);
  allocator.empty_cache();
  stats = allocator.stats();
  expect_pools_add_up(stats);
  EXPECT_EQ(stats.reserved_bytes[kAllPools].current, 0);
}

TEST_F(CachingAllocatorTest, ResetPeakStatsLowersPeaksToCurrent) {
  CachingAllocator allocator(0, kGiB);
  void* kept = allocator.allocate(2048, stream_a_);
  void* dropped = allocator.allocate(4096, stream_a_);
  allocator.free(dropped);
  MemoryStats before = allocator.stats();
  EXPECT_EQ(before.allocated_bytes[kAllPools].peak, 2048 + 4096);
  allocator.reset_peak_stats();
  MemoryStats after = allocator.stats();
  EXPECT_EQ(after.allocated_bytes[kAllPools].peak, 2048);
  EXPECT_EQ(after.allocation[kAllPools].peak, 1);
  EXPECT_EQ(after.requested_bytes[kSmallPool].peak, 2048);
  EXPECT_EQ(after.reserved_bytes[kAllPools].peak, 2048 + 4096);  // still reserved: peak == current
  EXPECT_EQ(after.allocated_bytes[kAllPools].allocated, before.allocated_bytes[kAllPools].allocated)
      << "resetting peaks must leave the running totals alone";
  allocator.free(kept);
}

TEST_F(CachingAllocatorTest, ResetAccumulatedStatsClearsTotalsButNotCurrent) {
  CachingAllocator allocator(0, 4 * kMiB);
  void* kept = allocator.allocate(2048, stream_a_);
  void* dropped = allocator.allocate(3 * kMiB, stream_a_);
  allocator.free(dropped);
  EXPECT_THROW(allocator.allocate(8 * kMiB, stream_a_), OutOfMemoryError);
  allocator.reset_accumulated_stats();
  MemoryStats stats = allocator.stats();
  for (int pool : {kAllPools, kSmallPool, kLargePool}) {
    EXPECT_EQ(stats.allocation[pool].allocated, 0);
    EXPECT_EQ(stats.allocation[pool].freed, 0);
    EXPECT_EQ(stats.requested_bytes[pool].allocated, 0);
    EXPECT_EQ(stats.segment[pool].freed, 0);
  }
  EXPECT_EQ(stats.num_alloc_retries, 0);
  EXPECT_EQ(stats.num_ooms, 0);
  EXPECT_EQ(stats.num_device_alloc, 0);
  EXPECT_EQ(stats.num_device_free, 0);
  EXPECT_EQ(stats.num_sync_all_streams, 0);
  EXPECT_EQ(stats.allocation[kAllPools].current, 1);
  EXPECT_EQ(stats.allocated_bytes[kAllPools].current, 2048);
  EXPECT_EQ(stats.allocated_bytes[kAllPools].peak, static_cast<int64_t>(2048 + 3 * kMiB));
  allocator.free(kept);
}

TEST_F(CachingAllocatorTest, EmptyCacheReturnsAllReservedMemory) {
  CachingAllocator allocator(0, kGiB);
  std::vector<void*> blocks;
  for (size_t bytes : {size_t{100}, size_t{5000}, size_t{2 * kMiB}, size_t{9 * kMiB}}) {
    blocks.push_back(allocator.allocate(bytes, stream_a_));
    blocks.push_back(allocator.allocate(bytes, stream_b_));
  }
  for (void* ptr : blocks) allocator.free(ptr);
  EXPECT_GT(allocator.stats().reserved_bytes[kAllPools].current, 0);

  allocator.empty_cache();
  MemoryStats stats = allocator.stats();
  for (int pool : {kAllPools, kSmallPool, kLargePool}) {
    EXPECT_EQ(stats.reserved_bytes[pool].current, 0) << "pool " << pool;
    EXPECT_EQ(stats.segment[pool].current, 0) << "pool " << pool;
  }
  EXPECT_EQ(stats.num_device_free, 8);
  EXPECT_EQ(allocator.free_bytes(), kGiB);
  expect_nothing_live(stats);
  expect_pools_add_up(stats);
}

TEST_F(CachingAllocatorTest, EmptyCacheKeepsLiveBlocks) {
  CachingAllocator allocator(0, kGiB);
  void* live = allocator.allocate(5000, stream_a_);
  void* cached = allocator.allocate(7000, stream_a_);
  allocator.free(cached);
  allocator.empty_cache();
  MemoryStats stats = allocator.stats();
  EXPECT_EQ(stats.reserved_bytes[kAllPools].current, 5120);
  EXPECT_EQ(stats.allocation[kAllPools].current, 1);
  EXPECT_TRUE(allocator.owns(live));
  std::memset(live, 1, 5000);  // still backed
  allocator.free(live);
}

TEST_F(CachingAllocatorTest, EmptyCacheWaitsForWorkStillUsingFreedBlocks) {
  CachingAllocator allocator(0, kGiB);
  Gate gate;
  std::atomic<bool> write_done{false};
  auto* block = static_cast<char*>(allocator.allocate(4096, stream_a_));
  stream_a_.enqueue("gated", gate.waiter());
  stream_a_.enqueue("write", [&, block] {
    std::memset(block, 7, 4096);  // ASAN reports a use-after-free here if empty_cache did not wait
    write_done = true;
  });
  allocator.free(block);  // legal: stream A's later work is ordered before any reuse
  {
    OpenLater opener(gate);
    allocator.empty_cache();
    EXPECT_TRUE(write_done) << "empty_cache returned memory that queued work still writes";
  }
  EXPECT_EQ(allocator.stats().reserved_bytes[kAllPools].current, 0);
}

TEST_F(CachingAllocatorTest, OutOfMemoryReportsRequestedFreeAndCapacity) {
  CachingAllocator allocator(3, 4 * kMiB);
  void* live = allocator.allocate(3 * kMiB, stream_a_);
  try {
    allocator.allocate(2 * kMiB, stream_a_);
    FAIL() << "2 MiB fit into the 1 MiB left";
  } catch (const OutOfMemoryError& error) {
    EXPECT_EQ(error.requested, 2 * kMiB);
    EXPECT_EQ(error.free_bytes, 1 * kMiB);
    EXPECT_EQ(error.capacity, 4 * kMiB);
    std::string message = error.what();
    EXPECT_NE(message.find("neuron:3"), std::string::npos) << message;
    EXPECT_NE(message.find(std::to_string(2 * kMiB)), std::string::npos) << message;
    EXPECT_NE(message.find(std::to_string(1 * kMiB)), std::string::npos) << message;
    EXPECT_NE(message.find(std::to_string(4 * kMiB)), std::string::npos) << message;
    EXPECT_NE(message.find("OPENNEURON_HBM_BYTES"), std::string::npos) << message;
  }
  MemoryStats stats = allocator.stats();
  EXPECT_EQ(stats.num_ooms, 1);
  EXPECT_EQ(stats.allocation[kAllPools].current, 1);
  EXPECT_EQ(stats.reserved_bytes[kAllPools].current, static_cast<int64_t>(3 * kMiB));
  expect_pools_add_up(stats);

  // What still fits, fits.
  void* fits = allocator.allocate(kMiB, stream_a_);
  ASSERT_NE(fits, nullptr);
  stats = allocator.stats();
  EXPECT_EQ(stats.allocation[kAllPools].current, 2);
  EXPECT_EQ(stats.reserved_bytes[kAllPools].current, static_cast<int64_t>(4 * kMiB));
  EXPECT_EQ(allocator.free_bytes(), 0u);
  EXPECT_EQ(stats.num_ooms, 1);
  expect_pools_add_up(stats);
  allocator.free(fits);
  allocator.free(live);
}

TEST_F(CachingAllocatorTest, OutOfMemoryOnAnEmptyDevice) {
  CachingAllocator allocator(0, 4 * kMiB);
  try {
    allocator.allocate(5 * kMiB, stream_a_);
    FAIL() << "5 MiB fit into 4 MiB";
  } catch (const OutOfMemoryError& error) {
    EXPECT_EQ(error.requested, 5 * kMiB);
    EXPECT_EQ(error.free_bytes, 4 * kMiB);
    EXPECT_EQ(error.capacity, 4 * kMiB);
  }
  EXPECT_EQ(allocator.stats().num_ooms, 1);
  EXPECT_EQ(allocator.stats().reserved_bytes[kAllPools].current, 0);
  void* ptr = allocator.allocate(4 * kMiB, stream_a_);  // exactly the capacity
  EXPECT_NE(ptr, nullptr);
  allocator.free(ptr);
  expect_pools_add_up(allocator.stats());
}

TEST_F(CachingAllocatorTest, OutOfMemoryReleasesTheCacheFirst) {
  // Cached blocks count against capacity; a failing allocation still leaves them released
  // and the statistics matching what is actually held.
  CachingAllocator allocator(0, 4 * kMiB);
  void* cached = allocator.allocate(2 * kMiB, stream_a_);
  allocator.free(cached);
  EXPECT_THROW(allocator.allocate(5 * kMiB, stream_a_), OutOfMemoryError);
  MemoryStats stats = allocator.stats();
  EXPECT_EQ(stats.num_alloc_retries, 1);
  EXPECT_EQ(stats.num_ooms, 1);
  EXPECT_EQ(stats.reserved_bytes[kAllPools].current, 0);
  EXPECT_EQ(stats.segment[kAllPools].current, 0);
  expect_nothing_live(stats);
  expect_pools_add_up(stats);
}

TEST_F(CachingAllocatorTest, RetryReleasesCachedBlocksToMakeRoom) {
  CachingAllocator allocator(0, 4 * kMiB);
  void* on_a = allocator.allocate(3 * kMiB, stream_a_);
  allocator.free(on_a);  // cached for stream A, still reserved
  EXPECT_EQ(allocator.stats().num_alloc_retries, 0);

  void* on_b = nullptr;
  ASSERT_NO_THROW(on_b = allocator.allocate(3 * kMiB, stream_b_));
  ASSERT_NE(on_b, nullptr);
  MemoryStats stats = allocator.stats();
  EXPECT_EQ(stats.num_alloc_retries, 1);
  EXPECT_EQ(stats.num_ooms, 0);
  EXPECT_EQ(stats.num_device_free, 1);
  EXPECT_EQ(stats.num_device_alloc, 2);
  EXPECT_EQ(stats.reserved_bytes[kAllPools].current, static_cast<int64_t>(3 * kMiB));
  EXPECT_EQ(stats.segment[kAllPools].current, 1);
  expect_pools_add_up(stats);
  allocator.free(on_b);
}

TEST_F(CachingAllocatorTest, RetryWaitsForWorkStillUsingCachedBlocks) {
  CachingAllocator allocator(0, 4 * kMiB);
  Gate gate;
  std::atomic<bool> write_done{false};
  auto* block = static_cast<char*>(allocator.allocate(3 * kMiB, stream_a_));
  stream_a_.enqueue("gated", gate.waiter());
  stream_a_.enqueue("write", [&, block] {
    std::memset(block, 7, 3 * kMiB);
    write_done = true;
  });
  allocator.free(block);
  {
    OpenLater opener(gate);
    void* on_b = allocator.allocate(3 * kMiB, stream_b_);
    EXPECT_TRUE(write_done) << "the retry released memory that queued work still writes";
    allocator.free(on_b);
  }
}

TEST_F(CachingAllocatorTest, RecordStreamDefersReuseUntilTheOtherStreamCatchesUp) {
  CachingAllocator allocator(0, kGiB);
  Gate gate;
  void* block = allocator.allocate(4096, stream_a_);
  stream_b_.enqueue("gated_use_on_b", gate.waiter());  // stands for a kernel reading the block
  allocator.record_stream(block, stream_b_);
  allocator.free(block);

  MemoryStats stats = allocator.stats();
  EXPECT_EQ(stats.allocation[kAllPools].current, 0);
  EXPECT_EQ(stats.active[kAllPools].current, 1) << "a block awaiting another stream stays active";

  void* while_pending = allocator.allocate(4096, stream_a_);
  EXPECT_NE(while_pending, block) << "reused while stream B's work could still read it";
  EXPECT_EQ(allocator.stats().active[kAllPools].current, 2);

  gate.open();
  stream_b_.synchronize();
  void* after_catch_up = allocator.allocate(4096, stream_a_);
  EXPECT_EQ(after_catch_up, block);
  allocator.free(while_pending);
  allocator.free(after_catch_up);
  stats = allocator.stats();
  expect_nothing_live(stats);
  expect_pools_add_up(stats);
  EXPECT_FALSE(gate.timed_out());
}

TEST_F(CachingAllocatorTest, RecordStreamOnTheOwningStreamChangesNothing) {
  CachingAllocator allocator(0, kGiB);
  void* block = allocator.allocate(4096, stream_a_);
  allocator.record_stream(block, stream_a_);
  allocator.free(block);
  EXPECT_EQ(allocator.allocate(4096, stream_a_), block);
  allocator.free(block);
}

TEST_F(CachingAllocatorTest, RecordStreamAcceptsInteriorPointers) {
  CachingAllocator allocator(0, kGiB);
  Gate gate;
  auto* block = static_cast<char*>(allocator.allocate(4096, stream_a_));
  stream_b_.enqueue("gated_use_on_b", gate.waiter());
  allocator.record_stream(block + 1000, stream_b_);  // a view into the middle of the block
  allocator.free(block);
  void* while_pending = allocator.allocate(4096, stream_a_);
  EXPECT_NE(while_pending, block);
  gate.open();
  stream_b_.synchronize();
  allocator.free(while_pending);
}

TEST_F(CachingAllocatorTest, RecordStreamIgnoresPointersOutsideEveryBlock) {
  CachingAllocator allocator(0, kGiB);
  Gate gate;
  void* block = allocator.allocate(4096, stream_a_);
  stream_b_.enqueue("gated", gate.waiter());
  // An address past the end of the only live block belongs to no block at all.
  allocator.record_stream(reinterpret_cast<void*>(address(block) + 64 * kMiB), stream_b_);
  allocator.free(block);
  EXPECT_EQ(allocator.allocate(4096, stream_a_), block)
      << "a stray pointer attached stream B to an unrelated block";
  allocator.free(block);
}

TEST_F(CachingAllocatorTest, EmptyCacheWaitsForPendingFrees) {
  CachingAllocator allocator(0, kGiB);
  Gate gate;
  void* block = allocator.allocate(4096, stream_a_);
  stream_b_.enqueue("gated", gate.waiter());
  allocator.record_stream(block, stream_b_);
  allocator.free(block);
  {
    OpenLater opener(gate);
    allocator.empty_cache();
  }
  MemoryStats stats = allocator.stats();
  EXPECT_EQ(stats.reserved_bytes[kAllPools].current, 0);
  expect_nothing_live(stats);
  EXPECT_FALSE(gate.timed_out());
}

TEST_F(CachingAllocatorTest, OwnsInteriorPointersOfLiveBlocksOnly) {
  CachingAllocator allocator(0, kGiB);
  auto* block = static_cast<char*>(allocator.allocate(1000, stream_a_));
  EXPECT_TRUE(allocator.owns(block));
  EXPECT_TRUE(allocator.owns(block + 1));
  EXPECT_TRUE(allocator.owns(block + 999));
  EXPECT_FALSE(allocator.owns(reinterpret_cast<void*>(address(block) - 1)));
  EXPECT_FALSE(allocator.owns(reinterpret_cast<void*>(address(block) + 64 * kMiB)));
  EXPECT_FALSE(allocator.owns(nullptr));
  int on_the_stack = 0;
  EXPECT_FALSE(allocator.owns(&on_the_stack));
  allocator.free(block);
  EXPECT_FALSE(allocator.owns(block)) << "a cached block is no longer handed out";
}

TEST_F(CachingAllocatorTest, FreeingAForeignPointerThrows) {
  CachingAllocator allocator(0, kGiB);
  int on_the_stack = 0;
  EXPECT_THROW(allocator.free(&on_the_stack), Error);
  auto* block = static_cast<char*>(allocator.allocate(1000, stream_a_));
  EXPECT_THROW(allocator.free(block + 8), Error) << "only block starts may be freed";
  allocator.free(block);
  EXPECT_THROW(allocator.free(block), Error) << "double free";
}

TEST_F(CachingAllocatorTest, DestroyingWithPendingFreesReleasesThem) {
  // LeakSanitizer flags the block if the destructor forgets blocks awaiting other streams.
  auto allocator = std::make_unique<CachingAllocator>(0, kGiB);
  void* block = allocator->allocate(4096, stream_a_);
  allocator->record_stream(block, stream_b_);
  allocator->free(block);
  stream_b_.synchronize();
  allocator.reset();
}

TEST_F(CachingAllocatorTest, ConcurrentAllocationsKeepStatsConsistent) {
  CachingAllocator allocator(0, kGiB);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&allocator, t] {
      auto stream = std::make_unique<Stream>(0, 10 + t, false);
      std::vector<void*> held;
      for (int i = 0; i < 200; ++i) {
        held.push_back(allocator.allocate(256 + (i % 7) * 3000 + t * kMiB / 2, *stream));
        if (held.size() > 3) {
          allocator.free(held.front());
          held.erase(held.begin());
        }
      }
      for (void* ptr : held) allocator.free(ptr);
      allocator.empty_cache();  // the allocator must not keep blocks of a stream that goes away
    });
  }
  for (auto& thread : threads) thread.join();
  MemoryStats stats = allocator.stats();
  expect_nothing_live(stats);
  expect_pools_add_up(stats);
  EXPECT_EQ(stats.allocation[kAllPools].allocated, 800);
}

}  // namespace
}  // namespace openneuron::runtime

namespace openneuron::runtime {
namespace {

TEST(CachingAllocatorBlocksTest, ListsLiveAndCachedBlocksByAddress) {
  Stream stream(0, 0, false);
  CachingAllocator allocator(0, uint64_t{1} << 30);
  void* kept = allocator.allocate(1000, stream);
  void* freed = allocator.allocate(3 << 20, stream);
  allocator.free(freed);
  auto blocks = allocator.blocks();
  ASSERT_EQ(blocks.size(), 2u);
  EXPECT_LT(blocks[0].address, blocks[1].address);
  for (const auto& block : blocks) {
    if (block.address == reinterpret_cast<uintptr_t>(kept)) {
      EXPECT_TRUE(block.allocated);
      EXPECT_EQ(block.requested, 1000u);
      EXPECT_GE(block.size, 1000u);
    } else {
      EXPECT_EQ(block.address, reinterpret_cast<uintptr_t>(freed));
      EXPECT_FALSE(block.allocated);
      EXPECT_GE(block.size, size_t{3} << 20);
    }
    EXPECT_EQ(block.stream, 0);
  }
  allocator.free(kept);
}

}  // namespace
}  // namespace openneuron::runtime
