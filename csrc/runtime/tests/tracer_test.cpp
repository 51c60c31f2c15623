#include "runtime/tracer.h"

#include <gtest/gtest.h>

#include <chrono>
#include <stdexcept>
#include <thread>
#include <vector>

#include "runtime/copy.h"
#include "runtime/errors.h"
#include "runtime/stream.h"

namespace openneuron::runtime {
namespace {

TEST(TracerTest, RecordsNothingWhileOff) {
  tracer::stop();
  Stream stream(0, 0, false);
  stream.enqueue("aten::add", [] {});
  stream.synchronize();
  tracer::start();
  EXPECT_TRUE(tracer::stop().empty());
}

TEST(TracerTest, RecordsEachItemWithStreamTimesAndCorrelation) {
  Stream stream(1, 3, false);
  tracer::start();
  tracer::set_correlation(42);
  stream.enqueue("aten::mm", [] { std::this_thread::sleep_for(std::chrono::milliseconds(2)); });
  tracer::set_correlation(43);
  stream.enqueue("aten::relu", [] {});
  tracer::set_correlation(0);
  stream.synchronize();
  std::vector<Activity> activities = tracer::stop();
  ASSERT_EQ(activities.size(), 2u);
  EXPECT_STREQ(activities[0].name, "aten::mm");
  EXPECT_EQ(activities[0].correlation, 42u);
  EXPECT_EQ(activities[0].device, 1);
  EXPECT_EQ(activities[0].stream, 3);
  EXPECT_EQ(activities[0].kind, ActivityKind::kKernel);
  EXPECT_GE(activities[0].end_ns - activities[0].start_ns, 2'000'000);
  EXPECT_STREQ(activities[1].name, "aten::relu");
  EXPECT_EQ(activities[1].correlation, 43u);
  EXPECT_LE(activities[0].end_ns, activities[1].start_ns);  // in-order stream
}

TEST(TracerTest, RecordsCopiesWithKindAndBytes) {
  Stream stream(0, 0, false);
  std::vector<char> host(100000, 1), back(100000, 0);
  std::vector<char> device_a(100000), device_b(100000);
  tracer::start();
  copy_host_to_device(stream, device_a.data(), host.data(), host.size(), false);
  copy_device_to_device(stream, device_b.data(), stream, device_a.data(), host.size());
  copy_device_to_host(stream, back.data(), device_b.data(), 64, false);  // small: runs inline
  std::vector<Activity> activities = tracer::stop();
  ASSERT_EQ(activities.size(), 3u);
  EXPECT_EQ(activities[0].kind, ActivityKind::kCopyHostToDevice);
  EXPECT_EQ(activities[0].bytes, 100000u);
  EXPECT_EQ(activities[1].kind, ActivityKind::kCopyDeviceToDevice);
  EXPECT_EQ(activities[2].kind, ActivityKind::kCopyDeviceToHost);
  EXPECT_EQ(activities[2].bytes, 64u);
}

TEST(TracerTest, RecordsFailedAndLaunchBlockingWork) {
  Stream blocking(0, 0, true);
  tracer::start();
  tracer::set_correlation(7);
  EXPECT_THROW(blocking.enqueue("aten::bad", [] { throw std::runtime_error("boom"); }),
               QueuedWorkError);
  blocking.enqueue("aten::good", [] {});
  tracer::set_correlation(0);
  std::vector<Activity> activities = tracer::stop();
  ASSERT_EQ(activities.size(), 2u);
  EXPECT_STREQ(activities[0].name, "aten::bad");
  EXPECT_EQ(activities[0].correlation, 7u);
  EXPECT_STREQ(activities[1].name, "aten::good");
}

}  // namespace
}  // namespace openneuron::runtime
