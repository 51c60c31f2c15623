// Recording into a segment and flushing it.
#include "adaptive/segment.h"

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <stdexcept>

#include "adaptive/adaptive_eager.h"
#include "adaptive/metrics_counters.h"
#include "adaptive/segment_program.h"
#include "kernels/pointwise/cast.h"
#include "runtime/runtime.h"

namespace openneuron::adaptive {

using kernels::TensorView;

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

bool same_shape(const RecordedView& a, const RecordedView& b) {
  if (a.ndim != b.ndim) return false;
  for (int d = 0; d < a.ndim; ++d) {
    if (a.sizes[d] != b.sizes[d]) return false;
  }
  return true;
}

}  // namespace

bool views_overlap(const RecordedView& a, const RecordedView& b) {
  const ByteRange x = byte_range(a), y = byte_range(b);
  return x.begin < y.end && y.begin < x.end;
}

Segment::Fit Segment::fits(const RecordedOp& op) const {
  if (ops_.empty()) return Fit::Joins;
  if (!same_shape(ops_.front().out, op.out)) return Fit::Shape;
  if (ops_.size() >= kMaxOps || accesses_.size() + op.num_inputs + 1 > kMaxViews) {
    return Fit::Limit;
  }
  auto conflicts = [&](const RecordedView& view, bool write) {
    const ByteRange range = byte_range(view);
    for (const Access& a : accesses_) {
      if ((write || a.write) && range.begin < a.end && a.begin < range.end &&
          !same_view(view, a.view)) {
        return true;
      }
    }
    return false;
  };
  for (int k = 0; k < op.num_inputs; ++k) {
    if (!op.inputs[k].on_host && conflicts(op.inputs[k].view, false)) return Fit::Alias;
  }
  return conflicts(op.out, true) ? Fit::Alias : Fit::Joins;
}

std::vector<RecordedOp> Segment::take_locked() {
  accesses_.clear();
  size_.store(0, std::memory_order_relaxed);
  std::vector<RecordedOp> ops = std::move(ops_);
  ops_.clear();
  return ops;
}

std::vector<RecordedOp> Segment::take() {
  std::lock_guard<std::mutex> lock(mutex_);
  return take_locked();
}

namespace {

uint64_t kind_of(const RecordedOp& op) {
  return (static_cast<uint64_t>(op.is_cast ? 255 : static_cast<int>(op.op)) << 56) ^
         (static_cast<uint64_t>(op.out.dtype) << 48) ^ static_cast<uint64_t>(op.out.numel());
}

}  // namespace

bool Segment::worth_recording(const RecordedOp& op) {
  if (size_.load(std::memory_order_relaxed) != 0) return true;  // it may join the open segment
  std::lock_guard<std::mutex> lock(history_mutex_);
  const auto found = history_.find(kind_of(op));
  if (found == history_.end() || found->second > -2) return true;
  return (++skipped_ % 64) == 0;
}

void Segment::learn(const std::vector<RecordedOp>& ops) {
  std::lock_guard<std::mutex> lock(history_mutex_);
  if (history_.size() > 4096) history_.clear();  // bounded; it only steers a heuristic
  int& score = history_[kind_of(ops.front())];
  score = ops.size() > 1 ? 2 : std::max(score - 1, -4);
}

void Segment::record(runtime::Stream& stream, const RecordedOp& op) {
  std::vector<RecordedOp> finished;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    const Fit fit = fits(op);
    if (fit != Fit::Joins) {
      count(fit == Fit::Shape   ? &Counters::ended_by_shape
            : fit == Fit::Alias ? &Counters::ended_by_alias
                                : &Counters::ended_by_limit);
      finished = take_locked();
    }
  }
  // Queued outside the lock: queuing flushes the stream's pending work, which is this segment.
  if (!finished.empty()) {
    learn(finished);
    run_segment(stream, std::move(finished));
  }
  std::lock_guard<std::mutex> lock(mutex_);
  // Reserve room for a typical segment at once rather than growing the vector (and copying
  // its ops) op by op.
  if (ops_.capacity() == 0) ops_.reserve(16);
  ops_.push_back(op);
  size_.store(ops_.size(), std::memory_order_relaxed);
  for (int k = 0; k < op.num_inputs; ++k) {
    if (!op.inputs[k].on_host) add_access(op.inputs[k].view, false);
  }
  add_access(op.out, true);
  stream.set_pending(this);
}

void Segment::add_access(const RecordedView& view, bool write) {
  for (Access& a : accesses_) {
    if (same_view(a.view, view)) {
      a.write = a.write || write;
      return;
    }
  }
  const ByteRange range = byte_range(view);
  accesses_.push_back({view, range.begin, range.end, write});
}

void Segment::flush(runtime::Stream& stream) {
  std::vector<RecordedOp> ops = take();
  if (ops.empty()) return;
  count(&Counters::ended_by_stream);
  learn(ops);
  run_segment(stream, std::move(ops));
}

