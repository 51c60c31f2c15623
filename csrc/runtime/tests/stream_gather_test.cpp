// Gathering: a thread's work on a stream between begin_gather() and end_gather() reaches the
// stream as one submission, with stream order, errors and host waits as if queued one by one.
#include <gtest/gtest.h>

#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include "runtime/errors.h"
#include "runtime/event.h"
#include "runtime/stream.h"
#include "runtime/tests/test_helpers.h"

namespace openneuron::runtime {
namespace {

using testing::synchronize_error;

TEST(StreamGather, WorkGatheredWhileTheDeviceIsBusyIsOneSubmissionInOrder) {
  Stream stream(0, 0, false);
  testing::Gate gate;
  stream.enqueue("busy", gate.waiter());
  std::vector<int> order;  // touched by the worker only after the gate opens
  const uint64_t before = stream.submissions();
  ASSERT_TRUE(stream.begin_gather());
  for (int i = 0; i < 5; ++i) stream.enqueue("append", [&order, i] { order.push_back(i); });
  stream.enqueue_small("small", [&order] { order.push_back(5); });
  stream.end_gather();
  EXPECT_EQ(stream.submissions() - before, 1u);
  gate.open();
  stream.synchronize();
  EXPECT_FALSE(gate.timed_out());
  EXPECT_EQ(order, (std::vector<int>{0, 1, 2, 3, 4, 5}));
}

TEST(StreamGather, AnIdleDeviceGetsWorkAtOnce) {
  Stream stream(0, 0, false);
  std::atomic<bool> ran{false};
  ASSERT_TRUE(stream.begin_gather());
  stream.enqueue("first", [&] { ran = true; });
  // Were it held to end_gather, the device would sit idle while the host prepares the rest.
  EXPECT_TRUE(testing::becomes_true_within([&] { return ran.load(); }));
  stream.end_gather();
  stream.synchronize();
}

TEST(StreamGather, SmallGatheredWorkOnAnIdleStreamRunsOnTheCaller) {
  Stream stream(0, 0, false);
  std::thread::id ran_on;
  ASSERT_TRUE(stream.begin_gather());
  stream.enqueue_small("small", [&] { ran_on = std::this_thread::get_id(); });
  stream.end_gather();
  EXPECT_EQ(ran_on, std::this_thread::get_id());
}

TEST(StreamGather, WaitsSubmitWhatIsGatheredSoFar) {
  Stream stream(0, 0, false);
  std::atomic<int> value{0};
  ASSERT_TRUE(stream.begin_gather());
  stream.enqueue("write", [&] { value = 1; });
  stream.synchronize();  // a host read inside the program: the write has run
  EXPECT_EQ(value.load(), 1);
  stream.enqueue("write", [&] { value = 2; });
  EXPECT_FALSE(stream.query() && value.load() != 2) << "query reported idle with work gathered";
  Event event;
  event.record(stream);
  event.synchronize();  // would wait forever if the mark stayed in the batch
  EXPECT_EQ(value.load(), 2);
  stream.end_gather();
  stream.synchronize();
}

TEST(StreamGather, EachItemKeepsItsErrorAndLaterItemsStillRun) {
  Stream stream(0, 0, false);
  bool after = false;
  ASSERT_TRUE(stream.begin_gather());
  stream.enqueue("fine", [] {});
  stream.enqueue("broken_op", [] { throw Error("bad operand"); });
  stream.enqueue("after", [&] { after = true; });
  stream.end_gather();
  const std::string error = synchronize_error(stream);
  EXPECT_NE(error.find("'broken_op' failed: bad operand"), std::string::npos) << error;
  EXPECT_TRUE(after);
  EXPECT_EQ(synchronize_error(stream), "") << "the stream stays usable";
}

TEST(StreamGather, AnotherThreadsWorkQueuesBehindTheBatch) {
  Stream stream(0, 0, false);
  std::vector<int> order;
  ASSERT_TRUE(stream.begin_gather());
  stream.enqueue("first", [&order] { order.push_back(1); });
  std::thread other([&] { stream.enqueue("second", [&order] { order.push_back(2); }); });
  other.join();
  stream.enqueue("third", [&order] { order.push_back(3); });
  stream.end_gather();
  stream.synchronize();
  EXPECT_EQ(order, (std::vector<int>{1, 2, 3}));
}

TEST(StreamGather, NotNestedAndNotUnderLaunchBlocking) {
  Stream stream(0, 0, false), other(0, 1, false), blocking(0, 2, true);
  EXPECT_FALSE(blocking.begin_gather());
  ASSERT_TRUE(stream.begin_gather());
  EXPECT_FALSE(other.begin_gather()) << "a thread gathers for one stream at a time";
  bool ran = false;
  other.enqueue("elsewhere", [&] { ran = true; });  // another stream queues as usual
  other.synchronize();
  EXPECT_TRUE(ran);
  stream.end_gather();
}

}  // namespace
}  // namespace openneuron::runtime
