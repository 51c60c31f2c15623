#include "aten/core/memory_history.h"

#include <torch/csrc/profiler/combined_traceback.h>

#include <chrono>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "aten/core/runtime_errors.h"
#include "runtime/caching_allocator.h"
#include "runtime/runtime.h"

namespace openneuron::bridge {

namespace detail {
std::atomic<bool> g_memory_history_enabled{false};
}

namespace {

namespace py = pybind11;
using Traceback = std::shared_ptr<torch::CapturedTraceback>;

struct TraceEntry {
  const char* action;  // "alloc", "free_requested", "free_completed"
  int device;
  uintptr_t address;
  size_t bytes;
  int64_t stream;
  int64_t time_us;
  Traceback stack;
};

std::mutex g_mutex;
bool g_with_stacks = true;
size_t g_max_entries = 100000;
std::deque<TraceEntry> g_entries;
// The stack that allocated each live block, for the snapshot's block frames.
std::unordered_map<uintptr_t, Traceback> g_live_stacks;

int64_t now_us() {
  return std::chrono::duration_cast<std::chrono::microseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

void append(TraceEntry entry) {
  g_entries.push_back(std::move(entry));
  while (g_entries.size() > g_max_entries) g_entries.pop_front();
}

void set_history(bool enabled, bool with_stacks, size_t max_entries) {
  std::lock_guard<std::mutex> lock(g_mutex);
  g_with_stacks = with_stacks;
  g_max_entries = max_entries == 0 ? 1 : max_entries;
  if (!enabled) {
    g_entries.clear();
    g_live_stacks.clear();
  }
  detail::g_memory_history_enabled.store(enabled, std::memory_order_release);
}

// Symbolizes every captured stack once; frames come back as lists of {filename, line, name}.
class FrameTable {
 public:
  void add(const Traceback& stack) {
    if (stack && index_.emplace(stack.get(), pending_.size()).second) {
      pending_.push_back(stack.get());
    }
  }
  void symbolize() {
    torch::SymbolizedTracebacks symbolized = torch::symbolize(pending_);
    std::vector<py::dict> frames;
    for (const auto& frame : symbolized.all_frames) {
      py::dict f;
      f["filename"] = frame.filename;
      f["line"] = frame.lineno;
      f["name"] = frame.funcname;
      frames.push_back(f);
    }
    for (const auto& traceback : symbolized.tracebacks) {
      py::list list;
      for (uint64_t i : traceback) list.append(frames.at(i));
      lists_.push_back(list);
    }
  }
  py::list frames_of(const Traceback& stack) const {
    if (!stack) return py::list();
    return lists_.at(index_.at(stack.get()));
  }

 private:
  std::unordered_map<torch::CapturedTraceback*, size_t> index_;
  std::vector<torch::CapturedTraceback*> pending_;
  std::vector<py::list> lists_;
};

py::dict snapshot() {
  std::vector<std::vector<runtime::CachingAllocator::BlockInfo>> blocks;
  if (runtime::Runtime::is_initialized()) {
    auto& rt = runtime::Runtime::get();
    for (int d = 0; d < rt.device_count(); ++d) {
      blocks.push_back(rt.device(d).allocator().blocks());
    }
  }
  std::deque<TraceEntry> entries;
  std::unordered_map<uintptr_t, Traceback> live;
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    entries = g_entries;
    live = g_live_stacks;
  }
  FrameTable table;
  for (const auto& entry : entries) table.add(entry.stack);
  for (const auto& [address, stack] : live) table.add(stack);
  table.symbolize();

  py::list segments;
  for (size_t d = 0; d < blocks.size(); ++d) {
    for (const auto& block : blocks[d]) {
      auto found = live.find(block.address);
      py::list frames =
          block.allocated && found != live.end() ? table.frames_of(found->second) : py::list();
      py::dict b;
      b["address"] = block.address;
      b["size"] = block.size;
      b["requested_size"] = block.requested;
      b["state"] = block.allocated ? "active_allocated" : "inactive";
      b["frames"] = frames;
      py::dict segment;
      segment["device"] = d;
      segment["address"] = block.address;
      segment["total_size"] = block.size;
      segment["allocated_size"] = block.allocated ? block.size : 0;
      segment["active_size"] = block.allocated ? block.size : 0;
      segment["requested_size"] = block.requested;
      segment["stream"] = block.stream;
      segment["segment_type"] =
          block.size <= runtime::CachingAllocator::kSmallSize ? "small" : "large";
      segment["segment_pool_id"] = py::make_tuple(0, 0);
      segment["is_expandable"] = false;
      segment["frames"] = frames;
      segment["blocks"] = py::make_tuple(b);
      segments.append(segment);
    }
  }
  py::list device_traces;
  for (size_t d = 0; d < blocks.size(); ++d) device_traces.append(py::list());
  for (const auto& entry : entries) {
    if (entry.device < 0 || static_cast<size_t>(entry.device) >= blocks.size()) continue;
    py::dict e;
    e["action"] = entry.action;
    e["addr"] = entry.address;
    e["size"] = entry.bytes;
    e["stream"] = entry.stream;
    e["time_us"] = entry.time_us;
    e["frames"] = table.frames_of(entry.stack);
    device_traces[entry.device].cast<py::list>().append(e);
  }
  py::dict result;
  result["segments"] = segments;
  result["device_traces"] = device_traces;
  return result;
}

}  // namespace

void memory_history_on_alloc(int device, void* ptr, size_t bytes, int64_t stream) {
  bool with_stacks = false;
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    with_stacks = g_with_stacks;
  }
  // Gathered outside the lock: it may take the GIL.
  Traceback stack = with_stacks ? torch::CapturedTraceback::gather(true, false, false) : nullptr;
  const auto address = reinterpret_cast<uintptr_t>(ptr);
  std::lock_guard<std::mutex> lock(g_mutex);
  if (!memory_history_enabled()) return;
  g_live_stacks[address] = stack;
  append(TraceEntry{"alloc", device, address, bytes, stream, now_us(), std::move(stack)});
}

void memory_history_on_free(int device, void* ptr, size_t bytes, int64_t stream) {
  const auto address = reinterpret_cast<uintptr_t>(ptr);
  std::lock_guard<std::mutex> lock(g_mutex);
  if (!memory_history_enabled()) return;
  Traceback stack;
  auto found = g_live_stacks.find(address);
  if (found != g_live_stacks.end()) {
    stack = std::move(found->second);
    g_live_stacks.erase(found);
  }
  const int64_t time = now_us();
  append(TraceEntry{"free_requested", device, address, bytes, stream, time, stack});
  append(TraceEntry{"free_completed", device, address, bytes, stream, time, std::move(stack)});
}

void register_memory_history(py::module& module) {
  module.def("_record_memory_history", &set_history, py::arg("enabled"), py::arg("stacks"),
             py::arg("max_entries"));
  module.def("_memory_snapshot", [] {
    py::dict result;
    OPENNEURON_RUNTIME_CALL(result = snapshot());
    return result;
  });
}

}  // namespace openneuron::bridge
