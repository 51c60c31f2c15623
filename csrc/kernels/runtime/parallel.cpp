#include "kernels/runtime/parallel.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

namespace openneuron::kernels {

namespace {

thread_local bool t_inside_parallel_region = false;

// Workers and the caller spin briefly before sleeping: eager code runs kernel after kernel a
// few microseconds apart, and a futex sleep/wake round trip costs tens of microseconds on a
// small (virtual) host. The spin is short so idle threads do not starve others for long.
class ThreadPool {
 public:
  explicit ThreadPool(int threads) {
    for (int i = 1; i < threads; ++i) workers_.emplace_back([this, i] { run(i); });
  }
  // Never destroyed: kernels may run from stream workers until the process exits.
  int size() const { return static_cast<int>(workers_.size()) + 1; }

  // Runs job(i) for i in [0, size()); the caller takes i = 0.
  void run_all(const std::function<void(int)>& job) {
    std::unique_lock<std::mutex> dispatch(dispatch_mutex_);  // one parallel region at a time
    pending_.store(size() - 1, std::memory_order_relaxed);
    bool wake = false;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      job_ = &job;
      generation_.fetch_add(1, std::memory_order_release);
      wake = sleepers_ > 0;
    }
    if (wake) start_.notify_all();
    job(0);
    if (!spin_until([this] { return pending_.load(std::memory_order_acquire) == 0; })) {
      std::unique_lock<std::mutex> lock(mutex_);
      caller_sleeping_ = true;
      finished_.wait(lock, [this] { return pending_.load(std::memory_order_acquire) == 0; });
      caller_sleeping_ = false;
    }
  }

 private:
  // By time, not by count: a pause lasts from 10 to 150 cycles depending on the CPU.
  static constexpr std::chrono::microseconds kSpin{30};

  template <typename Done>
  static bool spin_until(const Done& done) {
    const auto deadline = std::chrono::steady_clock::now() + kSpin;
    for (int i = 1;; ++i) {
      if (done()) return true;
#if defined(__x86_64__)
      __builtin_ia32_pause();
#endif
      if (i % 32 == 0 && std::chrono::steady_clock::now() > deadline) return done();
    }
  }

  void run(int index) {
    t_inside_parallel_region = true;
    uint64_t seen = 0;
    for (;;) {
      spin_until([&] { return generation_.load(std::memory_order_acquire) != seen; });
      const std::function<void(int)>* job;
      {
        std::unique_lock<std::mutex> lock(mutex_);
        if (generation_.load(std::memory_order_acquire) == seen) {
          ++sleepers_;
          start_.wait(lock, [&] { return generation_.load(std::memory_order_acquire) != seen; });
          --sleepers_;
        }
        seen = generation_.load(std::memory_order_acquire);
        job = job_;
      }
      (*job)(index);
      if (pending_.fetch_sub(1, std::memory_order_acq_rel) == 1) {
        std::lock_guard<std::mutex> lock(mutex_);
        if (caller_sleeping_) finished_.notify_one();
      }
    }
  }

  std::mutex dispatch_mutex_;
  std::mutex mutex_;
  std::condition_variable start_;
  std::condition_variable finished_;
  const std::function<void(int)>* job_ = nullptr;  // guarded by mutex_
  std::atomic<uint64_t> generation_{0};            // written under mutex_, read while spinning
  std::atomic<int> pending_{0};
  int sleepers_ = 0;              // guarded by mutex_
  bool caller_sleeping_ = false;  // guarded by mutex_
  std::vector<std::thread> workers_;
};

ThreadPool& pool() {
  static auto* instance = new ThreadPool(kernel_thread_count());
  return *instance;
}

}  // namespace

int kernel_thread_count() {
  static const int count = [] {
    if (const char* text = std::getenv("OPENNEURON_NUM_THREADS")) {
      int requested = std::atoi(text);
      if (requested >= 1) return requested;
    }
    return static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  }();
  return count;
}

void parallel_for(int64_t begin, int64_t end, int64_t grain,
                  const std::function<void(int64_t, int64_t)>& body) {
  const int64_t total = end - begin;
  if (total <= 0) return;
  const int threads = kernel_thread_count();
  if (t_inside_parallel_region || threads == 1 || total < 2 * std::max<int64_t>(grain, 1)) {
    body(begin, end);
    return;
  }
  const int64_t chunks = std::min<int64_t>(threads, total / std::max<int64_t>(grain, 1));
  const int64_t chunk_size = (total + chunks - 1) / chunks;
  std::exception_ptr failure;
  std::mutex failure_mutex;
  pool().run_all([&](int index) {
    const int64_t chunk_begin = begin + index * chunk_size;
    const int64_t chunk_end = std::min(end, chunk_begin + chunk_size);
    if (index >= chunks || chunk_begin >= chunk_end) return;
    const bool was_inside = t_inside_parallel_region;
    t_inside_parallel_region = true;
    try {
      body(chunk_begin, chunk_end);
    } catch (...) {
      std::lock_guard<std::mutex> lock(failure_mutex);
      if (!failure) failure = std::current_exception();
    }
    t_inside_parallel_region = was_inside;
  });
  if (failure) std::rethrow_exception(failure);
}

}  // namespace openneuron::kernels
