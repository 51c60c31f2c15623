// The switch, the per-stream segments and the counters.
#include "adaptive/adaptive_eager.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <set>
#include <stdexcept>
#include <unordered_map>

#include "adaptive/metrics_counters.h"
#include "adaptive/segment.h"

namespace openneuron::adaptive {

namespace {

bool enabled_from_environment() {
  const char* value = std::getenv("OPENNEURON_ADAPTIVE_EAGER");
  if (value == nullptr || *value == '\0' || std::strcmp(value, "0") == 0) return false;
  if (std::strcmp(value, "1") == 0) return true;
  std::fprintf(stderr,
               "openneuron: OPENNEURON_ADAPTIVE_EAGER='%s' is not 0 or 1; adaptive eager is off\n",
               value);
  return false;
}

std::atomic<bool>& enabled_flag() {
  static std::atomic<bool> flag{enabled_from_environment()};
  return flag;
}

std::atomic<bool> perturb{false};

struct Segments {
  std::mutex mutex;
  // Never destroyed, like the streams they belong to: a stream may flush at process exit.
  std::unordered_map<const runtime::Stream*, Segment*> by_stream;
  std::string last_fallback;
  std::set<std::string> reported;
};

Segments& segments() {
  static auto* all = new Segments();
  return *all;
}

Segment& segment_for(runtime::Stream& stream) {
  thread_local const runtime::Stream* last_stream = nullptr;
  thread_local Segment* last_segment = nullptr;
  if (last_stream == &stream) return *last_segment;
  Segments& all = segments();
  std::lock_guard<std::mutex> lock(all.mutex);
  Segment*& segment = all.by_stream[&stream];
  if (segment == nullptr) segment = new Segment();
  last_stream = &stream;
  last_segment = segment;
  return *segment;
}

// Ops the kernel library would reject by their arguments stay eager, so their error is raised
// by the op's own queued work and names it.
bool well_formed(const RecordedOp& op) {
  if (op.num_inputs != (op.is_cast ? 1 : kernels::pointwise_arity(op.op))) return false;
  if (op.is_cast && op.inputs[0].on_host) return false;
  for (int k = 0; k < op.num_inputs; ++k) {
    const RecordedView& in = op.inputs[k].view;
    if (in.ndim != op.out.ndim) return false;
    for (int d = 0; d < in.ndim; ++d) {
      if (in.sizes[d] != op.out.sizes[d]) return false;
    }
  }
  return op.out.numel() > 0;
}

}  // namespace

Counters& counters() {
  static auto* all = new Counters();
  return *all;
}

void note_fallback(const std::string& reason) {
  count(&Counters::fallbacks);
  Segments& all = segments();
  std::lock_guard<std::mutex> lock(all.mutex);
  all.last_fallback = reason;
  if (all.reported.insert(reason).second) {
    std::fprintf(stderr, "openneuron: adaptive eager ran a segment op by op: %s\n", reason.c_str());
  }
}

bool perturb_fused_results() { return perturb.load(std::memory_order_relaxed); }
void set_perturb_fused_results(bool on) { perturb.store(on); }

bool enabled() { return enabled_flag().load(std::memory_order_relaxed); }

void set_enabled(bool on) {
  const bool was = enabled_flag().exchange(on);
  if (was && !on) flush_all();
}

bool record(runtime::Stream& stream, const RecordedOp& op) {
  if (!enabled() || stream.launch_blocking() || !well_formed(op)) return false;
  Segment& segment = segment_for(stream);
  // A small op that would open a segment on an idle stream runs at once, as plain eager runs it
  // inline: the device is waiting, and recording costs the host more than fusing saves.
  if (segment.empty() && op.out.numel() <= runtime::kSmallWorkElements && stream.looks_idle()) {
    count(&Counters::ran_at_once);
    return false;
  }
  if (!segment.worth_recording(op)) {
    count(&Counters::ran_at_once);
    return false;
  }
  segment.record(stream, op);
  count(&Counters::ops_recorded);
  return true;
}

void flush_all() {
  std::vector<runtime::Stream*> streams;
  {
    Segments& all = segments();
    std::lock_guard<std::mutex> lock(all.mutex);
    for (const auto& entry : all.by_stream) {
      streams.push_back(const_cast<runtime::Stream*>(entry.first));
    }
  }
  for (runtime::Stream* stream : streams) stream->flush_pending();
}

Metrics metrics() {
  const Counters& c = counters();
  Metrics m;
  m.ops_recorded = c.ops_recorded;
  m.segments = c.segments;
  m.fused_segments = c.fused_segments;
  m.fused_ops = c.fused_ops;
  m.single_ops = c.single_ops;
  m.cache_hits = c.cache_hits;
  m.compiles = c.compiles;
  m.fallbacks = c.fallbacks;
  m.stores_skipped = c.stores_skipped;
  m.ended_by_shape = c.ended_by_shape;
  m.ended_by_alias = c.ended_by_alias;
  m.ended_by_limit = c.ended_by_limit;
  m.ended_by_stream = c.ended_by_stream;
  m.ran_at_once = c.ran_at_once;
  return m;
}

void reset_metrics() {
  Counters& c = counters();
  for (auto* counter :
       {&c.ops_recorded, &c.segments, &c.fused_segments, &c.fused_ops, &c.single_ops, &c.cache_hits,
        &c.compiles, &c.fallbacks, &c.stores_skipped, &c.ended_by_shape, &c.ended_by_alias,
        &c.ended_by_limit, &c.ended_by_stream, &c.ran_at_once}) {
    counter->store(0);
  }
}

std::string last_fallback_reason() {
  Segments& all = segments();
  std::lock_guard<std::mutex> lock(all.mutex);
  return all.last_fallback;
}

}  // namespace openneuron::adaptive
