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
//
// Chunk i belongs to thread i (the caller is 0), so consecutive kernels over the same tensors
// find their part in the same core's cache. A chunk is claimed before it runs, though, and
// the caller claims and runs the chunks no worker has claimed by the time its own is done:
// with more busy threads than cores (the Python thread, autograd's, a stream's) a worker is
// often descheduled when a region starts, and waiting for it costs a scheduler time slice.
class ThreadPool {
 public:
  explicit ThreadPool(int threads) : claimed_(static_cast<size_t>(threads), 0) {
    for (int i = 1; i < threads; ++i) workers_.emplace_back([this, i] { run(i); });
  }
  // Never destroyed: kernels may run from stream workers until the process exits.

  // Runs chunk(c) once for every c in [0, chunks) (chunks <= the pool's threads) on this
  // thread and on the workers that claim theirs in time; returns when every chunk is done.
  // chunk must not throw.
  void run_chunks(int64_t chunks, const std::function<void(int64_t)>& chunk) {
    std::unique_lock<std::mutex> dispatch(dispatch_mutex_);  // one parallel region at a time
    bool wake = false;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      chunk_ = &chunk;
      chunks_ = chunks;
      std::fill(claimed_.begin(), claimed_.end(), 0);
      claimed_[0] = 1;
      done_.store(0, std::memory_order_relaxed);
      generation_.fetch_add(1, std::memory_order_release);
      wake = sleepers_ > 0;
    }
    if (wake) start_.notify_all();
    run_chunk(0);
    for (int64_t index = 1; index < chunks; ++index) {
      if (claim(index)) run_chunk(index);
    }
    if (!spin_until([&] { return done_.load(std::memory_order_acquire) == chunks; })) {
      std::unique_lock<std::mutex> lock(mutex_);
      caller_sleeping_ = true;
      finished_.wait(lock, [&] { return done_.load(std::memory_order_acquire) == chunks; });
      caller_sleeping_ = false;
    }
  }

 private:
  // By time, not by count: a pause's length differs between CPUs (4,000 took 100 µs on one).
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

  // Claims chunk `index` of the open region; false if someone has, or the region (as the
  // caller last opened it) has fewer chunks.
  bool claim(int64_t index) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (index >= chunks_ || claimed_[static_cast<size_t>(index)] != 0) return false;
    claimed_[static_cast<size_t>(index)] = 1;
    return true;
  }

  // Runs a claimed chunk of the open region (which stays open until the chunk is done).
  void run_chunk(int64_t index) {
    const int64_t chunks = chunks_;  // read first: the last chunk done may start a new region
    (*chunk_)(index);
    if (done_.fetch_add(1, std::memory_order_acq_rel) + 1 == chunks) {
      std::lock_guard<std::mutex> lock(mutex_);
      if (caller_sleeping_) finished_.notify_one();
    }
  }

  void run(int index) {
    t_inside_parallel_region = true;
    uint64_t seen = 0;
    for (;;) {
      spin_until([&] { return generation_.load(std::memory_order_acquire) != seen; });
      {
        std::unique_lock<std::mutex> lock(mutex_);
        if (generation_.load(std::memory_order_acquire) == seen) {
          ++sleepers_;
          start_.wait(lock, [&] { return generation_.load(std::memory_order_acquire) != seen; });
          --sleepers_;
        }
        seen = generation_.load(std::memory_order_acquire);
      }
      // A region that ended already has every chunk claimed; a later one is seen anew.
      if (claim(index)) run_chunk(index);
    }
  }

  std::mutex dispatch_mutex_;
  std::mutex mutex_;
  std::condition_variable start_;
  std::condition_variable finished_;
  // The open region, written under mutex_ (by its caller, who holds dispatch_mutex_); read
  // under mutex_, or by a thread that holds a claimed, unfinished chunk of it.
  const std::function<void(int64_t)>* chunk_ = nullptr;
  int64_t chunks_ = 0;
  std::vector<char> claimed_;            // per chunk
  std::atomic<uint64_t> generation_{0};  // written under mutex_, read while spinning
  std::atomic<int64_t> done_{0};
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

int available_kernel_threads() { return t_inside_parallel_region ? 1 : kernel_thread_count(); }

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
  pool().run_chunks(chunks, [&](int64_t index) {
    const int64_t chunk_begin = begin + index * chunk_size;
    const int64_t chunk_end = std::min(end, chunk_begin + chunk_size);
    if (chunk_begin >= chunk_end) return;
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
