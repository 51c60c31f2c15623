// A stream's segment of recorded pointwise ops, and the rule for which ops may join it.
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "adaptive/recorded_op.h"
#include "runtime/stream.h"

namespace openneuron::adaptive {

// Ops join a segment while they share its iteration shape and every pair of accesses to
// overlapping memory, one of them a write, uses the very same view (same address, dtype,
// sizes and strides). Then running the ops tile by tile touches each element in the order
// one-by-one execution would, so the results are the same.
class Segment final : public runtime::PendingWork {
 public:
  static constexpr size_t kMaxOps = 48;
  static constexpr size_t kMaxViews = 56;  // distinct views; the fused kernel takes 64 operands

  // Adds `op`, first flushing what it cannot join. Registers the segment as `stream`'s
  // pending work.
  void record(runtime::Stream& stream, const RecordedOp& op);

  // False when ops like `op` have recently started segments that stayed single ops: holding
  // such an op back only adds latency, so it runs at once (re-tried every 64th time).
  bool worth_recording(const RecordedOp& op);

  void flush(runtime::Stream& stream) override;

 private:
  enum class Fit { Joins, Shape, Alias, Limit };
  Fit fits(const RecordedOp& op) const;
  // Takes the ops out (and forgets their accesses); the caller runs them. take() locks,
  // take_locked() expects mutex_ held.
  std::vector<RecordedOp> take();
  std::vector<RecordedOp> take_locked();

  // Learns from how the segment that `ops` formed turned out.
  void learn(const std::vector<RecordedOp>& ops);

  std::mutex mutex_;
  std::vector<RecordedOp> ops_;
  std::atomic<size_t> size_{0};  // ops_.size(), readable without the lock
  // Per kind of segment-starting op: > 0 it led to fusion lately, < 0 it stayed alone.
  std::mutex history_mutex_;
  std::unordered_map<uint64_t, int> history_;
  uint32_t skipped_ = 0;
  // Distinct views the segment touches (the fused kernels' operands), with their byte ranges.
  struct Access {
    RecordedView view;
    uintptr_t begin, end;
    bool write;
  };
  void add_access(const RecordedView& view, bool write);
  std::vector<Access> accesses_;
};

// Queues `ops` (in order, one segment) on `stream`: one op as eager queues it; more through
// the compiler as one fused kernel, or op by op if the compiler declines.
void run_segment(runtime::Stream& stream, std::vector<RecordedOp> ops);

// True when the two views are the same memory seen the same way.
bool same_view(const RecordedView& a, const RecordedView& b);

// True when the views' byte ranges intersect.
bool views_overlap(const RecordedView& a, const RecordedView& b);

}  // namespace openneuron::adaptive
