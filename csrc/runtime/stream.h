// An in-order queue of device work, executed asynchronously by its own worker thread.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "runtime/tracer.h"

namespace openneuron::runtime {

class Stream;

// Work a front end holds back for a stream (adaptive eager's recorded ops). The stream calls
// flush() on the thread that next touches it (enqueue, synchronize, query, wait), before doing
// anything else, so held-back work keeps its place in stream order.
class PendingWork {
 public:
  virtual ~PendingWork() = default;
  // Enqueues the held-back work on `stream`; called at most once per set_pending().
  virtual void flush(Stream& stream) = 0;
};

class Stream {
 public:
  // A stream of device `device`; `id` is 0 for the default stream. With launch_blocking,
  // enqueue() runs work inline and throws its errors at once.
  Stream(int device, int64_t id, bool launch_blocking);
  ~Stream();
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;

  int device() const { return device_; }
  int64_t id() const { return id_; }
  bool launch_blocking() const { return launch_blocking_; }

  // Registers held-back work to flush before the stream's next use. `work` must outlive the
  // stream (front ends keep one per stream for the process).
  void set_pending(PendingWork* work) { pending_.store(work, std::memory_order_release); }

  // Flushes the registered pending work, if any (the stream does this itself on every use).
  void flush_pending() {
    if (pending_.load(std::memory_order_acquire) == nullptr) return;
    if (PendingWork* work = pending_.exchange(nullptr, std::memory_order_acq_rel))
      work->flush(*this);
  }

  // Queues `work` behind everything queued before and returns at once. If work throws,
  // the error is kept and raised by the next synchronize() as a QueuedWorkError naming
  // `op_name` (a string literal or other storage that outlives the stream). While tracing,
  // the item is recorded as an activity of kind `trace` with the caller's correlation id.
  void enqueue(const char* op_name, std::function<void()> work, TraceInfo trace = {});

  // Runs `work` at once on the calling thread when nothing is queued or running on the stream
  // (the outcome equals queuing it, without the hand-off to the worker thread); queues it
  // otherwise. Meant for work that takes about as long as that hand-off (tiny tensors): the
  // caller waits for it. Errors are kept and raised by synchronize(), as for enqueue().
  template <typename Work>
  void enqueue_small(const char* op_name, Work&& work, TraceInfo trace = {}) {
    flush_pending();
    if (gathering_ == this) {
      gather(op_name, std::function<void()>(std::forward<Work>(work)), trace, /*small=*/true);
      return;
    }
    if (!launch_blocking_ && begin_inline()) {
      const bool traced = tracer::enabled();
      const int64_t start_ns = traced ? tracer::now_ns() : 0;
      try {
        work();
      } catch (const std::exception& e) {
        record_failure(op_name, e.what());
      } catch (...) {
        record_failure(op_name, "unknown exception");
      }
      if (traced) record_activity(op_name, trace, tracer::current_correlation(), start_ns);
      end_inline();
      return;
    }
    enqueue(op_name, std::function<void()>(std::forward<Work>(work)), trace);
  }

  // Gathering, so that a compiled program's kernels reach the stream as one submission: from
  // begin_gather() to end_gather(), the calling thread's enqueue() and enqueue_small() calls on
  // this stream append to a batch instead of queuing. end_gather() queues the batch as one task
  // (run at once on the caller when the stream is idle and every item was small work). So that
  // the device never waits for the host to finish the program, an item other than small work
  // that arrives while the stream is idle is handed over at once with the batch so far. Anything
  // that waits (synchronize, query, wait_idle, an event's synchronize or query, on any stream)
  // and another thread's enqueue here submit the batch gathered so far first, so stream order,
  // host reads and each item's error and trace are as if queued one by one. False (nothing
  // gathered) with launch_blocking or while the thread already gathers.
  bool begin_gather();
  void end_gather();

  // Tasks handed to the stream so far (a gathered batch counts once), for tests.
  uint64_t submissions() const { return submissions_.load(std::memory_order_relaxed); }

  // Submits the calling thread's gathered batch, if any; every wait calls this first.
  static void submit_gathered();

  // Blocks until every queued item has run, then throws the first error captured since
  // the last synchronize(), if any (and forgets it, so the stream stays usable).
  void synchronize();

  // Blocks until idle without raising captured errors. Queued work that nothing runs yet
  // (the worker asleep) runs on the calling thread, which would only wait for it: this spares
  // the worker's wake-up and the caller's. For callers that hold no lock a task may need.
  void finish();

  // Blocks until idle without raising captured errors, running nothing on the calling thread
  // (for the allocator and events, which may hold locks that queued work takes).
  void wait_idle();

  // True when no queued work is pending or running.
  bool query() const;

