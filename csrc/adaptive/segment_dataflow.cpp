// Resolving a segment's views to values as its ops are recorded.
#include "adaptive/segment_dataflow.h"

#include <algorithm>

namespace openneuron::adaptive {

bool same_view(const RecordedView& a, const RecordedView& b) {
  if (a.data != b.data || a.dtype != b.dtype || a.ndim != b.ndim) return false;
  for (int d = 0; d < a.ndim; ++d) {
    if (a.sizes[d] != b.sizes[d] || (a.sizes[d] != 1 && a.strides[d] != b.strides[d])) return false;
  }
  return true;
}

namespace {

struct ByteRange {
  uintptr_t begin, end;  // [begin, end)
};

ByteRange byte_range(const RecordedView& v) {
  const int64_t element = static_cast<int64_t>(kernels::element_size(v.dtype));
  int64_t low = 0, high = 0;
  for (int d = 0; d < v.ndim; ++d) {
    if (v.sizes[d] == 0) return {0, 0};
    const int64_t reach = (v.sizes[d] - 1) * v.strides[d];
    (reach < 0 ? low : high) += reach;
  }
  const auto base = reinterpret_cast<uintptr_t>(v.data);
  return {base + low * element, base + (high + 1) * element};
}

}  // namespace

bool views_overlap(const RecordedView& a, const RecordedView& b) {
  const ByteRange x = byte_range(a), y = byte_range(b);
  return x.begin < y.end && y.begin < x.end;
}

int DataflowBuilder::find(const RecordedView& view, bool write, bool* conflict) const {
  const ByteRange range = byte_range(view);
  int found = -1;
  for (size_t e = 0; e < ranges_.size(); ++e) {
    const Range& r = ranges_[e];
    if (range.begin >= r.end || r.begin >= range.end) continue;
    if (same_view(entries_[e].view, view)) {
      found = static_cast<int>(e);
    } else if (write || r.written) {
      *conflict = true;
    }
  }
  return found;
}

DataflowBuilder::Fit DataflowBuilder::fits(const RecordedOp& op) const {
  bool conflict = false;
  size_t new_operands = 0;
  for (int k = 0; k < op.num_inputs; ++k) {
    if (op.inputs[k].on_host || find(op.inputs[k].view, false, &conflict) < 0) ++new_operands;
  }
  const int out = find(op.out, true, &conflict);
  if (out < 0 || !ranges_[out].written) ++new_operands;
  if (conflict) return Fit::Alias;
  // A view new to the segment is counted once per use: an op reading one new view twice
  // counts it twice, which only ends a segment a little early.
  return operands() + new_operands > kMaxOperands ? Fit::Limit : Fit::Joins;
}

int DataflowBuilder::add_entry(const RecordedView& view, bool write) {
  const ByteRange range = byte_range(view);
  ranges_.push_back({range.begin, range.end, write});
  entries_.push_back({view, 0, -1, -1});
  return static_cast<int>(entries_.size() - 1);
}

void DataflowBuilder::add(const RecordedOp& op) {
  const int unknown[3] = {-1, -1, -1};
  add_resolved(op, unknown, -1);
}

DataflowBuilder::Fit DataflowBuilder::try_add(const RecordedOp& op) {
  bool conflict = false;
  size_t new_operands = 0;
  int input_entries[3] = {-1, -1, -1};
  for (int k = 0; k < op.num_inputs; ++k) {
    if (!op.inputs[k].on_host) input_entries[k] = find(op.inputs[k].view, false, &conflict);
    if (input_entries[k] < 0) ++new_operands;
  }
  const int out = find(op.out, true, &conflict);
  if (out < 0 || !ranges_[out].written) ++new_operands;
  if (conflict) return Fit::Alias;
  if (operands() + new_operands > kMaxOperands) return Fit::Limit;
  add_resolved(op, input_entries, out);
  return Fit::Joins;
}

void DataflowBuilder::add_resolved(const RecordedOp& op, const int* input_entries, int out_entry) {
  if (ops_ == 0) {  // room for a typical segment at once, not grown op by op
    flow_.args.reserve(kTypicalOps);
    flow_.external.reserve(kTypicalOps);
  }
  const int index = ops_++;
  std::array<int, 3> args = {0, 0, 0};
  bool added_entry = false;
  for (int a = 0; a < op.num_inputs; ++a) {
    const RecordedInput& in = op.inputs[a];
    bool conflict = false;
    // A view not found before may have been added by an earlier operand of this op.
    const int entry = in.on_host              ? -1
                      : input_entries[a] >= 0 ? input_entries[a]
                                              : find(in.view, false, &conflict);
    if (entry >= 0) {
      args[a] = entries_[entry].value;
      continue;
    }
    const int external = static_cast<int>(flow_.external.size());
    flow_.external.push_back(in);
    args[a] = external;
    if (!in.on_host) {
      const int added = add_entry(in.view, false);
      entries_[added].value = external;
      entries_[added].external = external;
      added_entry = true;
    }
  }
  flow_.args.push_back(args);
  bool conflict = false;
  int entry = out_entry >= 0 && !added_entry ? out_entry : find(op.out, true, &conflict);
  if (entry < 0) entry = add_entry(op.out, false);
  if (!ranges_[entry].written) ++written_entries_;
  ranges_[entry].written = true;
  entries_[entry].value = -1 - index;
  entries_[entry].last_writer = index;
}

SegmentDataflow DataflowBuilder::take() {
  // Outputs in recording order: the order of entries follows which blocks the allocator
  // reused, and would give one op sequence several cache signatures.
  std::vector<const Entry*> written;
  for (const Entry& e : entries_) {
    if (e.last_writer >= 0) written.push_back(&e);
  }
  std::sort(written.begin(), written.end(),
            [](const Entry* a, const Entry* b) { return a->last_writer < b->last_writer; });
  for (const Entry* e : written) {
    flow_.outputs.push_back(e->last_writer);
    flow_.output_aliases.push_back(e->external);
  }
  SegmentDataflow flow = std::move(flow_);
  flow_ = SegmentDataflow();
  ranges_.clear();
  entries_.clear();
  written_entries_ = 0;
  ops_ = 0;
  return flow;
}

SegmentDataflow analyse_dataflow(const std::vector<RecordedOp>& ops) {
  DataflowBuilder builder;
  for (const RecordedOp& op : ops) builder.add(op);
  return builder.take();
}

void drop_dead_outputs(SegmentDataflow& flow, const std::vector<RecordedOp>& ops,
                       const std::function<bool(const void*)>& is_live) {
  size_t kept = 0;
  for (size_t k = 0; k < flow.outputs.size(); ++k) {
    const RecordedOp& op = ops[flow.outputs[k]];
    if (op.out_in_device_block && !is_live(op.out.data)) continue;
    flow.outputs[kept] = flow.outputs[k];
    flow.output_aliases[kept] = flow.output_aliases[k];
    ++kept;
  }
  flow.outputs.resize(kept);
  flow.output_aliases.resize(kept);
  // Results overwritten later in the segment, or of freed tensors, never reach memory.
  flow.stores_skipped = static_cast<int64_t>(ops.size() - kept);
}

}  // namespace openneuron::adaptive
