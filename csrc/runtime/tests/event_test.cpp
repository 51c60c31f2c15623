#include "runtime/event.h"

#include <gtest/gtest.h>

#include <atomic>
#include <string>

#include "runtime/errors.h"
#include "runtime/stream.h"
#include "runtime/tests/test_helpers.h"

namespace openneuron::runtime {
namespace {

using testing::becomes_true_within;
using testing::Gate;

// The Error message elapsed_ms raises, or "" when it returns.
std::string elapsed_error(const Event& start, const Event& end) {
  try {
    start.elapsed_ms(end);
  } catch (const Error& error) {
    return error.what();
  }
  return "";
}

TEST(EventTest, NeverRecordedEventIsComplete) {
  Event event;
  EXPECT_FALSE(event.was_recorded());
  EXPECT_EQ(event.device(), -1);
  EXPECT_TRUE(event.query());
  event.synchronize();  // must return at once

  Stream stream(0, 0, false);
  event.block(stream);
  EXPECT_TRUE(stream.query()) << "blocking on a never-recorded event must queue nothing";
}

TEST(EventTest, RecordCompletesWhenPriorWorkHasRun) {
  Stream stream(1, 0, false);
  Gate gate;
  std::atomic<bool> prior_work_done{false};
  stream.enqueue("gated", gate.waiter());
  stream.enqueue("prior", [&] { prior_work_done = true; });

  Event event;
  event.record(stream);
  EXPECT_TRUE(event.was_recorded());
  EXPECT_EQ(event.device(), 1);
  EXPECT_FALSE(event.query());
  EXPECT_FALSE(becomes_true_within([&] { return event.query(); }))
      << "the event completed before the work queued ahead of it";

  gate.open();
  event.synchronize();
  EXPECT_TRUE(event.query());
  EXPECT_TRUE(prior_work_done) << "the event completed before the work queued ahead of it";
  EXPECT_FALSE(gate.timed_out());
}

TEST(EventTest, RecordOnLaunchBlockingStreamCompletesAtOnce) {
  Stream stream(0, 0, true);
  Event event;
  event.record(stream);
  EXPECT_TRUE(event.query());
}

TEST(EventTest, BlockMakesAnotherStreamWait) {
  Stream producer(0, 1, false);
  Stream consumer(0, 2, false);
  Gate gate;
  int shared_value = 0;  // written by the producer's worker, read by the consumer's
  int observed = -1;

  producer.enqueue("gated", gate.waiter());
  producer.enqueue("produce", [&] { shared_value = 42; });
  Event produced;
  produced.record(producer);
  produced.block(consumer);
  consumer.enqueue("consume", [&] { observed = shared_value; });

  EXPECT_FALSE(becomes_true_within([&] { return consumer.query(); }))
      << "the consumer ran ahead of the event it was told to wait for";
  EXPECT_FALSE(producer.query());

  gate.open();
  consumer.synchronize();
  EXPECT_EQ(observed, 42);
  producer.synchronize();
  EXPECT_FALSE(gate.timed_out());
}

TEST(EventTest, BlockDoesNotBlockTheHost) {
  Stream producer(0, 1, false);
  Stream consumer(0, 2, false);
  Gate gate;
  producer.enqueue("gated", gate.waiter());
  Event event;
  event.record(producer);
  event.block(consumer);  // returns although the event is far from complete
  EXPECT_FALSE(event.query());
  gate.open();
  consumer.synchronize();
  EXPECT_TRUE(event.query());
  EXPECT_FALSE(gate.timed_out()) << "block() waited on the host";
}

TEST(EventTest, ReRecordReplacesTheMarkForLaterWaitsOnly) {
  Stream slow(0, 1, false);
  Stream fast(0, 2, false);
  Stream waiter(0, 3, false);
  Gate gate;
  slow.enqueue("gated", gate.waiter());

  Event event;
  event.record(slow);
  event.block(waiter);  // this wait keeps the slow mark
  EXPECT_FALSE(event.query());

  event.record(fast);
  event.synchronize();  // only the latest (fast) mark matters now
  EXPECT_TRUE(event.query());
  EXPECT_EQ(event.device(), 0);
  EXPECT_FALSE(gate.timed_out()) << "synchronize() waited for the replaced mark";

  EXPECT_FALSE(becomes_true_within([&] { return waiter.query(); }))
      << "an earlier wait switched to the new mark";
  gate.open();
  waiter.synchronize();
  slow.synchronize();
}

TEST(EventTest, ReRecordOnAnotherDeviceUpdatesDevice) {
  Stream first(0, 0, false);
  Stream second(1, 0, false);
  Event event;
  event.record(first);
  EXPECT_EQ(event.device(), 0);
  event.record(second);
  EXPECT_EQ(event.device(), 1);
  event.synchronize();
}

TEST(EventTest, ElapsedTimeBetweenCompletedTimedEvents) {
  Stream stream(0, 0, false);
  Event start(true);
  Event end(true);
  start.record(stream);
  volatile uint64_t sink = 0;
  stream.enqueue("busy", [&] {
    for (int i = 0; i < 100000; ++i) sink = sink + i;
  });
  end.record(stream);
  end.synchronize();
  double elapsed = start.elapsed_ms(end);
  EXPECT_GE(elapsed, 0.0);
  EXPECT_LT(elapsed, 10000.0);
  EXPECT_GE(end.elapsed_ms(start), -10000.0);  // reversed order is allowed and just negative
  EXPECT_EQ(start.elapsed_ms(start), 0.0);
}

TEST(EventTest, ElapsedTimeAcrossStreams) {
  Stream first(0, 1, false);
  Stream second(0, 2, false);
  Event start(true);
  Event end(true);
  start.record(first);
  start.block(second);  // orders end after start
  end.record(second);
  end.synchronize();
  EXPECT_GE(start.elapsed_ms(end), 0.0);
}

TEST(EventTest, ElapsedTimeNeedsTimingOnBothEvents) {
  Stream stream(0, 0, false);
  Event timed(true);
  Event untimed(false);
  timed.record(stream);
  untimed.record(stream);
  stream.synchronize();
  EXPECT_NE(elapsed_error(timed, untimed).find("enable_timing"), std::string::npos);
  EXPECT_NE(elapsed_error(untimed, timed).find("enable_timing"), std::string::npos);
}

TEST(EventTest, ElapsedTimeNeedsBothEventsRecorded) {
  Stream stream(0, 0, false);
  Event recorded(true);
  Event never(true);
  recorded.record(stream);
  stream.synchronize();
  EXPECT_NE(elapsed_error(recorded, never).find("recorded"), std::string::npos);
  EXPECT_NE(elapsed_error(never, recorded).find("recorded"), std::string::npos);
}

TEST(EventTest, ElapsedTimeNeedsCompletedRecords) {
  Stream stream(0, 0, false);
  Gate gate;
  Event start(true);
  Event end(true);
  start.record(stream);
  stream.enqueue("gated", gate.waiter());
  end.record(stream);
  start.synchronize();
  EXPECT_NE(elapsed_error(start, end).find("end event has not completed"), std::string::npos);
  EXPECT_NE(elapsed_error(end, start).find("start event has not completed"), std::string::npos);
  gate.open();
  end.synchronize();
  EXPECT_GE(start.elapsed_ms(end), 0.0);
}

}  // namespace
}  // namespace openneuron::runtime
