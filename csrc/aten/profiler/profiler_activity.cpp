// Device activity for torch.profiler: a Kineto activity profiler registered through PyTorch's
// PrivateUse1 profiler registry. Each session turns the runtime tracer on, stamps every host op's
// correlation id on the work it queues, and reports the device ops and copies (per stream, with
// start, end and bytes) linked to the host op that launched them.
#define USE_KINETO 1  // the wheel's Kineto headers and registry are compiled only under this
// Kineto's activity metadata formats with fmt, whose compiled part libtorch does not export.
#define FMT_HEADER_ONLY 1

#include <GenericTraceActivity.h>
#include <IActivityProfiler.h>
#include <libkineto.h>
#include <torch/csrc/profiler/standalone/privateuse1_profiler.h>
#include <torch/csrc/utils/pybind.h>

#include <chrono>
#include <memory>
#include <mutex>
#include <set>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "runtime/host_sampler.h"
#include "runtime/profile_settings.h"
#include "runtime/runtime.h"
#include "runtime/tracer.h"

namespace openneuron::bridge {

namespace {

using libkineto::ActivityType;
using runtime::Activity;
using runtime::ActivityKind;
using runtime::HostSample;
using runtime::ProfileSettings;

// The last finished session's activities and host samples, for Python (torch keeps Kineto
// metadata such as a copy's bytes only in the exported trace).
std::mutex g_last_mutex;
std::vector<Activity> g_last_activities;
std::vector<HostSample> g_last_samples;

// Device memory in use over every device, for the host-memory samples.
int64_t device_allocated_bytes() {
  if (!runtime::Runtime::is_initialized()) return 0;
  auto& rt = runtime::Runtime::get();
  int64_t total = 0;
  for (int d = 0; d < rt.device_count(); ++d) {
    total += rt.device(d).allocator().stats().allocated_bytes[runtime::kAllPools].current;
  }
  return total;
}

const char* kind_name(ActivityKind kind) {
  switch (kind) {
    case ActivityKind::kCopyHostToDevice:
      return "HtoD";
    case ActivityKind::kCopyDeviceToHost:
      return "DtoH";
    case ActivityKind::kCopyDeviceToDevice:
      return "DtoD";
    case ActivityKind::kKernel:
      break;
  }
  return "kernel";
}

// Host ops nest (aten::linear around aten::addmm): the innermost open op owns the queued work.
thread_local std::vector<uint64_t> t_open_ops;

void set_innermost_correlation() {
  runtime::tracer::set_correlation(t_open_ops.empty() ? 0 : t_open_ops.back());
}

const char* copy_name(ActivityKind kind) {
  switch (kind) {
    case ActivityKind::kCopyHostToDevice:
      return "Memcpy HtoD (Host -> neuron)";
    case ActivityKind::kCopyDeviceToHost:
      return "Memcpy DtoH (neuron -> Host)";
    case ActivityKind::kCopyDeviceToDevice:
      return "Memcpy DtoD (neuron -> neuron)";
    case ActivityKind::kKernel:
      break;
  }
  return "";
}

class NeuronProfilerSession final : public libkineto::IActivityProfilerSession {
 public:
  explicit NeuronProfilerSession(ProfileSettings settings) : settings_(std::move(settings)) {}

  void start() override {
    if (settings_.records_activities()) runtime::tracer::start();
    if (settings_.cpu_util || settings_.host_memory) {
      sampler_.start(std::chrono::milliseconds(settings_.sample_period_ms), device_allocated_bytes);
    }
    status_ = libkineto::TraceStatus::RECORDING;
  }

