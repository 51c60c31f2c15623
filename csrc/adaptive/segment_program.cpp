// Lowering a segment of recorded ops to the graph IR and compiling it.
#include "adaptive/segment_program.h"

#include <algorithm>
#include <cstring>
#include <mutex>
#include <stdexcept>
#include <unordered_map>

#include "adaptive/segment.h"
#include "compiler/names.h"
#include "compiler/ops.h"
#include "compiler/pipeline.h"
#include "compiler/text.h"

namespace openneuron::adaptive {

compiler::Graph segment_graph(const std::vector<RecordedOp>& ops, const SegmentDataflow& flow) {
  using compiler::Attr;
  using compiler::Dim;
  compiler::Graph graph;
  std::vector<Dim> shape;
  for (int d = 0; d < ops.front().out.ndim; ++d)
    shape.push_back(Dim::known(ops.front().out.sizes[d]));
  for (const RecordedInput& in : flow.external) {
    graph.inputs.push_back(
        graph.add_value({compiler::ValueKind::Tensor, in.view.dtype, shape, {}}));
  }
  std::vector<int> result(ops.size(), -1);
  for (size_t i = 0; i < ops.size(); ++i) {
    const RecordedOp& op = ops[i];
    compiler::Node node;
    node.op = op.is_cast ? compiler::ops::kCast : compiler::ops::kPointwise;
    for (int a = 0; a < op.num_inputs; ++a) {
      const int source = flow.args[i][a];
      node.inputs.push_back(source >= 0 ? graph.inputs[source] : result[-1 - source]);
    }
    result[i] = graph.add_value({compiler::ValueKind::Tensor, op.out.dtype, shape, {}});
    node.outputs.push_back(result[i]);
    if (op.is_cast) {
      graph.nodes.push_back(std::move(node));
      continue;
    }
    node.attrs["fn"] = Attr::string(compiler::pointwise_op_name(op.op));
    node.attrs["compute"] = Attr::string(compiler::dtype_short_name(op.compute));
    for (int k = 0; k < 4; ++k) {
      if (!op.params.present[k]) continue;
      const kernels::Scalar& p = op.params.values[k];
      node.attrs["p" + std::to_string(k)] = p.is_integral ? Attr::integer(p.i) : Attr::real(p.f);
    }
    graph.nodes.push_back(std::move(node));
  }
  for (int op : flow.outputs) graph.outputs.push_back(result[op]);
  return graph;
}

namespace {

// The optimised graph's fused nodes, in order, as the program's kernels. Values that pass from
// one kernel to another must be segment outputs (they travel through memory), and no kernel may
// read an operand that an earlier kernel overwrote in place (the pass may have reordered them).
void lower_to_kernel(const compiler::Graph& graph, const SegmentDataflow& flow,
                     SegmentProgram& program) {
  auto output_index = [&](int value) {
    int which = -1;
    for (size_t k = 0; k < graph.outputs.size(); ++k) {
      if (graph.outputs[k] != value) continue;
      // CSE may merge equal results of two ops into one value.
      if (which >= 0) throw std::runtime_error("two segment outputs hold one value");
      which = static_cast<int>(k);
    }
    return which;
  };
  std::vector<bool> written(flow.outputs.size(), false);
  std::vector<bool> overwritten_external(flow.external.size(), false);
  for (const compiler::Node& node : graph.nodes) {
    if (node.op != compiler::ops::kFused) {
      throw std::runtime_error("the optimised segment holds a " + node.op + " node");
    }
    SegmentProgram::Kernel kernel;
    for (int value : node.inputs) {
      int source = -1;
      for (size_t k = 0; k < graph.inputs.size(); ++k) {
        if (graph.inputs[k] == value) source = static_cast<int>(k);
      }
      if (source >= 0 && overwritten_external[source]) {
        throw std::runtime_error("a kernel reads an operand an earlier kernel overwrote");
      }
      if (source < 0) {
        const int which = output_index(value);
        if (which < 0 || !written[which]) {
          throw std::runtime_error("a value passes between kernels without being stored");
        }
        source = -1 - which;
      }
      kernel.inputs.push_back(source);
    }
    for (int value : node.outputs) {
      const int which = output_index(value);
      if (which < 0) throw std::runtime_error("a fused kernel output is not a segment output");
      written[which] = true;
      kernel.outputs.push_back(which);
      if (flow.output_aliases[which] >= 0) overwritten_external[flow.output_aliases[which]] = true;
    }
    kernel.kernel = compiler::build_fused_kernel(*node.body);
    program.kernels.push_back(std::move(kernel));
  }
  for (bool w : written) {
    if (!w) throw std::runtime_error("a segment output is not computed by a fused kernel");
  }
}

}  // namespace

std::shared_ptr<const SegmentProgram> compile_segment(const std::vector<RecordedOp>& ops,
                                                      const SegmentDataflow& flow) {
  auto program = std::make_shared<SegmentProgram>();
  compiler::Graph graph = segment_graph(ops, flow);
  program->ir_before = compiler::print_graph(graph);
  try {
    // Eager results must not depend on what a segment happened to fuse.
    compiler::PipelineOptions bitwise_only;
    bitwise_only.bitwise = true;
    compiler::run_pipeline(graph, {}, bitwise_only);
    program->ir_after = compiler::print_graph(graph);
    lower_to_kernel(graph, flow, *program);
  } catch (const std::exception& e) {
    program->error = e.what();
  }
  return program;
}

std::vector<int64_t> segment_signature(const std::vector<RecordedOp>& ops,
                                       const SegmentDataflow& flow) {
  std::vector<int64_t> key;
  write_segment_signature(ops, flow, key);
  return key;
}

void write_segment_signature(const std::vector<RecordedOp>& ops, const SegmentDataflow& flow,
                             std::vector<int64_t>& key) {
  key.clear();
  key.reserve(8 + ops.size() * 16);
  key.push_back(static_cast<int64_t>(flow.external.size()));
  for (const RecordedInput& in : flow.external) key.push_back(static_cast<int64_t>(in.view.dtype));
  key.push_back(ops.front().out.ndim);
  for (size_t i = 0; i < ops.size(); ++i) {
    const RecordedOp& op = ops[i];
    key.push_back(op.is_cast ? -1 : static_cast<int64_t>(op.op));
    key.push_back(static_cast<int64_t>(op.compute));
    key.push_back(static_cast<int64_t>(op.out.dtype));
    key.push_back(op.num_inputs);
    for (int a = 0; a < op.num_inputs; ++a) key.push_back(flow.args[i][a]);
    for (int k = 0; k < 4; ++k) {
      const kernels::Scalar& p = op.params.values[k];
      int64_t bits = 0;
      std::memcpy(&bits, &p.f, sizeof bits);
      key.push_back(op.params.present[k] ? (p.is_integral ? 1 : 2) : 0);
      key.push_back(op.params.present[k] ? (p.is_integral ? p.i : bits) : 0);
    }
  }
  key.push_back(-1);
  for (int op : flow.outputs) key.push_back(op);
  for (int alias : flow.output_aliases) key.push_back(alias);
}

namespace {

struct KeyHash {
  size_t operator()(const std::vector<int64_t>& key) const {
    uint64_t h = 1469598103934665603ull;
    for (int64_t v : key) h = (h ^ static_cast<uint64_t>(v)) * 1099511628211ull;
    return static_cast<size_t>(h);
  }
};

// Bounded: programs whose parameters change every step (a learning-rate schedule written as
// eager ops) would otherwise grow it without end.
constexpr size_t kMaxCachedSegments = 4096;

}  // namespace

std::shared_ptr<const SegmentProgram> cached_segment(const std::vector<RecordedOp>& ops,
                                                     const SegmentDataflow& flow, bool* hit) {
  static std::mutex mutex;
  static auto* cache = new std::unordered_map<std::vector<int64_t>,
                                              std::shared_ptr<const SegmentProgram>, KeyHash>();
  // Reused per thread for the lookup; copied into the cache only on a miss.
  thread_local std::vector<int64_t> key;
  // A loop repeats its last segment: comparing with it skips hashing the key (a serial chain of
  // one multiply per entry) and the shared table's lock.
  thread_local std::vector<int64_t> last_key;
  thread_local std::shared_ptr<const SegmentProgram> last_program;
  write_segment_signature(ops, flow, key);
  if (last_program != nullptr && key == last_key) {
    *hit = true;
    return last_program;
  }
  const auto remember = [&](std::shared_ptr<const SegmentProgram> program) {
    last_key = key;
    last_program = program;
    return program;
  };
  {
    std::lock_guard<std::mutex> lock(mutex);
    auto found = cache->find(key);
    if (found != cache->end()) {
      *hit = true;
      return remember(found->second);
    }
  }
  *hit = false;
  // A declined segment is remembered too, so it is not retried every step.
  std::shared_ptr<const SegmentProgram> program = compile_segment(ops, flow);
  std::lock_guard<std::mutex> lock(mutex);
  if (cache->size() >= kMaxCachedSegments) cache->clear();
  cache->emplace(key, program);
  return remember(program);
}

}  // namespace openneuron::adaptive
