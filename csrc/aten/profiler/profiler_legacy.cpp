// Device timing for the legacy autograd profiler (torch.autograd.profiler.profile(use_device=
// "neuron")): PyTorch's PrivateUse1 profiler stubs. Around every profiled op the profiler records
// one event before and one after on the current stream; an op's device time is the time the
// stream took between the two marks, so it covers the device work the op queued.
#include <c10/util/ApproximateClock.h>
#include <torch/csrc/profiler/stubs/base.h>

#include <functional>
#include <memory>

#include "aten/core/runtime_errors.h"
#include "runtime/event.h"
#include "runtime/runtime.h"

namespace openneuron::bridge {

namespace {

using runtime::Runtime;
using torch::profiler::impl::ProfilerVoidEventStub;

class NeuronLegacyProfilerStubs final : public torch::profiler::impl::ProfilerStubs {
 public:
  // A timed event on the calling thread's current stream of its current device; the host
  // time (when asked) is taken just before, as the profiler pairs the two.
  void record(c10::DeviceIndex* device, ProfilerVoidEventStub* event,
              int64_t* cpu_ns) const override {
    int current = 0;
    OPENNEURON_RUNTIME_CALL(current = runtime::current_device());
    if (device) *device = static_cast<c10::DeviceIndex>(current);
    auto marker = std::make_shared<runtime::Event>(/*enable_timing=*/true);
    if (cpu_ns) *cpu_ns = c10::getTime();
    OPENNEURON_RUNTIME_CALL(marker->record(runtime::current_stream(current)));
    *event = std::static_pointer_cast<void>(marker);
  }

  // Microseconds between the two marks (waits for both); 0 when either was never recorded,
  // e.g. for an op that began before profiling started, and never negative (an op that moved
  // to another stream can have its end mark reached first).
  float elapsed(const ProfilerVoidEventStub* start,
                const ProfilerVoidEventStub* end) const override {
    if (!start || !end || !*start || !*end) return 0.0F;
    const auto* first = static_cast<const runtime::Event*>(start->get());
    const auto* last = static_cast<const runtime::Event*>(end->get());
    double ms = 0;
    OPENNEURON_RUNTIME_CALL({
      first->synchronize();
      last->synchronize();
      ms = first->elapsed_ms(*last);
    });
    return ms > 0 ? static_cast<float>(ms * 1000.0) : 0.0F;
  }

  // Named ranges and marks are for external tools (NVTX-style); the simulator has none.
  void mark(const char*) const override {}
  void rangePush(const char*) const override {}
  void rangePop() const override {}

  bool enabled() const override { return true; }

  void onEachDevice(std::function<void(int)> op) const override {
    const int previous = runtime::current_device();
    for (int d = 0; d < Runtime::device_count_or_zero(); ++d) {
      OPENNEURON_RUNTIME_CALL(runtime::set_current_device(d));
      op(d);
    }
    OPENNEURON_RUNTIME_CALL(runtime::set_current_device(previous));
  }

  void synchronize() const override { OPENNEURON_RUNTIME_CALL(Runtime::get().synchronize_all()); }
};

// Registered when the extension loads; PyTorch keeps the pointer for the process's lifetime.
const bool g_legacy_profiler_registered = [] {
  static NeuronLegacyProfilerStubs stubs;
  torch::profiler::impl::registerPrivateUse1Methods(&stubs);
  return true;
}();

}  // namespace

}  // namespace openneuron::bridge