  // A lock-free snapshot for heuristics: nothing was queued or running when it was read. It
  // flushes nothing and may be stale at once; never use it for ordering or correctness.
  bool looks_idle() const { return queued_.load(std::memory_order_acquire) == 0 && !busy(); }

  // For process exit: the worker starts no further queued work (it stays queued, never run),
  // and the call waits up to `timeout` for the task running now. Enqueueing still works
  // but nothing more runs. Returns false if the running task did not finish in time.
  bool halt(std::chrono::milliseconds timeout);

 private:
  struct Task {
    const char* op_name;
    std::function<void()> work;
    TraceInfo trace;
    uint64_t correlation;
    bool traced;  // tracing was on when it was queued
  };
  // How long an idle worker spins for the next op before sleeping (by time: a pause's length
  // differs between CPUs).
  static constexpr std::chrono::microseconds kWorkerSpin{30};
  // How long a synchronizing caller spins before sleeping: long enough for the short ops a
  // sync usually waits for (a loss, a flag), short against the work it would slow down.
  static constexpr std::chrono::microseconds kSynchronizeSpin{30};
  // Marks the stream busy if it is idle with nothing queued; false if it is not.
  bool begin_inline();
  // Appends to the batch of the gathering thread.
  void gather(const char* op_name, std::function<void()> work, TraceInfo trace, bool small);
  // Moves the gathered batch, if any, to the back of the queue as one task; true if the worker
  // needs waking. Called with mutex_ held.
  bool queue_batch_locked();
  // queue_batch_locked() under the lock, waking the worker if needed.
  void queue_batch();
  // Runs one task: its error is kept for synchronize(), its activity recorded when traced.
  void run_task(Task& task);
  // Runs gathered items in order, each as run_task() runs a task.
  void run_items(std::vector<Task>& items);
  void end_inline();
  bool busy() const { return running_.load(std::memory_order_acquire); }
  void run_worker();
  // Spins briefly until work is queued; true if some arrived.
  bool spin_for_work();
  // Spins briefly until nothing is queued or running (no guarantee: callers still wait).
  void spin_until_idle() const;
  void wait_idle_locked(std::unique_lock<std::mutex>& lock);
  // Runs queued tasks on the calling thread, in order, while no other thread runs one; returns
  // when the queue is empty or the worker (or an inline caller) is busy. Called with mutex_ held.
  void run_queued_here_locked(std::unique_lock<std::mutex>& lock);
  // Takes the front task, marks the stream busy and runs it with mutex_ released, then marks it
  // idle and wakes idle waiters if the queue is empty. Called with mutex_ held, queue non-empty.
  void run_front_task_locked(std::unique_lock<std::mutex>& lock);
  void record_failure(const char* op_name, const char* what);
  // Records a finished item that began at `start_ns` with the tracer.
  void record_activity(const char* op_name, const TraceInfo& trace, uint64_t correlation,
                       int64_t start_ns) const;

  const int device_;
  const int64_t id_;
  const bool launch_blocking_;
  mutable std::mutex mutex_;
  std::condition_variable work_ready_;
  std::condition_variable became_idle_;
  std::deque<Task> queue_;
  bool stopping_ = false;
  bool halted_ = false;
  // Notifications cost a futex call: send them only to threads that are actually asleep.
  bool worker_sleeping_ = false;
  int idle_waiters_ = 0;
  std::atomic<size_t> queued_{0};  // queue_.size(), readable without the lock while spinning
  // Work is running (on the worker or inline); written under the lock, read also while spinning.
  std::atomic<bool> running_{false};
  std::string first_error_;
  std::atomic<PendingWork*> pending_{nullptr};
  std::thread worker_;       // started by the first enqueue()
  std::vector<Task> batch_;  // gathered, not yet queued; guarded by mutex_
  bool batch_small_ = true;  // every gathered item was small work
  std::atomic<uint64_t> submissions_{0};
  // The stream the calling thread gathers for (at most one at a time).
  static inline thread_local Stream* gathering_ = nullptr;
};

// Ops on at most this many elements take about as long as handing them to the stream's worker.
constexpr int64_t kSmallWorkElements = 2048;

// Queues `work` on `stream`, or, when it touches at most kSmallWorkElements elements and the
// stream is idle, runs it at once on the calling thread (same outcome, no hand-off).
template <typename Work>
void enqueue_sized(Stream& stream, const char* name, int64_t elements, Work&& work) {
  if (elements <= kSmallWorkElements) {
    stream.enqueue_small(name, std::forward<Work>(work));
  } else {
    stream.enqueue(name, std::forward<Work>(work));
  }
}

}  // namespace openneuron::runtime
