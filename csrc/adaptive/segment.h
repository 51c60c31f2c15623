// A stream's segment of recorded pointwise ops, and the rule for which ops may join it.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "adaptive/recorded_op.h"
#include "adaptive/segment_dataflow.h"
#include "adaptive/segment_program.h"
#include "runtime/stream.h"

namespace openneuron::adaptive {

// Ops join a segment while they share its iteration shape and every pair of accesses to
// overlapping memory, one of them a write, uses the very same view (same address, dtype,
// sizes and strides). Then running the ops tile by tile touches each element in the order
// one-by-one execution would, so the results are the same.
class Segment final : public runtime::PendingWork {
 public:
  static constexpr size_t kMaxOps = 48;

  // Adds `op`, first flushing what it cannot join. Registers the segment as `stream`'s
  // pending work.
  void record(runtime::Stream& stream, const RecordedOp& op);

  // False when ops like `op` have recently started segments that stayed single ops: holding
  // such an op back only adds latency, so it runs at once (re-tried every 64th time).
  bool worth_recording(const RecordedOp& op);

  void flush(runtime::Stream& stream) override;

  // No op is held (readable without the lock, as worth_recording reads it).
  bool empty() const { return size_.load(std::memory_order_relaxed) == 0; }

 private:
  enum class Fit { Joins, Shape, Alias, Limit };
  // Joins adds `op` to the segment (and registers it as `stream`'s pending work); otherwise
  // nothing changes and the reason is returned.
  Fit try_append_locked(runtime::Stream& stream, const RecordedOp& op);
  // Takes the ops and their dataflow out; the caller runs them, then hands the op vector back
  // with recycle() so that its room serves the next segment. take() locks, take_locked()
  // expects mutex_ held.
  struct Taken {
    std::vector<RecordedOp> ops;
    SegmentDataflow flow;
  };
  Taken take();
  Taken take_locked();
  void recycle(std::vector<RecordedOp> ops);

  // Learns from how the segment that `ops` formed turned out.
  void learn(const std::vector<RecordedOp>& ops);

  std::mutex mutex_;
  std::vector<RecordedOp> ops_;
  std::vector<RecordedOp> spare_;  // an emptied op vector that keeps its room
  DataflowBuilder flow_;
  std::atomic<size_t> size_{0};  // ops_.size(), readable without the lock
  // Per kind of segment-starting op: > 0 it led to fusion lately, < 0 it stayed alone.
  std::mutex history_mutex_;
  std::unordered_map<uint64_t, int> history_;
  uint32_t skipped_ = 0;
};

// A fused segment as queued: its program and the views it runs on.
struct SegmentLaunch {
  std::shared_ptr<const SegmentProgram> program;
  std::vector<RecordedView> outputs;  // per SegmentDataflow output
  std::vector<RecordedInput> external;
  std::vector<const char*> names;  // the eager ops, joined only if a kernel fails
  bool perturb = false;
  // Runs the program's kernels in order; a kernel error names the segment's eager ops.
  void run() const;
};

// Queues `ops` (in order, one segment, `flow` their dataflow) on `stream`: one op as eager
// queues it; more through the compiler as one fused kernel, or op by op if the compiler declines.
void run_segment(runtime::Stream& stream, const std::vector<RecordedOp>& ops, SegmentDataflow flow);

}  // namespace openneuron::adaptive
