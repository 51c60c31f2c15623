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

namespace {

bool same_shape(const RecordedView& a, const RecordedView& b) {
  if (a.ndim != b.ndim) return false;
  for (int d = 0; d < a.ndim; ++d) {
    if (a.sizes[d] != b.sizes[d]) return false;
  }
  return true;
}

}  // namespace

Segment::Fit Segment::try_append_locked(runtime::Stream& stream, const RecordedOp& op) {
  if (ops_.empty()) {
    flow_.add(op);  // an op alone runs as eager would, however its views overlap
  } else {
    if (!same_shape(ops_.front().out, op.out)) return Fit::Shape;
    if (ops_.size() >= kMaxOps) return Fit::Limit;
    switch (flow_.try_add(op)) {
      case DataflowBuilder::Fit::Joins:
        break;
      case DataflowBuilder::Fit::Alias:
        return Fit::Alias;
      case DataflowBuilder::Fit::Limit:
        return Fit::Limit;
    }
  }
  // Room for a whole segment at once rather than growing the vector (and copying its ops) op
  // by op; the room is kept from segment to segment.
  if (ops_.capacity() == 0) ops_.reserve(kMaxOps);
  ops_.push_back(op);
  size_.store(ops_.size(), std::memory_order_relaxed);
  stream.set_pending(this);
  return Fit::Joins;
}

Segment::Taken Segment::take_locked() {
  Taken taken;
  taken.flow = flow_.take();
  taken.ops.swap(ops_);
  ops_.swap(spare_);
  size_.store(0, std::memory_order_relaxed);
  return taken;
}

Segment::Taken Segment::take() {
  std::lock_guard<std::mutex> lock(mutex_);
  return take_locked();
}

void Segment::recycle(std::vector<RecordedOp> ops) {
  ops.clear();
  std::lock_guard<std::mutex> lock(mutex_);
  if (ops_.capacity() == 0) {
    ops_.swap(ops);
  } else if (spare_.capacity() == 0) {
    spare_.swap(ops);
  }
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
  Taken finished;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    const Fit fit = try_append_locked(stream, op);
    if (fit == Fit::Joins) return;
    count(fit == Fit::Shape   ? &Counters::ended_by_shape
          : fit == Fit::Alias ? &Counters::ended_by_alias
                              : &Counters::ended_by_limit);
    finished = take_locked();
  }
  // Queued outside the lock: queuing flushes the stream's pending work, which is this segment.
  learn(finished.ops);
  run_segment(stream, finished.ops, std::move(finished.flow));
  recycle(std::move(finished.ops));
  std::lock_guard<std::mutex> lock(mutex_);
  try_append_locked(stream, op);  // the segment is empty: it takes any op
}

void Segment::flush(runtime::Stream& stream) {
  Taken taken = take();
  if (taken.ops.empty()) return;
  count(&Counters::ended_by_stream);
  learn(taken.ops);
  run_segment(stream, taken.ops, std::move(taken.flow));
  recycle(std::move(taken.ops));
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

void run_segment(runtime::Stream& stream, const std::vector<RecordedOp>& ops,
                 SegmentDataflow flow) {
  count(&Counters::segments);
  if (ops.size() == 1) {
    count(&Counters::single_ops);
    queue_one(stream, ops.front());
    return;
  }
  runtime::CachingAllocator& allocator =
      runtime::Runtime::get().device(stream.device()).allocator();
  drop_dead_outputs(flow, ops, [&](const void* data) { return allocator.owns(data); });
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

  // One allocation holds what the queued task needs; views stay in their compact recorded form
  // until the task runs.
  auto launch = std::make_shared<SegmentLaunch>();
  launch->program = std::move(program);
  launch->outputs.reserve(flow.outputs.size());
  for (int op : flow.outputs) launch->outputs.push_back(ops[op].out);
  launch->external = std::move(flow.external);
  launch->names.reserve(ops.size());
  for (const RecordedOp& op : ops) launch->names.push_back(op.name);
  launch->perturb = perturb_fused_results();  // as set when the segment was flushed
  enqueue_sized(stream, "adaptive_eager_segment", ops.front().out.numel(),
                [launch = std::move(launch)] { launch->run(); });
}

namespace {

// Grows `views` to at least `n` entries, never shrinking it, so entries made once are reused.
void ensure_size(std::vector<TensorView>& views, size_t n) {
  if (views.size() < n) views.resize(n);
}

}  // namespace

void SegmentLaunch::run() const {
  // Per thread and reused, so that views are not rebuilt or zeroed per segment.
  thread_local std::vector<TensorView> output_views, external_views, kernel_outputs, kernel_inputs;
  ensure_size(output_views, outputs.size());
  for (size_t k = 0; k < outputs.size(); ++k) outputs[k].expand_into(output_views[k]);
  ensure_size(external_views, external.size());
  for (size_t k = 0; k < external.size(); ++k) {
    external[k].view.expand_into(external_views[k]);
    if (external[k].on_host) {
      external_views[k].data = const_cast<unsigned char*>(external[k].host_value);
    }
  }
  try {
    for (const SegmentProgram::Kernel& k : program->kernels) {
      ensure_size(kernel_outputs, k.outputs.size());
      ensure_size(kernel_inputs, k.inputs.size());
      for (size_t o = 0; o < k.outputs.size(); ++o) {
        kernel_outputs[o] = output_views[k.outputs[o]];
      }
      for (size_t i = 0; i < k.inputs.size(); ++i) {
        const int input = k.inputs[i];
        kernel_inputs[i] = input >= 0 ? external_views[input] : output_views[-1 - input];
      }
      compiler::run_fused_kernel(k.kernel, kernel_outputs.data(), kernel_inputs.data());
    }
  } catch (const std::exception& e) {
    std::string joined;
    for (const char* name : names) joined += (joined.empty() ? "" : ", ") + std::string(name);
    throw std::runtime_error("in the fused segment of eager ops (" + joined + "): " + e.what());
  }
  if (perturb) *static_cast<unsigned char*>(output_views[0].data) ^= 1;
}

}  // namespace openneuron::adaptive
