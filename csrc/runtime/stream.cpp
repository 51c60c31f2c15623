#include "runtime/stream.h"

#include <chrono>
#include <exception>
#include <memory>

#include "runtime/errors.h"

namespace openneuron::runtime {

Stream::Stream(int device, int64_t id, bool launch_blocking)
    : device_(device), id_(id), launch_blocking_(launch_blocking) {}

Stream::~Stream() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  work_ready_.notify_all();
  if (worker_.joinable()) worker_.join();
}

void Stream::record_failure(const char* op_name, const char* what) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (first_error_.empty()) {
    first_error_ = std::string("neuron:") + std::to_string(device_) + " queued op '" + op_name +
                   "' failed: " + what;
  }
}

void Stream::record_activity(const char* op_name, const TraceInfo& trace, uint64_t correlation,
                             int64_t start_ns) const {
  tracer::record(Activity{op_name, trace.kind, device_, id_, correlation, start_ns,
                          tracer::now_ns(), trace.bytes});
}

void Stream::enqueue(const char* op_name, std::function<void()> work, TraceInfo trace) {
  flush_pending();
  if (gathering_ == this) {
    gather(op_name, std::move(work), trace, /*small=*/false);
    return;
  }
  const bool traced = tracer::enabled();
  if (launch_blocking_) {
    const int64_t start_ns = traced ? tracer::now_ns() : 0;
    struct RecordOnExit {  // the activity is recorded whether or not the work throws
      const Stream* stream;
      const char* name;
      const TraceInfo& trace;
      bool traced;
      int64_t start_ns;
      ~RecordOnExit() {
        if (traced) stream->record_activity(name, trace, tracer::current_correlation(), start_ns);
      }
    } record_on_exit{this, op_name, trace, traced, start_ns};
    try {
      work();
    } catch (const std::exception& e) {
      throw QueuedWorkError(std::string("neuron:") + std::to_string(device_) + " op '" + op_name +
                            "' failed: " + e.what());
    } catch (...) {
      throw QueuedWorkError(std::string("neuron:") + std::to_string(device_) + " op '" + op_name +
                            "' failed: unknown exception");
    }
    return;
  }
  bool wake = false;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!worker_.joinable()) worker_ = std::thread([this] { run_worker(); });
    queue_batch_locked();  // another thread's gathered work came first
    queue_.push_back(
        Task{op_name, std::move(work), trace, traced ? tracer::current_correlation() : 0, traced});
    queued_.store(queue_.size(), std::memory_order_release);
    submissions_.fetch_add(1, std::memory_order_relaxed);
    wake = worker_sleeping_;
  }
  if (wake) work_ready_.notify_one();
}

bool Stream::spin_for_work() {
  // Eager code enqueues op after op a few microseconds apart: a short spin catches the
  // next one without a sleep/wake round trip through the kernel.
  const auto deadline = std::chrono::steady_clock::now() + kWorkerSpin;
  for (int i = 1;; ++i) {
    if (queued_.load(std::memory_order_acquire) != 0) return true;
#if defined(__x86_64__)
    __builtin_ia32_pause();
#endif
    if (i % 32 == 0 && std::chrono::steady_clock::now() > deadline) return false;
  }
}

bool Stream::begin_inline() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (busy() || stopping_ || !queue_.empty() || !batch_.empty()) return false;
  running_.store(true, std::memory_order_release);
  submissions_.fetch_add(1, std::memory_order_relaxed);
  return true;
}

bool Stream::begin_gather() {
  if (launch_blocking_ || gathering_ != nullptr) return false;
  gathering_ = this;
  return true;
}

void Stream::gather(const char* op_name, std::function<void()> work, TraceInfo trace, bool small) {
  const bool traced = tracer::enabled();
  bool wake = false;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    batch_.push_back(
        Task{op_name, std::move(work), trace, traced ? tracer::current_correlation() : 0, traced});
    batch_small_ = batch_small_ && small;
    // A device with nothing to do would wait for the rest of the program: hand it what there is.
    if (!small && queue_.empty() && !busy()) wake = queue_batch_locked();
  }
  if (wake) work_ready_.notify_one();
}

bool Stream::queue_batch_locked() {
  if (batch_.empty()) return false;
  if (!worker_.joinable()) worker_ = std::thread([this] { run_worker(); });
  auto items = std::make_shared<std::vector<Task>>(std::move(batch_));
  batch_.clear();
  batch_small_ = true;
  // Items record their own failures and activities; the task around them records neither.
  queue_.push_back(Task{"gathered work", [this, items] { run_items(*items); }, {}, 0, false});
  queued_.store(queue_.size(), std::memory_order_release);
  submissions_.fetch_add(1, std::memory_order_relaxed);
  return worker_sleeping_;
}

void Stream::queue_batch() {
  bool wake = false;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    wake = queue_batch_locked();
  }
  if (wake) work_ready_.notify_one();
}

void Stream::submit_gathered() {
  if (gathering_ != nullptr) gathering_->queue_batch();
}

void Stream::end_gather() {
  if (gathering_ != this) return;
  gathering_ = nullptr;
  std::vector<Task> items;
  bool wake = false;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (batch_.empty()) return;
    if (batch_small_ && !busy() && !stopping_ && queue_.empty()) {
      items = std::move(batch_);  // small work on an idle stream: run it here, as enqueue_small
      batch_.clear();
      running_.store(true, std::memory_order_release);
      submissions_.fetch_add(1, std::memory_order_relaxed);
    } else {
      wake = queue_batch_locked();
    }
  }
  if (wake) work_ready_.notify_one();
  if (!items.empty()) {
    run_items(items);
    end_inline();
  }
}

