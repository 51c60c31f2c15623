// The outcome of one queued collective or transfer: pending, succeeded or failed, observable from
// any thread, by the host (wait) or by a device stream (block).
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "runtime/stream.h"

namespace openneuron::distributed {

// Always owned by a shared_ptr (block() keeps it alive from a queued task).
class Completion : public std::enable_shared_from_this<Completion> {
 public:
  // Marks the work done; a non-empty `error` marks it failed. Runs the callbacks registered with
  // on_done() on the calling thread, once. Later calls are ignored.
  void finish(const std::string& error = {});

  bool is_done() const;
  // True once done with an error; error() is then the message.
  bool failed() const;
  std::string error() const;

  // Blocks the host until done; false if `timeout` passed first (a zero or negative timeout
  // waits without limit).
  bool wait_for(std::chrono::milliseconds timeout) const;

  // Makes `stream` wait, without blocking the host, until this work is done (nothing is queued
  // if it already succeeded). If it failed, the queued wait fails with the error, which the
  // stream's next synchronize() raises.
  // `op_name` must outlive the stream (a string literal).
  void block(runtime::Stream& stream, const char* op_name) const;

  // Calls `callback(error)` once the work is done (at once if it already is).
  void on_done(std::function<void(const std::string& error)> callback);

  // A completion that finishes when every one of `parts` has, failing with the first error.
  static std::shared_ptr<Completion> all_of(const std::vector<std::shared_ptr<Completion>>& parts);

 private:
  mutable std::mutex mutex_;
  mutable std::condition_variable finished_;
  bool done_ = false;
  std::string error_;
  std::vector<std::function<void(const std::string&)>> callbacks_;
};

}  // namespace openneuron::distributed