  void stop() override {
    // Work queued inside the profiled region belongs to it: let it finish before collecting.
    // Queued errors are left for the program's own next synchronize.
    if (runtime::Runtime::is_initialized()) {
      auto& rt = runtime::Runtime::get();
      for (int d = 0; d < rt.device_count(); ++d) rt.device(d).wait_idle();
    }
    if (settings_.records_activities()) {
      activities_ = runtime::select_activities(runtime::tracer::stop(), settings_);
    }
    std::vector<HostSample> samples = sampler_.stop();
    {
      std::lock_guard<std::mutex> lock(g_last_mutex);
      g_last_activities = activities_;
      g_last_samples = std::move(samples);
    }
    t_open_ops.clear();
    runtime::tracer::set_correlation(0);
    status_ = libkineto::TraceStatus::PROCESSING;
  }

  std::vector<std::string> errors() override { return errors_; }

  void processTrace(libkineto::ActivityLogger& logger) override {
    processTrace(logger, [](int32_t) -> const libkineto::ITraceActivity* { return nullptr; }, 0, 0);
  }

  void processTrace(libkineto::ActivityLogger& logger,
                    libkineto::getLinkedActivityCallback linked_activity, int64_t,
                    int64_t) override {
    int64_t first = 0, last = 0;
    for (const Activity& a : activities_) {
      first = first == 0 ? a.start_ns : std::min(first, a.start_ns);
      last = std::max(last, a.end_ns);
    }
    span_ = std::make_unique<libkineto::TraceSpan>(first, last, "neuron");
    int32_t next_id = 1;
    for (const Activity& a : activities_) {
      const bool kernel = a.kind == ActivityKind::kKernel;
      libkineto::GenericTraceActivity event(
          *span_, kernel ? ActivityType::CONCURRENT_KERNEL : ActivityType::GPU_MEMCPY,
          kernel ? std::string(a.name) : std::string(copy_name(a.kind)));
      event.startTime = a.start_ns;
      event.endTime = a.end_ns;
      event.id = next_id++;
      event.device = a.device;
      event.resource = static_cast<int32_t>(a.stream);
      event.threadId = static_cast<int32_t>(a.stream);
      if (a.correlation != 0) {
        event.linked = linked_activity(static_cast<int32_t>(a.correlation));
        event.flow.id = static_cast<uint32_t>(a.correlation);
        event.flow.type = libkineto::kLinkAsyncCpuGpu;
        event.flow.start = 0;
      }
      event.addMetadata("device", a.device);
      event.addMetadata("stream", a.stream);
      event.addMetadata("correlation", a.correlation);
      if (!kernel) event.addMetadata("bytes", a.bytes);
      event.log(logger);
    }
  }

  std::unique_ptr<libkineto::DeviceInfo> getDeviceInfo() override {
    return std::make_unique<libkineto::DeviceInfo>(
        libkineto::DeviceInfo{0, 0x1000000, "neuron", "neuron (simulated NeuronCore)"});
  }

  std::vector<libkineto::ResourceInfo> getResourceInfos() override {
    std::set<std::pair<int, int64_t>> streams;
    for (const Activity& a : activities_) streams.insert({a.device, a.stream});
    std::vector<libkineto::ResourceInfo> result;
    for (const auto& [device, stream] : streams) {
      result.push_back(libkineto::ResourceInfo{
          stream, stream, device,
          "neuron:" + std::to_string(device) + " stream " + std::to_string(stream)});
    }
    return result;
  }

  std::unique_ptr<libkineto::CpuTraceBuffer> getTraceBuffer() override { return nullptr; }

  void pushCorrelationId(uint64_t id) override {
    t_open_ops.push_back(id);
    runtime::tracer::set_correlation(id);
  }

  void popCorrelationId() override {
    if (!t_open_ops.empty()) t_open_ops.pop_back();
    set_innermost_correlation();
  }

 private:
  ProfileSettings settings_;
  runtime::HostSampler sampler_;
  std::vector<Activity> activities_;
  std::vector<std::string> errors_;
  std::unique_ptr<libkineto::TraceSpan> span_;
};

class NeuronActivityProfiler final : public libkineto::IActivityProfiler {
 public:
  const std::string& name() const override { return name_; }

