// Samples the host while a profile records: the process's and the whole machine's CPU
// utilisation, the process's resident memory and the device memory in use, at a fixed period
// on a thread of its own. Torch-free; reads /proc (Linux).
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace openneuron::runtime {

struct HostSample {
  int64_t time_ns = 0;                 // wall clock, the profiler's clock (tracer::now_ns)
  double process_cpu_percent = 0;      // this process over the last period; 100 = one core
  double system_cpu_percent = 0;       // every core of the machine; 100 = all busy
  int64_t resident_bytes = 0;          // the process's resident set
  int64_t device_allocated_bytes = 0;  // what device_bytes() returned (0 without one)
};

class HostSampler {
 public:
  HostSampler() = default;
  ~HostSampler();
  HostSampler(const HostSampler&) = delete;
  HostSampler& operator=(const HostSampler&) = delete;

  // Starts sampling every `period`; each sample covers the time since the one before (the
  // first, since start). `device_bytes` may be empty. Restarting discards earlier samples.
  void start(std::chrono::milliseconds period, std::function<int64_t()> device_bytes);

  // Takes a last sample, stops the thread and hands back every sample in time order; with
  // nothing started, an empty list.
  std::vector<HostSample> stop();

 private:
  struct Reading {
    int64_t time_ns = 0;
    int64_t process_cpu_ns = 0;
    uint64_t system_busy = 0;
    uint64_t system_total = 0;
  };
  static Reading read();
  HostSample sample(Reading& previous) const;
  void run(std::chrono::milliseconds period);

  std::function<int64_t()> device_bytes_;
  std::thread thread_;
  std::mutex mutex_;
  std::condition_variable wake_;
  bool stopping_ = false;
  std::vector<HostSample> samples_;
};

}  // namespace openneuron::runtime
