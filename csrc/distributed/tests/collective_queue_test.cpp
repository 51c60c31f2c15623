#include "distributed/collective_queue.h"

#include <gtest/gtest.h>

#include <atomic>
#include <stdexcept>
#include <thread>

namespace openneuron::distributed {
namespace {

using namespace std::chrono_literals;

TEST(CollectiveQueue, RunsAfterTheProducersPendingWork) {
  runtime::Stream producer(0, 7, false);
  std::atomic<bool> produced{false};
  producer.enqueue("slow_kernel", [&] {
    std::this_thread::sleep_for(30ms);
    produced = true;
  });
  std::atomic<bool> saw_input{false};
  auto done = CollectiveQueue::for_device(0).submit("all_reduce", &producer,
                                                    [&] { saw_input = produced.load(); });
  ASSERT_TRUE(done->wait_for(2000ms));
  EXPECT_TRUE(saw_input.load()) << "the collective ran before its input was written";
  EXPECT_FALSE(done->failed());
}

TEST(CollectiveQueue, CollectivesRunInSubmissionOrder) {
  std::vector<int> order;
  auto& queue = CollectiveQueue::for_device(0);
  std::shared_ptr<Completion> last;
  for (int i = 0; i < 8; ++i)
    last = queue.submit("op", nullptr, [&order, i] { order.push_back(i); });
  ASSERT_TRUE(last->wait_for(2000ms));
  EXPECT_EQ(order, (std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7}));
}

TEST(CollectiveQueue, AFailingCollectiveFailsItsCompletionOnly) {
  auto& queue = CollectiveQueue::for_device(0);
  auto failed =
      queue.submit("all_gather", nullptr, [] { throw std::runtime_error("size mismatch"); });
  auto next = queue.submit("all_reduce", nullptr, [] {});
  ASSERT_TRUE(next->wait_for(2000ms));
  EXPECT_EQ(failed->error(), "size mismatch");
  EXPECT_FALSE(next->failed());
}

TEST(CollectiveQueue, AnUnfinishedTransferDoesNotHoldBackLaterWork) {
  auto& queue = CollectiveQueue::for_device(1);
  auto released = std::make_shared<std::atomic<bool>>(false);
  auto send = queue.submit_transfer("send", nullptr, false, [released] {
    return std::function<void()>([released] {
      while (!released->load()) std::this_thread::sleep_for(1ms);
    });
  });
  // A receive submitted after the send starts while the send is still waiting for its peer.
  auto recv = queue.submit_transfer("recv", nullptr, true, [released] {
    released->store(true);
    return std::function<void()>([] {});
  });
  ASSERT_TRUE(send->wait_for(2000ms)) << "the ring deadlocked";
  ASSERT_TRUE(recv->wait_for(2000ms));
}

// A receive's end posts its data receive, which a send's end on the peer may be waiting for:
// it must not queue behind this rank's own unfinished send end (a ring would deadlock).
TEST(CollectiveQueue, AReceiveEndDoesNotWaitBehindASendEnd) {
  auto& queue = CollectiveQueue::for_device(2);
  auto received = std::make_shared<std::atomic<bool>>(false);
  auto send = queue.submit_transfer("send", nullptr, false, [received] {
    return std::function<void()>([received] {
      const auto give_up = std::chrono::steady_clock::now() + 3s;
      while (!received->load() && std::chrono::steady_clock::now() < give_up)
        std::this_thread::sleep_for(1ms);
      if (!received->load()) throw std::runtime_error("the receive's end never ran");
    });
  });
  auto recv = queue.submit_transfer("recv", nullptr, true, [received] {
    return std::function<void()>([received] { received->store(true); });
  });
  ASSERT_TRUE(send->wait_for(5000ms));
  ASSERT_TRUE(recv->wait_for(5000ms));
  EXPECT_FALSE(send->failed()) << send->error();
}

TEST(CollectiveQueue, WaitUntilIdleReturnsAfterTheProducerAndTheQueueRan) {
  auto& queue = CollectiveQueue::for_device(3);
  runtime::Stream producer(3, 9, false);
  std::atomic<bool> produced{false}, collected{false};
  producer.enqueue("slow_kernel", [&] {
    std::this_thread::sleep_for(40ms);
    produced = true;
  });
  queue.submit("all_reduce", nullptr, [&] {
    std::this_thread::sleep_for(40ms);
    collected = true;
  });
  queue.wait_until_idle(&producer);
  EXPECT_TRUE(produced.load()) << "returned before the producer's work ran";
  EXPECT_TRUE(collected.load()) << "returned before the queued collective ran";
}

}  // namespace
}  // namespace openneuron::distributed