void Stream::run_task(Task& task) {
  const int64_t start_ns = task.traced ? tracer::now_ns() : 0;
  try {
    task.work();
  } catch (const std::exception& e) {
    record_failure(task.op_name, e.what());
  } catch (...) {
    record_failure(task.op_name, "unknown exception");
  }
  if (task.traced) record_activity(task.op_name, task.trace, task.correlation, start_ns);
  task.work = nullptr;  // release captured state as soon as the work is done
}

void Stream::run_items(std::vector<Task>& items) {
  for (Task& item : items) run_task(item);
}

void Stream::end_inline() {
  bool wake_worker = false;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    running_.store(false, std::memory_order_release);
    // Another thread may have queued work meanwhile; the worker held off while we ran.
    wake_worker = !queue_.empty() && worker_sleeping_;
    if ((queue_.empty() && idle_waiters_ > 0) || halted_) became_idle_.notify_all();
  }
  if (wake_worker) work_ready_.notify_one();
}

void Stream::run_worker() {
  std::unique_lock<std::mutex> lock(mutex_);
  // Work can start only when queued and nothing runs inline on a caller's thread.
  const auto runnable = [this] { return !queue_.empty() && !busy() && !halted_; };
  for (;;) {
    if (!runnable() && !stopping_) {
      lock.unlock();
      spin_for_work();
      lock.lock();
    }
    if (!runnable() && !stopping_) {
      worker_sleeping_ = true;
      work_ready_.wait(lock, [&] { return stopping_ || runnable(); });
      worker_sleeping_ = false;
    }
    if (queue_.empty() || halted_) return;  // stopping with nothing left to do, or halted
    if (busy()) {                           // stopping while work runs inline: let it finish first
      worker_sleeping_ = true;
      work_ready_.wait(lock, [this] { return !busy(); });
      worker_sleeping_ = false;
      continue;
    }
    run_front_task_locked(lock);
  }
}

void Stream::run_front_task_locked(std::unique_lock<std::mutex>& lock) {
  Task task = std::move(queue_.front());
  queue_.pop_front();
  queued_.store(queue_.size(), std::memory_order_release);
  running_.store(true, std::memory_order_release);
  lock.unlock();
  run_task(task);  // captured state is released outside the lock
  lock.lock();
  running_.store(false, std::memory_order_release);
  if ((queue_.empty() && idle_waiters_ > 0) || halted_) became_idle_.notify_all();
}

void Stream::wait_idle() {
  submit_gathered();
  flush_pending();
  queue_batch();
  spin_until_idle();
  std::unique_lock<std::mutex> lock(mutex_);
  wait_idle_locked(lock);
}

void Stream::spin_until_idle() const {
  // A synchronize after a short op (e.g. reading a loss) would otherwise always pay a
  // sleep/wake round trip through the kernel. The spin is short and bounded by time (a pause's
  // length differs between CPUs): past it the caller sleeps, because while the work runs
  // on every core a spinning (or yielding) caller takes a share of a core from it.
  const auto deadline = std::chrono::steady_clock::now() + kSynchronizeSpin;
  for (int i = 1;; ++i) {
    if (queued_.load(std::memory_order_acquire) == 0 && !running_.load(std::memory_order_acquire)) {
      return;
    }
#if defined(__x86_64__)
    __builtin_ia32_pause();
#endif
    if (i % 32 == 0 && std::chrono::steady_clock::now() > deadline) return;
  }
}

void Stream::wait_idle_locked(std::unique_lock<std::mutex>& lock) {
  ++idle_waiters_;
  became_idle_.wait(lock, [this] { return queue_.empty() && !busy(); });
  --idle_waiters_;
}

void Stream::run_queued_here_locked(std::unique_lock<std::mutex>& lock) {
  // As the worker would; a worker woken meanwhile finds the stream busy and sleeps again.
  while (!queue_.empty() && !busy() && !halted_) run_front_task_locked(lock);
}

void Stream::finish() {
  submit_gathered();
  flush_pending();
  queue_batch();
  std::unique_lock<std::mutex> lock(mutex_);
  run_queued_here_locked(lock);
  if (queue_.empty() && !busy()) return;
  lock.unlock();
  spin_until_idle();
  lock.lock();
  wait_idle_locked(lock);
}

void Stream::synchronize() {
  finish();
  std::unique_lock<std::mutex> lock(mutex_);
  if (!first_error_.empty()) {
    std::string message = std::move(first_error_);
    first_error_.clear();
    throw QueuedWorkError(message);
  }
}

bool Stream::halt(std::chrono::milliseconds timeout) {
  pending_.store(nullptr, std::memory_order_release);  // held-back work is dropped like queued work
  std::unique_lock<std::mutex> lock(mutex_);
  batch_.clear();  // and so is gathered work
  halted_ = true;
  if (worker_.joinable() && worker_.get_id() == std::this_thread::get_id()) return true;
  work_ready_.notify_all();
  return became_idle_.wait_for(lock, timeout, [this] { return !busy(); });
}

bool Stream::query() const {
  // Held-back work counts as queued: flushing it is what enqueue would have done already.
  submit_gathered();
  const_cast<Stream*>(this)->flush_pending();
  const_cast<Stream*>(this)->queue_batch();
  std::lock_guard<std::mutex> lock(mutex_);
  return queue_.empty() && !busy();
}

}  // namespace openneuron::runtime
