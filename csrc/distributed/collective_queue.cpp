#include "distributed/collective_queue.h"

#include <exception>
#include <map>
#include <mutex>

#include "runtime/event.h"

namespace openneuron::distributed {

namespace {
// Stream ids outside the device's pool (0..32), so errors name them apart.
constexpr int64_t kCollectiveStreamId = -1;
constexpr int64_t kSendStreamId = -2;
constexpr int64_t kReceiveStreamId = -3;

// Runs `body`, turning any exception into the completion's error.
template <typename Body>
void run_into(Completion& completion, Body&& body) {
  try {
    body();
    completion.finish();
  } catch (const std::exception& e) {
    completion.finish(e.what());
  } catch (...) {
    completion.finish("unknown error in a collective");
  }
}
}  // namespace

CollectiveQueue& CollectiveQueue::for_device(int device) {
  static std::mutex mutex;
  static auto* queues = new std::map<int, CollectiveQueue*>();  // never destroyed, see header
  std::lock_guard<std::mutex> lock(mutex);
  auto& queue = (*queues)[device];
  if (queue == nullptr) queue = new CollectiveQueue(device);
  return *queue;
}

CollectiveQueue::CollectiveQueue(int device)
    : collectives_(device, kCollectiveStreamId, /*launch_blocking=*/false),
      sends_(device, kSendStreamId, /*launch_blocking=*/false),
      receives_(device, kReceiveStreamId, /*launch_blocking=*/false) {}

void CollectiveQueue::wait_until_idle(runtime::Stream* producer) {
  if (producer != nullptr) producer->wait_idle();
  collectives_.wait_idle();
}

void CollectiveQueue::wait_for_producer(runtime::Stream* producer) {
  // An idle producer has nothing the collective could overtake: no marker, no hand-off.
  if (producer == nullptr || producer->query()) return;
  runtime::Event ready;
  ready.record(*producer);
  ready.block(collectives_);
}

std::shared_ptr<Completion> CollectiveQueue::submit(const char* op_name, runtime::Stream* producer,
                                                    std::function<void()> run) {
  auto completion = std::make_shared<Completion>();
  wait_for_producer(producer);
  collectives_.enqueue(op_name, [completion, run = std::move(run)] { run_into(*completion, run); });
  return completion;
}

std::shared_ptr<Completion> CollectiveQueue::submit_transfer(
    const char* op_name, runtime::Stream* producer, bool receive,
    std::function<std::function<void()>()> start) {
  auto completion = std::make_shared<Completion>();
  wait_for_producer(producer);
  runtime::Stream& ends = receive ? receives_ : sends_;
  collectives_.enqueue(op_name, [&ends, op_name, completion, start = std::move(start)] {
    std::function<void()> wait_for_end;
    try {
      wait_for_end = start();
    } catch (const std::exception& e) {
      completion->finish(e.what());
      return;
    } catch (...) {
      completion->finish("unknown error starting a transfer");
      return;
    }
    ends.enqueue(op_name, [completion, wait_for_end = std::move(wait_for_end)] {
      run_into(*completion, wait_for_end);
    });
  });
  return completion;
}

}  // namespace openneuron::distributed
