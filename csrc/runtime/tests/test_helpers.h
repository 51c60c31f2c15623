// Small tools the runtime suites share: gates that hold a stream back until the test lets
// it go, bounded polling, a stream's synchronize error as text, and scoped environment variables.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "runtime/errors.h"
#include "runtime/stream.h"

namespace openneuron::runtime::testing {

// Upper bound on any wait in these suites: a broken implementation fails, it never hangs.
constexpr std::chrono::seconds kWaitLimit{5};

// A one-shot gate. Work queued on a stream waits on it, so the test decides when the stream
// may proceed. Opening on destruction lets a stream drain even when an assertion bailed out.
class Gate {
 public:
  Gate() : state_(std::make_shared<State>()) {}
  ~Gate() { open(); }
  Gate(const Gate&) = delete;
  Gate& operator=(const Gate&) = delete;

  void open() {
    {
      std::lock_guard<std::mutex> lock(state_->mutex);
      state_->opened = true;
    }
    state_->changed.notify_all();
  }

  // Work for Stream::enqueue that blocks its stream until the gate opens (or kWaitLimit).
  std::function<void()> waiter() const {
    return [state = state_] {
      std::unique_lock<std::mutex> lock(state->mutex);
      if (!state->changed.wait_for(lock, kWaitLimit, [&] { return state->opened; })) {
        state->timed_out = true;
      }
    };
  }

  // True when some waiter gave up: the test's own logic never opened the gate in time.
  bool timed_out() const {
    std::lock_guard<std::mutex> lock(state_->mutex);
    return state_->timed_out;
  }

 private:
  struct State {
    std::mutex mutex;
    std::condition_variable changed;
    bool opened = false;
    bool timed_out = false;
  };
  std::shared_ptr<State> state_;
};

// Opens a gate from another thread after a short pause, so the test thread can block in a
// call that must wait for gated work. The pause only gives a broken implementation the chance
// to return early; a correct one passes whatever the scheduling.
class OpenLater {
 public:
  explicit OpenLater(Gate& gate, std::chrono::milliseconds pause = std::chrono::milliseconds(30))
      : thread_([&gate, pause] {
          std::this_thread::sleep_for(pause);
          gate.open();
        }) {}
  ~OpenLater() { thread_.join(); }

 private:
  std::thread thread_;
};

// Polls `condition` for up to `limit`. Used to assert that something does NOT happen: a
// correct implementation never makes the condition true, so the result cannot flake.
inline bool becomes_true_within(const std::function<bool()>& condition,
                                std::chrono::milliseconds limit = std::chrono::milliseconds(100)) {
  auto deadline = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < deadline) {
    if (condition()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return condition();
}

// The QueuedWorkError message synchronize() raises, or "" when it raises nothing.
inline std::string synchronize_error(Stream& stream) {
  try {
    stream.synchronize();
  } catch (const QueuedWorkError& error) {
    return error.what();
  }
  return "";
}

// Sets (or unsets, for std::nullopt) an environment variable and restores it on scope exit.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, std::optional<std::string> value) : name_(name) {
    if (const char* old = std::getenv(name)) previous_ = std::string(old);
    apply(value);
  }
  ~ScopedEnv() { apply(previous_); }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  void apply(const std::optional<std::string>& value) {
    if (value)
      setenv(name_.c_str(), value->c_str(), 1);
    else
      unsetenv(name_.c_str());
  }
  std::string name_;
  std::optional<std::string> previous_;
};

}  // namespace openneuron::runtime::testing
