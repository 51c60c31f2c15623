#include "runtime/copy.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <cstring>
#include <numeric>
#include <stdexcept>
#include <vector>

#include "runtime/caching_allocator.h"
#include "runtime/errors.h"
#include "runtime/pinned_host_memory.h"
#include "runtime/stream.h"
#include "runtime/tests/test_helpers.h"

namespace openneuron::runtime {
namespace {

using testing::becomes_true_within;
using testing::Gate;
using testing::OpenLater;

constexpr size_t kBytes = 4096;
constexpr uint64_t kMiB = uint64_t{1} << 20;

// A pattern that differs from byte to byte, so misplaced or partial copies show up.
std::vector<uint8_t> pattern(size_t bytes, uint8_t seed) {
  std::vector<uint8_t> data(bytes);
  for (size_t i = 0; i < bytes; ++i) data[i] = static_cast<uint8_t>(seed + i * 7);
  return data;
}

bool holds(const void* memory, const std::vector<uint8_t>& expected) {
  return std::memcmp(memory, expected.data(), expected.size()) == 0;
}

// Pinned host memory released at scope exit.
class PinnedBuffer {
 public:
  explicit PinnedBuffer(size_t bytes)
      : ptr_(static_cast<uint8_t*>(PinnedHostMemory::instance().allocate(bytes))) {}
  ~PinnedBuffer() { release(); }
  uint8_t* get() const { return ptr_; }
  void release() {
    PinnedHostMemory::instance().free(ptr_);
    ptr_ = nullptr;
  }

 private:
  uint8_t* ptr_;
};

// Two devices with a stream each plus a second stream on device 0. Streams come before the
// allocators so the allocators go first; device buffers are returned by the tests.
class CopyTest : public ::testing::Test {
 protected:
  void* device0(size_t bytes) { return allocator0_.allocate(bytes, stream0_); }
  void* device1(size_t bytes) { return allocator1_.allocate(bytes, stream1_); }

