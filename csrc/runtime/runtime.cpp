#include "runtime/runtime.h"

#include <pthread.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <mutex>
#include <string>

#include "runtime/errors.h"

namespace openneuron::runtime {

namespace {

std::atomic<Runtime*> g_runtime{nullptr};
std::atomic<bool> g_bad_fork{false};
std::mutex g_init_mutex;

// At exit, before the static objects that kernels use are destroyed (they were created
// before the runtime, so their destructors run after this handler): queued work that has
// not started is dropped, and the kernels running now get a bounded time to finish.
void halt_streams_at_exit() {
  if (Runtime* runtime = g_runtime.load()) {
    for (int i = 0; i < runtime->device_count(); ++i) {
      runtime->device(i).halt_streams(std::chrono::milliseconds(2000));
    }
  }
}

void mark_child_after_fork() {
  // Worker threads do not survive fork(); the child must start afresh with spawn.
  if (g_runtime.load() != nullptr) {
    g_bad_fork = true;
    g_runtime = nullptr;
  }
}

thread_local int t_current_device = 0;
thread_local std::vector<Stream*> t_current_streams;

}  // namespace

Runtime::Runtime(RuntimeConfig config) : config_(std::move(config)) {
  for (int i = 0; i < config_.device_count; ++i) {
    devices_.push_back(std::make_unique<Device>(i, config_));
  }
}

Runtime& Runtime::get() {
  if (Runtime* runtime = g_runtime.load(std::memory_order_acquire)) return *runtime;
  if (g_bad_fork) {
    throw ForkedChildError(
        "the neuron runtime cannot be used in a process forked after it was initialised; "
        "use the 'spawn' start method (torch.multiprocessing.set_start_method('spawn')) for "
        "worker processes that use neuron tensors");
  }
  std::lock_guard<std::mutex> lock(g_init_mutex);
  if (Runtime* runtime = g_runtime.load()) return *runtime;
  auto* runtime = new Runtime(config_from_environment());  // leaked on purpose: see header
  static std::once_flag fork_handler_installed;
  std::call_once(fork_handler_installed, [] {
    pthread_atfork(nullptr, nullptr, mark_child_after_fork);
    std::atexit(halt_streams_at_exit);
  });
  g_runtime.store(runtime, std::memory_order_release);
  return *runtime;
}

bool Runtime::is_initialized() { return g_runtime.load() != nullptr; }

bool Runtime::in_bad_fork() { return g_bad_fork.load(); }

int Runtime::device_count_or_zero() noexcept {
  if (Runtime* runtime = g_runtime.load()) return runtime->device_count();
  try {
    return config_from_environment().device_count;
  } catch (...) {
    return 0;
  }
}

Device& Runtime::device(int index) {
  if (index < 0 || index >= device_count()) check_device_index(index);
  return *devices_[index];
}

void Runtime::synchronize_all() {
  for (auto& device : devices_) device->synchronize();
}

void check_device_index(int index) {
  int count = Runtime::get().device_count();
  if (index >= 0 && index < count) return;
  std::string names;
  for (int i = 0; i < count; ++i) names += (i ? ", neuron:" : "neuron:") + std::to_string(i);
  // Opens with the reference PrivateUse1 backend's (OpenReg's) sentence, which its tests match.
  throw DeviceIndexError("The device index is out of range: neuron device index " +
                         std::to_string(index) + ", this process has " + std::to_string(count) +
                         " neuron device" + (count == 1 ? "" : "s") + " (" + names +
                         "); OPENNEURON_DEVICES sets how many");
}

int current_device() { return t_current_device; }

void set_current_device(int index) {
  check_device_index(index);
  t_current_device = index;
}

Stream& current_stream(int device) {
  Runtime& runtime = Runtime::get();
  Device& target = runtime.device(device);
  if (static_cast<int>(t_current_streams.size()) > device && t_current_streams[device]) {
    return *t_current_streams[device];
  }
  return target.default_stream();
}

void set_current_stream(Stream& stream) {
  if (static_cast<int>(t_current_streams.size()) <= stream.device()) {
    t_current_streams.resize(stream.device() + 1, nullptr);
  }
  t_current_streams[stream.device()] = &stream;
}

}  // namespace openneuron::runtime
