// How a segment's ops read and write values, resolved op by op while they are recorded: each
// distinct view of device memory is one entry, and one scan of the entries' byte ranges both
// finds a view's entry and tells whether the op may join (memory seen two ways ends a segment).
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <vector>

#include "adaptive/recorded_op.h"

namespace openneuron::adaptive {

// Each external operand once, each op's result an SSA value, each written buffer's last
// version an output (unless nobody can read it).
struct SegmentDataflow {
  std::vector<RecordedInput> external;  // operands read before the segment writes them
  // Per op and argument: >= 0 an external operand, < 0 the result of op (-1 - value).
  std::vector<std::array<int, 3>> args;
  std::vector<int> outputs;  // ops whose results are stored, in order
  // Per output: the external operand whose memory it overwrites in place, or -1.
  std::vector<int> output_aliases;
  int64_t stores_skipped = 0;  // ops whose result is never stored (overwritten or freed)
};

// Builds a SegmentDataflow one op at a time, in time linear in the number of distinct views
// per op (the entries' byte ranges sit in one compact array).
class DataflowBuilder {
 public:
  // The fused kernels' operand limit: every external operand (host scalars included) is at
  // most one input of a kernel, and every written view at most one output.
  static constexpr size_t kMaxOperands = 64;

  enum class Fit { Joins, Alias, Limit };
  // Alias when a view of `op` overlaps memory the segment sees another way and one side writes
  // it; Limit when the segment could need more than kMaxOperands kernel operands.
  Fit fits(const RecordedOp& op) const;

  // Adds `op` (which fits()) as the segment's next op.
  void add(const RecordedOp& op);

  // fits() and, when it Joins, add() in one pass over the entries (each view looked up once).
  Fit try_add(const RecordedOp& op);

  // The dataflow of the ops added so far, every written buffer's last version an output; the
  // builder is empty again afterwards.
  SegmentDataflow take();

  bool empty() const { return ops_ == 0; }
  size_t operands() const { return flow_.external.size() + written_entries_; }

 private:
  struct Range {
    uintptr_t begin, end;  // [begin, end) in bytes
    bool written;
  };
  struct Entry {
    RecordedView view;
    int value;        // the version the memory holds now: as in SegmentDataflow::args
    int external;     // the external operand it was read as, or -1
    int last_writer;  // the op that last wrote it, or -1
  };
  // The entry seen exactly as `view`, or -1; `*conflict` is set when some other entry overlaps
  // it and one of the two is a write.
  int find(const RecordedView& view, bool write, bool* conflict) const;
  int add_entry(const RecordedView& view, bool write);
  // add() with the entries of the op's views already looked up (-1: look again, or add one).
  void add_resolved(const RecordedOp& op, const int* input_entries, int out_entry);

  static constexpr size_t kTypicalOps = 48;
  std::vector<Range> ranges_;  // per entry
  std::vector<Entry> entries_;
  SegmentDataflow flow_;
  size_t written_entries_ = 0;
  int ops_ = 0;
};

// The dataflow of `ops` as recorded one after another (they must each fit).
SegmentDataflow analyse_dataflow(const std::vector<RecordedOp>& ops);

// Drops outputs whose memory `is_live` says is no longer allocated: nobody can read what the op
// would have stored there. Counts every result never stored in `stores_skipped`.
void drop_dead_outputs(SegmentDataflow& flow, const std::vector<RecordedOp>& ops,
                       const std::function<bool(const void*)>& is_live);

// True when the two views are the same memory seen the same way.
bool same_view(const RecordedView& a, const RecordedView& b);

// True when the views' byte ranges intersect.
bool views_overlap(const RecordedView& a, const RecordedView& b);

}  // namespace openneuron::adaptive
