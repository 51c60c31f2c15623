// A stream's segment of recorded pointwise ops, and the rule for which ops may join it.
#pragma once

#include <mutex>
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

  void flush(runtime::Stream& stream) override;

 private:
  enum class Fit { Joins, Shape, Alias, Limit };
  Fit fits(const RecordedOp& op) const;
  // Takes the ops out under the lock; the caller runs them.
  std::vector<RecordedOp> take();

  std::mutex mutex_;
  std::vector<RecordedOp> ops_;
  struct Access {
    kernels::TensorView view;
    bool write;
  };
  std::vector<Access> accesses_;
};

// Queues `ops` (in order, one segment) on `stream`: one op as eager queues it; more through
// the compiler as one fused kernel, or op by op if the compiler declines.
void run_segment(runtime::Stream& stream, std::vector<RecordedOp> ops);

// True when the two views are the same memory seen the same way.
bool same_view(const kernels::TensorView& a, const kernels::TensorView& b);

// True when the views' byte ranges intersect.
bool views_overlap(const kernels::TensorView& a, const kernels::TensorView& b);

}  // namespace openneuron::adaptive
