// Runs a device's collectives in order on a communication stream of their own, each after the
// work its producer stream had queued when it was submitted (as NCCL runs on its own stream
// after an event recorded on the current stream).
#pragma once

#include <functional>
#include <memory>

#include "distributed/completion.h"
#include "runtime/stream.h"

namespace openneuron::distributed {

class CollectiveQueue {
 public:
  // The queue of device `device` (not range-checked: the caller checks it), created on first use
  // and kept for the life of the process, since allocators keep references to its streams.
  static CollectiveQueue& for_device(int device);

  // The stream collectives run on; buffers they use are recorded on it (record_stream).
  runtime::Stream& stream() { return collectives_; }

  // Blocks the host until nothing is queued or running on `producer` (if not null) or on the
  // communication stream: a collective run then on the calling thread keeps stream order.
  void wait_until_idle(runtime::Stream* producer);

  // Queues `run` on the communication stream behind earlier submissions and behind the work
  // queued so far on `producer` (if not null). `run` performs the whole collective; if it
  // throws, the completion fails with its message. Returns at once.
  std::shared_ptr<Completion> submit(const char* op_name, runtime::Stream* producer,
                                     std::function<void()> run);

  // Like submit(), but `start` only starts a transfer and returns a function that waits for its
  // end. That wait runs on a stream of its own, one for sends and one for receives (`receive`),
  // so later submissions start without waiting for this peer, and a receive that still has to
  // post its data receive never waits behind a send that waits for a peer's receive: sends and
  // receives around a ring cannot deadlock one another.
  std::shared_ptr<Completion> submit_transfer(const char* op_name, runtime::Stream* producer,
                                              bool receive,
                                              std::function<std::function<void()>()> start);

 private:
  explicit CollectiveQueue(int device);
  void wait_for_producer(runtime::Stream* producer);

  runtime::Stream collectives_;
  runtime::Stream sends_;
  runtime::Stream receives_;
};

}  // namespace openneuron::distributed
