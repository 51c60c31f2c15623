#include "runtime/stream.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "runtime/errors.h"
#include "runtime/tests/test_helpers.h"

namespace openneuron::runtime {
namespace {

using testing::synchronize_error;

using testing::becomes_true_within;
using testing::Gate;
using testing::OpenLater;

TEST(StreamTest, ReportsDeviceAndId) {
  Stream stream(1, 7, false);
  EXPECT_EQ(stream.device(), 1);
  EXPECT_EQ(stream.id(), 7);
}

TEST(StreamTest, RunsManyItemsInEnqueueOrder) {
  Stream stream(0, 0, false);
  std::vector<int> order;  // touched only by the stream's worker until synchronize()
  constexpr int kItems = 2000;
  for (int i = 0; i < kItems; ++i) stream.enqueue("append", [&order, i] { order.push_back(i); });
  stream.synchronize();
  ASSERT_EQ(order.size(), static_cast<size_t>(kItems));
  for (int i = 0; i < kItems; ++i) ASSERT_EQ(order[i], i) << "item " << i << " ran out of order";
}

TEST(StreamTest, EnqueueReturnsBeforeTheWorkRuns) {
  Stream stream(0, 0, false);
  Gate gate;
  std::atomic<bool> ran{false};
  // Were enqueue synchronous, it would block in the gate until the gate timed out.
  stream.enqueue("gated", gate.waiter());
  stream.enqueue("mark", [&] { ran = true; });
  EXPECT_FALSE(ran);
  EXPECT_FALSE(stream.query());
  gate.open();
  stream.synchronize();
  EXPECT_TRUE(ran);
  EXPECT_FALSE(gate.timed_out()) << "enqueue ran the gated work inline";
}

// Process exit: halt() lets the running task finish, runs nothing queued after it, and
// later enqueues do not run either.
TEST(StreamTest, HaltFinishesTheRunningTaskAndStartsNoOther) {
  Stream stream(0, 0, false);
  Gate gate;
  std::atomic<bool> gated_started{false}, gated_done{false};
  std::atomic<int> later{0};
  stream.enqueue("gated", [&, wait = gate.waiter()] {
    gated_started = true;
    wait();
    gated_done = true;
  });
  for (int i = 0; i < 10; ++i) stream.enqueue("count", [&] { ++later; });
  while (!gated_started) std::this_thread::yield();
  {
    OpenLater opener(gate);
    EXPECT_TRUE(stream.halt(std::chrono::milliseconds(5000)));
    EXPECT_TRUE(gated_done);
  }
  stream.enqueue("after halt", [&] { ++later; });
  EXPECT_FALSE(
      becomes_true_within([&] { return later.load() > 0; }, std::chrono::milliseconds(50)));
}

TEST(StreamTest, SynchronizeWaitsForQueuedWork) {
  Stream stream(0, 0, false);
  Gate gate;
  std::atomic<int> completed{0};
  stream.enqueue("gated", gate.waiter());
  for (int i = 0; i < 10; ++i) stream.enqueue("count", [&] { ++completed; });
  {
    OpenLater opener(gate);
    stream.synchronize();
    EXPECT_EQ(completed, 10);
  }
  EXPECT_TRUE(stream.query());
}

TEST(StreamTest, WaitIdleWaitsWithoutRaising) {
  Stream stream(0, 0, false);
  Gate gate;
  std::atomic<bool> later_ran{false};
  stream.enqueue("gated", gate.waiter());
  stream.enqueue("fails", [] { throw std::runtime_error("boom"); });
  stream.enqueue("later", [&] { later_ran = true; });
  {
    OpenLater opener(gate);
    EXPECT_NO_THROW(stream.wait_idle());
    EXPECT_TRUE(later_ran);
  }
  // wait_idle() leaves the error for the next synchronize().
  EXPECT_NE(synchronize_error(stream).find("fails"), std::string::npos);
}

TEST(StreamTest, QueryTracksPendingWork) {
  Stream stream(0, 0, false);
  EXPECT_TRUE(stream.query()) << "a new stream has nothing pending";
  Gate gate;
  stream.enqueue("gated", gate.waiter());
  EXPECT_FALSE(stream.query());
  EXPECT_FALSE(becomes_true_within([&] { return stream.query(); }))
      << "the stream reported idle while its work was still blocked";
  gate.open();
  stream.synchronize();
  EXPECT_TRUE(stream.query());
}

TEST(StreamTest, LooksIdleWhileNothingIsQueuedOrRunning) {
  Stream stream(0, 0, false);
  EXPECT_TRUE(stream.looks_idle());
  Gate gate;
  stream.enqueue("gated", gate.waiter());
  EXPECT_FALSE(stream.looks_idle()) << "queued work";
  EXPECT_FALSE(becomes_true_within([&] { return stream.looks_idle(); }))
      << "the stream looked idle while its work was still blocked";
  gate.open();
  stream.synchronize();
  EXPECT_TRUE(stream.looks_idle());
}

TEST(StreamTest, FailedWorkIsRaisedOnceByTheNextSynchronize) {
  Stream stream(1, 0, false);
  std::atomic<bool> later_work_ran{false};
  stream.enqueue("exploding_op", [] { throw std::runtime_error("kernel blew up"); });
  stream.enqueue("later_op", [&] { later_work_ran = true; });

  std::string message = synchronize_error(stream);
  EXPECT_NE(message.find("exploding_op"), std::string::npos) << message;
  EXPECT_NE(message.find("kernel blew up"), std::string::npos) << message;
  EXPECT_NE(message.find("neuron:1"), std::string::npos) << message;
  EXPECT_TRUE(later_work_ran) << "work queued after a failure must still run";

  EXPECT_EQ(synchronize_error(stream), "") << "the error was raised twice";

  // The stream stays usable.
  std::atomic<int> value{0};
  stream.enqueue("after_recovery", [&] { value = 5; });
  EXPECT_EQ(synchronize_error(stream), "");
  EXPECT_EQ(value, 5);
}

TEST(StreamTest, KeepsOnlyTheFirstErrorUntilSynchronize) {
  Stream stream(0, 0, false);
  stream.enqueue("first_failure", [] { throw std::runtime_error("one"); });
  stream.enqueue("second_failure", [] { throw std::runtime_error("two"); });
  std::string message = synchronize_error(stream);
  EXPECT_NE(message.find("first_failure"), std::string::npos) << message;
  EXPECT_EQ(message.find("second_failure"), std::string::npos) << message;
  EXPECT_EQ(synchronize_error(stream), "");

  // A failure after a synchronize is a new first error.
  stream.enqueue("third_failure", [] { throw std::runtime_error("three"); });
  EXPECT_NE(synchronize_error(stream).find("third_failure"), std::string::npos);
}

TEST(StreamTest, NonStandardExceptionsAreCapturedToo) {
  Stream stream(0, 0, false);
  stream.enqueue("throws_int", [] { throw 42; });
  EXPECT_NE(synchronize_error(stream).find("throws_int"), std::string::npos);
}

TEST(StreamTest, LaunchBlockingRunsInlineAndThrowsAtOnce) {
  Stream stream(0, 0, true);
  int value = 0;
  stream.enqueue("inline", [&] { value = 3; });
  EXPECT_EQ(value, 3) << "a launch-blocking stream must run work before enqueue returns";
  EXPECT_TRUE(stream.query());

  try {
    stream.enqueue("inline_failure", [] { throw std::runtime_error("bad input"); });
    FAIL() << "the failure was not thrown by enqueue";
  } catch (const QueuedWorkError& error) {
    EXPECT_NE(std::string(error.what()).find("inline_failure"), std::string::npos) << error.what();
    EXPECT_NE(std::string(error.what()).find("bad input"), std::string::npos) << error.what();
  }
  EXPECT_THROW(stream.enqueue("inline_int", [] { throw 7; }), QueuedWorkError);
  // Already thrown, so nothing is left for synchronize.
  EXPECT_EQ(synchronize_error(stream), "");
  stream.enqueue("inline_again", [&] { value = 4; });
  EXPECT_EQ(value, 4);
}

TEST(StreamTest, DestructorDrainsQueuedWork) {
  std::atomic<int> completed{0};
  Gate gate;
  {
    OpenLater opener(gate);  // declared first, so it is still waiting when ~Stream starts
    Stream stream(0, 0, false);
    stream.enqueue("gated", gate.waiter());
    for (int i = 0; i < 100; ++i) stream.enqueue("count", [&] { ++completed; });
    // ~Stream runs here, while the gate most likely still holds every counting item back.
  }
  EXPECT_EQ(completed, 100);
  EXPECT_FALSE(gate.timed_out());
}

TEST(StreamTest, DestroyingAnUnusedStreamIsImmediate) {
  auto stream = std::make_unique<Stream>(0, 3, false);
  stream.reset();
  SUCCEED();
}

TEST(StreamTest, ManyThreadsEnqueueConcurrently) {
  Stream stream(0, 0, false);
  std::atomic<int> completed{0};
  std::vector<std::thread> producers;
  for (int t = 0; t < 4; ++t) {
    producers.emplace_back([&] {
      for (int i = 0; i < 250; ++i) stream.enqueue("count", [&] { ++completed; });
    });
  }
  for (auto& producer : producers) producer.join();
  stream.synchronize();
  EXPECT_EQ(completed, 1000);
}

TEST(StreamTest, SmallWorkOnAnIdleStreamRunsOnTheCallingThread) {
  Stream stream(0, 0, false);
  std::thread::id ran_on;
  stream.enqueue_small("small", [&] { ran_on = std::this_thread::get_id(); });
  EXPECT_EQ(ran_on, std::this_thread::get_id());
  EXPECT_TRUE(stream.query());
}

TEST(StreamTest, SmallWorkQueuesBehindPendingWork) {
  Stream stream(0, 0, false);
  Gate gate;
  std::vector<int> order;  // touched by one thread at a time: the worker, then the test
  stream.enqueue("gated", gate.waiter());
  stream.enqueue("first", [&] { order.push_back(1); });
  stream.enqueue_small("small", [&] { order.push_back(2); });
  EXPECT_TRUE(order.empty()) << "small work jumped the queue";
  gate.open();
  stream.synchronize();
  EXPECT_EQ(order, (std::vector<int>{1, 2}));
}

TEST(StreamTest, SmallWorkErrorsWaitForSynchronize) {
  Stream stream(0, 0, false);
  EXPECT_NO_THROW(
      stream.enqueue_small("aten::tiny", [] { throw std::runtime_error("index out of range"); }));
  EXPECT_EQ(synchronize_error(stream),
            "neuron:0 queued op 'aten::tiny' failed: index out of range");
  EXPECT_EQ(synchronize_error(stream), "");
}

TEST(StreamTest, SmallAndQueuedWorkFromManyThreadsKeepsEachThreadsOrder) {
  Stream stream(0, 0, false);
  constexpr int kThreads = 4, kItems = 500;
  std::vector<std::vector<int>> seen(kThreads);  // each list is appended in its thread's order
  std::atomic<int> running{0}, overlaps{0};
  std::vector<std::thread> producers;
  for (int t = 0; t < kThreads; ++t) {
    producers.emplace_back([&, t] {
      for (int i = 0; i < kItems; ++i) {
        auto work = [&, t, i] {
          if (running.fetch_add(1) != 0) ++overlaps;
          seen[t].push_back(i);
          running.fetch_sub(1);
        };
        if (i % 2 == 0) {
          stream.enqueue_small("small", work);
        } else {
          stream.enqueue("queued", work);
        }
      }
    });
  }
  for (auto& producer : producers) producer.join();
  stream.synchronize();
  EXPECT_EQ(overlaps, 0) << "two items of one stream ran at the same time";
  for (int t = 0; t < kThreads; ++t) {
    ASSERT_EQ(seen[t].size(), static_cast<size_t>(kItems));
    for (int i = 0; i < kItems; ++i) ASSERT_EQ(seen[t][i], i) << "thread " << t << " reordered";
  }
}

// A caller that waits for queued work nobody has started runs it itself (the worker sleeps
// between ops, and waking it costs more than the caller's idle wait saves). Whether the worker
// wakes first is a race, so the test counts: over many enqueue-then-wait rounds the caller wins
// some, and wait_idle(), which may hold locks queued work needs, wins none.
TEST(StreamTest, SynchronizeRunsWorkNoThreadHasStartedOnTheCallingThread) {
  Stream stream(0, 0, false);
  constexpr int kRounds = 200;
  int on_caller = 0, runs = 0;
  for (int i = 0; i < kRounds; ++i) {
    std::thread::id ran_on;
    stream.enqueue("mark", [&] {
      ran_on = std::this_thread::get_id();
      ++runs;
    });
    stream.synchronize();
    if (ran_on == std::this_thread::get_id()) ++on_caller;
  }
  EXPECT_EQ(runs, kRounds);
  EXPECT_GT(on_caller, 0) << "synchronize never ran queued work itself";
  for (int i = 0; i < kRounds; ++i) {
    std::thread::id ran_on;
    stream.enqueue("mark", [&] { ran_on = std::this_thread::get_id(); });
    stream.wait_idle();
    ASSERT_NE(ran_on, std::this_thread::get_id()) << "wait_idle ran queued work on its caller";
  }
}

TEST(StreamTest, WorkRunByTheWaitingCallerKeepsItsErrorForSynchronize) {
  Stream stream(0, 0, false);
  for (int i = 0; i < 50; ++i) {
    stream.enqueue("aten::bad", [] { throw std::runtime_error("bad shape"); });
    stream.finish();  // runs it here or waits for the worker: either way it does not raise
    EXPECT_EQ(synchronize_error(stream), "neuron:0 queued op 'aten::bad' failed: bad shape");
  }
}

// Callers that finish() while others enqueue share the queue with the worker: nothing runs
// twice, two items never overlap, and each producer's order holds.
TEST(StreamTest, WaitingCallersAndTheWorkerTakeQueuedWorkInOrder) {
  Stream stream(0, 0, false);
  constexpr int kProducers = 2, kItems = 2000;
  std::vector<std::vector<int>> seen(kProducers);
  std::atomic<int> running{0}, overlaps{0};
  std::atomic<bool> producing{true};
  std::thread waiter([&] {
    while (producing) stream.finish();
  });
  std::vector<std::thread> producers;
  for (int t = 0; t < kProducers; ++t) {
    producers.emplace_back([&, t] {
      for (int i = 0; i < kItems; ++i) {
        stream.enqueue("item", [&, t, i] {
          if (running.fetch_add(1) != 0) ++overlaps;
          seen[t].push_back(i);
          // A few microseconds of work, so an item taken while another runs would overlap it.
          const auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(3);
          while (std::chrono::steady_clock::now() < until) {
          }
          running.fetch_sub(1);
        });
        if (i % 7 == 0) stream.synchronize();
      }
    });
  }
  for (auto& producer : producers) producer.join();
  producing = false;
  waiter.join();
  stream.synchronize();
  EXPECT_EQ(overlaps, 0) << "two items of one stream ran at the same time";
  for (int t = 0; t < kProducers; ++t) {
    ASSERT_EQ(seen[t].size(), static_cast<size_t>(kItems));
    for (int i = 0; i < kItems; ++i) ASSERT_EQ(seen[t][i], i) << "producer " << t << " reordered";
  }
}

}  // namespace
}  // namespace openneuron::runtime