  const std::set<ActivityType>& availableActivities() const override { return activities_; }

  // The session's settings come from the profiler config's custom string (TorchNeuron's
  // NeuronConfig writes one); one that cannot be read raises at the profile's start.
  std::unique_ptr<libkineto::IActivityProfilerSession> configure(
      const std::set<ActivityType>& requested, const libkineto::Config& config) override {
    {
      // Whatever this profile records replaces the last one's, nothing included.
      std::lock_guard<std::mutex> lock(g_last_mutex);
      g_last_activities.clear();
      g_last_samples.clear();
    }
    if (!requested.count(ActivityType::CONCURRENT_KERNEL) &&
        !requested.count(ActivityType::GPU_MEMCPY)) {
      return nullptr;  // a CPU-only profile: leave the device untraced
    }
    return std::make_unique<NeuronProfilerSession>(
        runtime::parse_profile_settings(config.getCustomConfig()));
  }

  std::unique_ptr<libkineto::IActivityProfilerSession> configure(
      int64_t, int64_t, const std::set<ActivityType>& requested,
      const libkineto::Config& config) override {
    return configure(requested, config);
  }

 private:
  std::string name_{"neuron"};
  std::set<ActivityType> activities_{ActivityType::CONCURRENT_KERNEL, ActivityType::GPU_MEMCPY};
};

REGISTER_PRIVATEUSE1_PROFILER(NeuronActivityProfiler);

}  // namespace

// A copy of one of the last session's records, taken under their lock.
template <typename T>
std::vector<T> locked_copy(const std::vector<T>& records) {
  std::lock_guard<std::mutex> lock(g_last_mutex);
  return records;
}

void register_profiler_bindings(pybind11::module& module) {
  module.def("_last_device_activities", [] {
    const std::vector<Activity> activities = locked_copy(g_last_activities);
    pybind11::list result;
    for (const Activity& a : activities) {
      pybind11::dict entry;
      entry["name"] = a.kind == ActivityKind::kKernel ? a.name : copy_name(a.kind);
      entry["kind"] = kind_name(a.kind);
      entry["device"] = a.device;
      entry["stream"] = a.stream;
      entry["correlation"] = a.correlation;
      entry["start_ns"] = a.start_ns;
      entry["end_ns"] = a.end_ns;
      entry["bytes"] = a.bytes;
      result.append(entry);
    }
    return result;
  });
  module.def("_last_host_samples", [] {
    const std::vector<HostSample> samples = locked_copy(g_last_samples);
    pybind11::list result;
    for (const HostSample& s : samples) {
      pybind11::dict entry;
      entry["time_ns"] = s.time_ns;
      entry["process_cpu_percent"] = s.process_cpu_percent;
      entry["system_cpu_percent"] = s.system_cpu_percent;
      entry["resident_bytes"] = s.resident_bytes;
      entry["device_allocated_bytes"] = s.device_allocated_bytes;
      result.append(entry);
    }
    return result;
  });
  module.def(
      "_parse_profile_settings",
      [](const std::string& text) {
        ProfileSettings s = runtime::parse_profile_settings(text);
        pybind11::dict entry;
        entry["device"] = s.device;
        entry["runtime"] = s.runtime;
        entry["cpu_util"] = s.cpu_util;
        entry["host_memory"] = s.host_memory;
        entry["max_events_per_nc"] = s.max_events_per_core;
        entry["capture_enabled_for_nc"] = std::vector<int>(s.cores.begin(), s.cores.end());
        entry["profile_output_dir"] = s.output_dir;
        entry["neff_cache_dir"] = s.neff_cache_dir;
        entry["precache_node_info"] = s.precache_node_info;
        entry["sample_period_ms"] = s.sample_period_ms;
        return entry;
      },
      "The settings a profiler config string asks for (ValueError for one that cannot be read).");
}

}  // namespace openneuron::bridge