void run_recorded_op(RecordedOp op) {
  TensorView inputs[3];
  for (int k = 0; k < op.num_inputs; ++k) {
    inputs[k] = op.inputs[k].view.expand();
    if (op.inputs[k].on_host) inputs[k].data = op.inputs[k].host_value;
  }
  const TensorView out = op.out.expand();
  if (op.is_cast) {
    kernels::copy(out, inputs[0]);
  } else {
    kernels::pointwise(op.op, out, inputs, op.num_inputs, op.compute, op.params);
  }
}

namespace {

using runtime::enqueue_sized;

void queue_one(runtime::Stream& stream, const RecordedOp& op) {
  enqueue_sized(stream, op.name, op.out.numel(), [op] { run_recorded_op(op); });
}

void dump_segment(const SegmentProgram& program) {
  const char* directory = std::getenv("OPENNEURON_DEBUG_DIR");
  if (directory == nullptr || *directory == '\0') return;
  static std::atomic<int> counter{0};
  std::error_code error;
  const std::filesystem::path folder = std::filesystem::path(directory) / "adaptive_eager";
  std::filesystem::create_directories(folder, error);
  if (error) return;  // a debug aid: an unwritable directory must not break execution
  std::ofstream file(folder / ("segment_" + std::to_string(counter++) + ".ir"));
  file << "# segment as recorded\n"
       << program.ir_before << "\n# after the pipeline\n"
       << program.ir_after << "\n";
  if (program.error.empty()) {
    for (const SegmentProgram::Kernel& kernel : program.kernels) {
      file << "# fused kernel\n" << kernel.kernel.listing();
    }
  } else {
    file << "# declined: " << program.error << "\n";
  }
}

}  // namespace

void run_segment(runtime::Stream& stream, std::vector<RecordedOp> ops) {
  count(&Counters::segments);
  if (ops.size() == 1) {
    count(&Counters::single_ops);
    queue_one(stream, ops.front());
    return;
  }
  runtime::CachingAllocator& allocator =
      runtime::Runtime::get().device(stream.device()).allocator();
  const SegmentDataflow flow =
      analyse_dataflow(ops, [&](const void* data) { return allocator.owns(data); });
  if (flow.outputs.empty()) {  // every result belonged to a tensor already freed
    count(&Counters::stores_skipped, flow.stores_skipped);
    return;
  }
  bool hit = false;
  std::shared_ptr<const SegmentProgram> program = cached_segment(ops, flow, &hit);
  if (hit) {
    count(&Counters::cache_hits);
  } else {
    count(&Counters::compiles);
    dump_segment(*program);
  }
  if (!program->error.empty()) {
    note_fallback(program->error);
    for (const RecordedOp& op : ops) queue_one(stream, op);
    return;
  }
  count(&Counters::fused_segments);
  count(&Counters::fused_ops, static_cast<int64_t>(ops.size()));
  count(&Counters::stores_skipped, flow.stores_skipped);

  std::vector<TensorView> outputs;
  for (int op : flow.outputs) outputs.push_back(ops[op].out.expand());
  std::vector<const char*> names;  // joined only if a kernel fails
  for (const RecordedOp& op : ops) names.push_back(op.name);
  const int64_t elements = ops.front().out.numel();
  const bool perturb = perturb_fused_results();  // as set when the segment was flushed
  enqueue_sized(stream, "adaptive_eager_segment", elements,
                [program, outputs = std::move(outputs), external = flow.external,
                 names = std::move(names), perturb]() mutable {
                  std::vector<TensorView> external_views;
                  for (RecordedInput& in : external) {
                    if (in.on_host) in.view.data = in.host_value;
                    external_views.push_back(in.view.expand());
                  }
                  std::vector<TensorView> kernel_outputs, kernel_inputs;
                  try {
                    for (const SegmentProgram::Kernel& k : program->kernels) {
                      kernel_outputs.clear();
                      kernel_inputs.clear();
                      for (int o : k.outputs) kernel_outputs.push_back(outputs[o]);
                      for (int i : k.inputs) {
                        kernel_inputs.push_back(i >= 0 ? external_views[i] : outputs[-1 - i]);
                      }
                      compiler::run_fused_kernel(k.kernel, kernel_outputs.data(),
                                                 kernel_inputs.data());
                    }
                  } catch (const std::exception& e) {
                    std::string joined;
                    for (const char* name : names)
                      joined += (joined.empty() ? "" : ", ") + std::string(name);
                    throw std::runtime_error("in the fused segment of eager ops (" + joined +
                                             "): " + e.what());
                  }
                  if (perturb) *static_cast<unsigned char*>(outputs[0].data) ^= 1;
                });
}

}  // namespace openneuron::adaptive
