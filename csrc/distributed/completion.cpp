#include "distributed/completion.h"

#include <stdexcept>

namespace openneuron::distributed {

void Completion::finish(const std::string& error) {
  std::vector<std::function<void(const std::string&)>> callbacks;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (done_) return;
    done_ = true;
    error_ = error;
    callbacks.swap(callbacks_);
  }
  finished_.notify_all();
  for (auto& callback : callbacks) callback(error);
}

bool Completion::is_done() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return done_;
}

bool Completion::failed() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return done_ && !error_.empty();
}

std::string Completion::error() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return error_;
}

bool Completion::wait_for(std::chrono::milliseconds timeout) const {
  std::unique_lock<std::mutex> lock(mutex_);
  if (timeout.count() <= 0) {
    finished_.wait(lock, [&] { return done_; });
    return true;
  }
  return finished_.wait_for(lock, timeout, [&] { return done_; });
}

void Completion::block(runtime::Stream& stream, const char* op_name) const {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (done_ && error_.empty()) return;  // nothing to wait for
  }
  // The queued task keeps this completion alive until it has run.
  stream.enqueue(op_name, [self = shared_from_this()] {
    self->wait_for(std::chrono::milliseconds(0));
    const std::string error = self->error();
    if (!error.empty()) throw std::runtime_error(error);
  });
}

void Completion::on_done(std::function<void(const std::string& error)> callback) {
  std::string error;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!done_) {
      callbacks_.push_back(std::move(callback));
      return;
    }
    error = error_;
  }
  callback(error);
}

std::shared_ptr<Completion> Completion::all_of(
    const std::vector<std::shared_ptr<Completion>>& parts) {
  auto combined = std::make_shared<Completion>();
  if (parts.empty()) {
    combined->finish();
    return combined;
  }
  struct Tally {
    std::mutex mutex;
    size_t remaining;
    std::string first_error;
  };
  auto tally = std::make_shared<Tally>();
  tally->remaining = parts.size();
  for (const auto& part : parts) {
    part->on_done([combined, tally](const std::string& error) {
      std::string outcome;
      {
        std::lock_guard<std::mutex> lock(tally->mutex);
        if (!error.empty() && tally->first_error.empty()) tally->first_error = error;
        if (--tally->remaining > 0) return;
        outcome = tally->first_error;
      }
      combined->finish(outcome);
    });
  }
  return combined;
}

}  // namespace openneuron::distributed
