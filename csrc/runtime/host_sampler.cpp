#include "runtime/host_sampler.h"

#include <time.h>
#include <unistd.h>

#include <fstream>
#include <string>

#include "runtime/tracer.h"

namespace openneuron::runtime {

namespace {

// Resident pages of this process (second field of /proc/self/statm), in bytes.
int64_t resident_bytes() {
  std::ifstream statm("/proc/self/statm");
  int64_t size_pages = 0, resident_pages = 0;
  if (!(statm >> size_pages >> resident_pages)) return 0;
  return resident_pages * static_cast<int64_t>(sysconf(_SC_PAGESIZE));
}

// The machine's busy and total jiffies over all cores (first line of /proc/stat).
void system_jiffies(uint64_t& busy, uint64_t& total) {
  std::ifstream stat("/proc/stat");
  std::string label;
  uint64_t user = 0, nice = 0, system = 0, idle = 0, iowait = 0, irq = 0, softirq = 0, steal = 0;
  busy = total = 0;
  if (!(stat >> label >> user >> nice >> system >> idle >> iowait >> irq >> softirq >> steal) ||
      label != "cpu") {
    return;
  }
  busy = user + nice + system + irq + softirq + steal;
  total = busy + idle + iowait;
}

}  // namespace

HostSampler::~HostSampler() { stop(); }

HostSampler::Reading HostSampler::read() {
  Reading reading;
  reading.time_ns = tracer::now_ns();
  timespec cpu{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &cpu);
  reading.process_cpu_ns = static_cast<int64_t>(cpu.tv_sec) * 1000000000 + cpu.tv_nsec;
  system_jiffies(reading.system_busy, reading.system_total);
  return reading;
}

HostSample HostSampler::sample(Reading& previous) const {
  Reading now = read();
  HostSample result;
  result.time_ns = now.time_ns;
  const int64_t wall_ns = now.time_ns - previous.time_ns;
  if (wall_ns > 0) {
    result.process_cpu_percent = 100.0 *
                                 static_cast<double>(now.process_cpu_ns - previous.process_cpu_ns) /
                                 static_cast<double>(wall_ns);
  }
  if (now.system_total > previous.system_total) {
    result.system_cpu_percent = 100.0 *
                                static_cast<double>(now.system_busy - previous.system_busy) /
                                static_cast<double>(now.system_total - previous.system_total);
  }
  result.resident_bytes = resident_bytes();
  result.device_allocated_bytes = device_bytes_ ? device_bytes_() : 0;
  previous = now;
  return result;
}

void HostSampler::run(std::chrono::milliseconds period) {
  Reading previous = read();
  std::unique_lock<std::mutex> lock(mutex_);
  while (true) {
    bool stopping = wake_.wait_for(lock, period, [this] { return stopping_; });
    lock.unlock();
    HostSample next = sample(previous);
    lock.lock();
    samples_.push_back(next);
    if (stopping) return;
  }
}

void HostSampler::start(std::chrono::milliseconds period, std::function<int64_t()> device_bytes) {
  stop();
  device_bytes_ = std::move(device_bytes);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = false;
    samples_.clear();
  }
  thread_ = std::thread([this, period] { run(period); });
}

std::vector<HostSample> HostSampler::stop() {
  if (!thread_.joinable()) return {};
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  thread_.join();
  std::lock_guard<std::mutex> lock(mutex_);
  return std::move(samples_);
}

}  // namespace openneuron::runtime