  Stream stream0_{0, 0, false};
  Stream other0_{0, 1, false};
  Stream stream1_{1, 0, false};
  CachingAllocator allocator0_{0, 64 * kMiB};
  CachingAllocator allocator1_{1, 64 * kMiB};
};

TEST_F(CopyTest, HostToDeviceAndBackFromUnpinnedMemory) {
  auto source = pattern(kBytes, 1);
  void* device = device0(kBytes);
  copy_host_to_device(stream0_, device, source.data(), kBytes, /*non_blocking=*/false);
  std::vector<uint8_t> result(kBytes);
  copy_device_to_host(stream0_, result.data(), device, kBytes, /*non_blocking=*/false);
  EXPECT_EQ(result, source);
  allocator0_.free(device);
}

TEST_F(CopyTest, UnpinnedSourceMayBeReusedRightAfterTheCall) {
  for (bool non_blocking : {false, true}) {  // unpinned memory is staged either way
    Gate gate;
    auto expected = pattern(kBytes, 2);
    auto source = expected;
    void* device = device0(kBytes);
    stream0_.enqueue("gated", gate.waiter());  // the copy cannot run before the overwrite
    copy_host_to_device(stream0_, device, source.data(), kBytes, non_blocking);
    std::fill(source.begin(), source.end(), 0xEE);
    source.clear();
    source.shrink_to_fit();  // the original buffer is gone; ASAN would catch a late read
    gate.open();
    stream0_.synchronize();
    EXPECT_TRUE(holds(device, expected))
        << "the copy read the source after the call returned, non_blocking=" << non_blocking;
    EXPECT_FALSE(gate.timed_out());
    allocator0_.free(device);
  }
}

TEST_F(CopyTest, BlockingCopyFromPinnedSourceIsStagedToo) {
  Gate gate;
  PinnedBuffer source(kBytes);
  auto expected = pattern(kBytes, 16);
  std::memcpy(source.get(), expected.data(), kBytes);
  void* device = device0(kBytes);
  stream0_.enqueue("gated", gate.waiter());
  copy_host_to_device(stream0_, device, source.get(), kBytes, /*non_blocking=*/false);
  std::memset(source.get(), 0xEE, kBytes);
  gate.open();
  stream0_.synchronize();
  EXPECT_TRUE(holds(device, expected)) << "a blocking copy read its pinned source late";
  allocator0_.free(device);
}

TEST_F(CopyTest, PinnedSourceIsReadWhenTheCopyRuns) {
  // A non-blocking copy from pinned memory is not staged: like CUDA, the copy reads the
  // source when the stream gets there.
  Gate gate;
  PinnedBuffer source(kBytes);
  auto early = pattern(kBytes, 3);
  auto late = pattern(kBytes, 4);
  std::memcpy(source.get(), early.data(), kBytes);
  void* device = device0(kBytes);
  stream0_.enqueue("gated", gate.waiter());
  copy_host_to_device(stream0_, device, source.get(), kBytes, /*non_blocking=*/true);
  std::memcpy(source.get(), late.data(), kBytes);
  gate.open();
  stream0_.synchronize();
  EXPECT_TRUE(holds(device, late));
  allocator0_.free(device);
}

TEST_F(CopyTest, PinnedRoundTrip) {
  PinnedBuffer source(kBytes);
  PinnedBuffer result(kBytes);
  auto expected = pattern(kBytes, 5);
  std::memcpy(source.get(), expected.data(), kBytes);
  void* device = device0(kBytes);
  copy_host_to_device(stream0_, device, source.get(), kBytes, /*non_blocking=*/true);
  copy_device_to_host(stream0_, result.get(), device, kBytes, /*non_blocking=*/false);
  EXPECT_TRUE(holds(result.get(), expected));
  allocator0_.free(device);
}

TEST_F(CopyTest, BlockingDeviceToHostWaitsForTheBytes) {
  auto expected = pattern(kBytes, 6);
  void* device = device0(kBytes);
  copy_host_to_device(stream0_, device, expected.data(), kBytes, /*non_blocking=*/false);
  for (bool non_blocking : {false, true}) {  // non_blocking into unpinned memory still blocks
    Gate gate;
    std::vector<uint8_t> result(kBytes, 0);
    stream0_.enqueue("gated", gate.waiter());
    {
      OpenLater opener(gate);
      copy_device_to_host(stream0_, result.data(), device, kBytes, non_blocking);
      EXPECT_EQ(result, expected) << "returned before the bytes arrived, non_blocking="
                                  << non_blocking;
    }
  }
  allocator0_.free(device);
}

TEST_F(CopyTest, BlockingDeviceToHostRaisesQueuedErrors) {
  void* device = device0(kBytes);
  std::vector<uint8_t> result(kBytes);
  stream0_.enqueue("failing_kernel", [] { throw std::runtime_error("kernel failed"); });
  try {
    copy_device_to_host(stream0_, result.data(), device, kBytes, false);
    ADD_FAILURE() << "the queued failure was not raised";
  } catch (const QueuedWorkError& error) {
    EXPECT_NE(std::string(error.what()).find("failing_kernel"), std::string::npos) << error.what();
  }
  allocator0_.free(device);
}

TEST_F(CopyTest, NonBlockingDeviceToPinnedHostNeedsSynchronize) {
  Gate gate;
  auto expected = pattern(kBytes, 7);
  void* device = device0(kBytes);
  copy_host_to_device(stream0_, device, expected.data(), kBytes, /*non_blocking=*/false);
  PinnedBuffer result(kBytes);
  std::memset(result.get(), 0, kBytes);
  stream0_.enqueue("gated", gate.waiter());
  copy_device_to_host(stream0_, result.get(), device, kBytes, /*non_blocking=*/true);
  EXPECT_FALSE(gate.timed_out()) << "a non-blocking copy into pinned memory waited";
  EXPECT_FALSE(stream0_.query()) << "the copy cannot have run yet";
  gate.open();
  stream0_.synchronize();
  EXPECT_TRUE(holds(result.get(), expected));
  allocator0_.free(device);
}

TEST_F(CopyTest, DeviceToDeviceOnOneStream) {
  auto expected = pattern(kBytes, 8);
  void* source = device0(kBytes);
  void* target = device0(kBytes);
  copy_host_to_device(stream0_, source, expected.data(), kBytes, /*non_blocking=*/false);
  copy_device_to_device(stream0_, target, stream0_, source, kBytes);
  stream0_.synchronize();
  EXPECT_TRUE(holds(target, expected));
  allocator0_.free(source);
  allocator0_.free(target);
}

TEST_F(CopyTest, DeviceToDeviceWithinOverlappingBuffer) {
  auto expected = pattern(kBytes, 9);
  auto* buffer = static_cast<uint8_t*>(device0(2 * kBytes));
  copy_host_to_device(stream0_, buffer, expected.data(), kBytes, /*non_blocking=*/false);
  copy_device_to_device(stream0_, buffer + 100, stream0_, buffer, kBytes);  // overlapping ranges
  stream0_.synchronize();
  EXPECT_TRUE(holds(buffer + 100, expected));
  allocator0_.free(buffer);
}

TEST_F(CopyTest, DeviceToDeviceWaitsForTheSourceStream) {
  Gate gate;
  auto expected = pattern(kBytes, 10);
  void* source = device0(kBytes);
  void* target = device0(kBytes);
  std::memset(target, 0, kBytes);
  // The source is produced on stream0 behind the gate; the copy runs on other0.
  stream0_.enqueue("gated", gate.waiter());
  copy_host_to_device(stream0_, source, expected.data(), kBytes, /*non_blocking=*/false);
  copy_device_to_device(other0_, target, stream0_, source, kBytes);
  EXPECT_FALSE(becomes_true_within([&] { return other0_.query(); }))
      << "the copy ran before the source stream produced its input";
  gate.open();
  other0_.synchronize();
  EXPECT_TRUE(holds(target, expected));
  stream0_.synchronize();
  allocator0_.free(source);
  allocator0_.free(target);
}

TEST_F(CopyTest, LaterSourceStreamWorkWaitsForTheCopy) {
  Gate gate;
  auto expected = pattern(kBytes, 11);
  auto* source = static_cast<uint8_t*>(device0(kBytes));
  void* target = device0(kBytes);
  copy_host_to_device(stream0_, source, expected.data(), kBytes, /*non_blocking=*/false);
  stream0_.synchronize();
  other0_.enqueue("gated", gate.waiter());  // holds the copy back on the destination stream
  copy_device_to_device(other0_, target, stream0_, source, kBytes);
  stream0_.enqueue("overwrite_source", [source] { std::memset(source, 0xFF, kBytes); });
  EXPECT_FALSE(becomes_true_within([&] { return stream0_.query(); }))
      << "the source stream overwrote the source before the copy read it";
  gate.open();
  stream0_.synchronize();
  other0_.synchronize();
  EXPECT_TRUE(holds(target, expected));
  allocator0_.free(source);
  allocator0_.free(target);
}

TEST_F(CopyTest, DeviceToDeviceAcrossDevices) {
  Gate gate;
  auto expected = pattern(kBytes, 12);
  void* on_device0 = device0(kBytes);
  void* on_device1 = device1(kBytes);
  stream0_.enqueue("gated", gate.waiter());
  copy_host_to_device(stream0_, on_device0, expected.data(), kBytes, /*non_blocking=*/false);
  copy_device_to_device(stream1_, on_device1, stream0_, on_device0, kBytes);
  gate.open();
  std::vector<uint8_t> result(kBytes);
  copy_device_to_host(stream1_, result.data(), on_device1, kBytes, false);
  EXPECT_EQ(result, expected);
  allocator0_.free(on_device0);
  allocator1_.free(on_device1);
}

TEST_F(CopyTest, ZeroByteCopiesQueueNothing) {
  Gate gate;
  stream0_.enqueue("gated", gate.waiter());
  copy_host_to_device(stream0_, nullptr, nullptr, 0, /*non_blocking=*/false);
  copy_device_to_device(other0_, nullptr, stream0_, nullptr, 0);
  EXPECT_TRUE(other0_.query()) << "a zero-byte copy made another stream wait";
  gate.open();
  copy_device_to_host(stream0_, nullptr, nullptr, 0, false);  // still synchronises
  EXPECT_TRUE(stream0_.query());
}

TEST_F(CopyTest, LaunchBlockingCopiesCompleteInline) {
  Stream blocking(0, 2, true);
  auto expected = pattern(kBytes, 13);
  std::vector<uint8_t> device(kBytes);
  copy_host_to_device(blocking, device.data(), expected.data(), kBytes, /*non_blocking=*/false);
  EXPECT_EQ(device, expected);
}

TEST(PinnedHostMemoryTest, IsPinnedCoversInteriorPointersOfLiveBuffers) {
  auto& pinned = PinnedHostMemory::instance();
  auto* buffer = static_cast<uint8_t*>(pinned.allocate(100));
  ASSERT_NE(buffer, nullptr);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(buffer) % 64, 0u);
  EXPECT_TRUE(pinned.is_pinned(buffer));
  EXPECT_TRUE(pinned.is_pinned(buffer + 1));
  EXPECT_TRUE(pinned.is_pinned(buffer + 99));
  EXPECT_FALSE(pinned.is_pinned(buffer + 100)) << "one past the end is not inside the buffer";
  EXPECT_FALSE(pinned.is_pinned(reinterpret_cast<void*>(reinterpret_cast<uintptr_t>(buffer) - 1)));
  EXPECT_FALSE(pinned.is_pinned(nullptr));
  std::vector<uint8_t> unpinned(100);
  EXPECT_FALSE(pinned.is_pinned(unpinned.data()));
  pinned.free(buffer);
  EXPECT_FALSE(pinned.is_pinned(buffer));
}

TEST(PinnedHostMemoryTest, LiveBytesCountsAllocations) {
  auto& pinned = PinnedHostMemory::instance();
  size_t before = pinned.live_bytes();
  void* first = pinned.allocate(1000);
  void* second = pinned.allocate(24);
  EXPECT_EQ(pinned.live_bytes(), before + 1024);
  pinned.free(first);
  EXPECT_EQ(pinned.live_bytes(), before + 24);
  pinned.free(second);
  EXPECT_EQ(pinned.live_bytes(), before);
  EXPECT_EQ(pinned.allocate(0), nullptr);
  pinned.free(nullptr);
}

TEST_F(CopyTest, PinnedSourceFreedWhileItsCopyIsQueued) {
  // Freeing pinned memory that a queued copy still reads must defer the release; ASAN
  // reports a heap-use-after-free if it does not, and the copied bytes would be garbage.
  Gate gate;
  auto expected = pattern(kBytes, 14);
  auto& pinned = PinnedHostMemory::instance();
  size_t before = pinned.live_bytes();
  auto* source = static_cast<uint8_t*>(pinned.allocate(kBytes));
  std::memcpy(source, expected.data(), kBytes);
  void* device = device0(kBytes);
  stream0_.enqueue("gated", gate.waiter());
  copy_host_to_device(stream0_, device, source, kBytes, /*non_blocking=*/true);
  pinned.free(source);
  EXPECT_EQ(pinned.live_bytes(), before) << "freed buffers no longer count as live";
  EXPECT_FALSE(pinned.is_pinned(source));
  // Churn the allocator so the deferred buffer would likely be recycled if it were released.
  for (int i = 0; i < 8; ++i) {
    void* churn = pinned.allocate(kBytes);
    std::memset(churn, 0xCD, kBytes);
    pinned.free(churn);
  }
  gate.open();
  stream0_.synchronize();
  EXPECT_TRUE(holds(device, expected));
  pinned.free(pinned.allocate(1));  // lets the deferred buffer go now that the copy is done
  allocator0_.free(device);
}

TEST_F(CopyTest, PinnedDestinationFreedWhileItsCopyIsQueued) {
  Gate gate;
  auto expected = pattern(kBytes, 15);
  void* device = device0(kBytes);
  copy_host_to_device(stream0_, device, expected.data(), kBytes, /*non_blocking=*/false);
  auto& pinned = PinnedHostMemory::instance();
  auto* destination = static_cast<uint8_t*>(pinned.allocate(kBytes));
  stream0_.enqueue("gated", gate.waiter());
  copy_device_to_host(stream0_, destination, device, kBytes, /*non_blocking=*/true);
  pinned.free(destination);  // the caller changed its mind; the queued write must stay safe
  // While the copy is queued the freed block must not be handed out again: the queued write
  // would land in someone else's buffer (a use-after-free that ASAN would also report).
  bool handed_out_again = false;
  for (int i = 0; i < 8; ++i) {
    void* churn = pinned.allocate(kBytes);
    handed_out_again = handed_out_again || churn == destination;
    pinned.free(churn);
  }
  EXPECT_FALSE(handed_out_again);
  gate.open();
  stream0_.synchronize();
  pinned.free(pinned.allocate(1));  // lets the deferred buffer go now that the copy is done
  allocator0_.free(device);
}

}  // namespace
}  // namespace openneuron::runtime
