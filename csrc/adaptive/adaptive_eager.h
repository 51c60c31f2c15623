// The adaptive eager front end: a switch, the entry point eager kernels call instead of
// queuing a pointwise kernel, and its counters.
//
// While on, each stream keeps a segment of recorded pointwise ops. A segment is flushed when
// anything else reaches the stream (another op, a copy, an event, synchronize, query), when
// the next op cannot join it (another shape, memory it would alias differently, size limit),
// or when the switch turns off. A flushed segment of two or more ops is lowered to the graph
// IR, optimised by the compiler's pipeline, cached by its signature and queued as one fused
// kernel; results equal queuing the ops one by one, bit for bit.
#pragma once

#include <cstdint>
#include <string>

#include "adaptive/recorded_op.h"
#include "runtime/stream.h"

namespace openneuron::adaptive {

// OPENNEURON_ADAPTIVE_EAGER=1 turns it on at start; set_enabled() changes it for the process.
// Turning it off flushes every pending segment.
bool enabled();
void set_enabled(bool on);

// Takes `op` into `stream`'s segment and returns true; false when adaptive eager is off, the
// stream runs work inline (launch blocking), ops like this one lately stayed single-op
// segments (holding them back gains nothing), or the op is small work (at most
// runtime::kSmallWorkElements elements) that would open a segment while the stream is idle (it
// runs at once, as plain eager would), and the caller queues the op itself.
// `op.out_in_device_block` says whether its output lies in the device's caching allocator.
bool record(runtime::Stream& stream, const RecordedOp& op);

// Flushes every stream's pending segment.
void flush_all();

struct Metrics {
  int64_t ops_recorded = 0;
  int64_t segments = 0;        // flushed segments
  int64_t fused_segments = 0;  // run as one fused kernel
  int64_t fused_ops = 0;       // ops inside those
  int64_t single_ops = 0;      // segments of one op, queued as eager would
  int64_t cache_hits = 0;
  int64_t compiles = 0;         // cache misses compiled through the pipeline
  int64_t fallbacks = 0;        // segments the compiler could not take, run op by op
  int64_t stores_skipped = 0;   // results never written: overwritten in the segment, or freed
  int64_t ended_by_shape = 0;   // segment ended: the next op had another shape
  int64_t ended_by_alias = 0;   // ... the next op's memory overlapped differently
  int64_t ended_by_limit = 0;   // ... the size limit
  int64_t ended_by_stream = 0;  // ... other work reached the stream (ops, copies, syncs)
  int64_t ran_at_once = 0;      // ops not held back: ops like them lately stayed alone, or a
                                // small op that would open a segment on an idle stream
};
Metrics metrics();
void reset_metrics();

// The reason the last fallback happened (empty if none).
std::string last_fallback_reason();

// Fault injection for tests that prove equality checks see fused results: while on, every
// fused segment flips the lowest bit of its first output's first byte.
void set_perturb_fused_results(bool on);

}  // namespace openneuron::adaptive
