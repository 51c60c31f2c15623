#include "distributed/completion.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "runtime/errors.h"

namespace openneuron::distributed {
namespace {

TEST(Completion, WaitForTimesOutWhilePendingAndReturnsOnceFinished) {
  auto completion = std::make_shared<Completion>();
  EXPECT_FALSE(completion->is_done());
  EXPECT_FALSE(completion->wait_for(std::chrono::milliseconds(5)));
  std::thread finisher([&] { completion->finish(); });
  EXPECT_TRUE(completion->wait_for(std::chrono::milliseconds(0)));
  finisher.join();
  EXPECT_TRUE(completion->is_done());
  EXPECT_FALSE(completion->failed());
}

TEST(Completion, KeepsTheFirstOutcome) {
  auto completion = std::make_shared<Completion>();
  completion->finish("peer 1 closed the connection");
  completion->finish();
  EXPECT_TRUE(completion->failed());
  EXPECT_EQ(completion->error(), "peer 1 closed the connection");
}

TEST(Completion, CallbacksRunOnceWhetherRegisteredBeforeOrAfter) {
  auto completion = std::make_shared<Completion>();
  std::atomic<int> calls{0};
  completion->on_done([&](const std::string& error) { calls += error.empty() ? 1 : 100; });
  completion->finish();
  completion->on_done([&](const std::string& error) { calls += error.empty() ? 1 : 100; });
  EXPECT_EQ(calls.load(), 2);
}

TEST(Completion, BlockMakesAStreamWaitAndCarriesTheError) {
  runtime::Stream stream(0, 5, false);
  auto completion = std::make_shared<Completion>();
  std::atomic<bool> ran_after{false};
  completion->block(stream, "wait_collective");
  stream.enqueue("after", [&] { ran_after = true; });
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_FALSE(ran_after.load()) << "the stream went past an unfinished collective";
  completion->finish("rank 1 timed out");
  try {
    stream.synchronize();
    FAIL() << "the failed collective did not surface at synchronize()";
  } catch (const runtime::QueuedWorkError& e) {
    EXPECT_NE(std::string(e.what()).find("rank 1 timed out"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("wait_collective"), std::string::npos) << e.what();
  }
  EXPECT_TRUE(ran_after.load());
}

TEST(Completion, AllOfFinishesAfterEveryPartWithTheFirstError) {
  auto a = std::make_shared<Completion>();
  auto b = std::make_shared<Completion>();
  auto both = Completion::all_of({a, b});
  a->finish("a failed");
  EXPECT_FALSE(both->is_done());
  b->finish("b failed");
  EXPECT_TRUE(both->is_done());
  EXPECT_EQ(both->error(), "a failed");
  EXPECT_TRUE(Completion::all_of({})->is_done());
}

}  // namespace
}  // namespace openneuron::distributed
