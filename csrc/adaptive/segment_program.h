// A segment lowered through the graph compiler: its IR, the pipeline, the fused kernel, and
// the cache that keeps compiled segments by signature.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "adaptive/recorded_op.h"
#include "compiler/fused_kernel.h"
#include "compiler/ir.h"

namespace openneuron::adaptive {

// How a segment's ops read and write values: each external operand once, each op's result an
// SSA value, each written buffer's last version an output (unless nobody can read it).
struct SegmentDataflow {
  std::vector<RecordedInput> external;  // operands read before the segment writes them
  // Per op and argument: >= 0 an external operand, < 0 the result of op (-1 - value).
  std::vector<std::vector<int>> args;
  std::vector<int> outputs;    // ops whose results are stored, in order
  int64_t stores_skipped = 0;  // ops whose result is never stored (overwritten or freed)
};

// Resolves views to values. `is_live(ptr)` says whether an output's memory is still allocated;
// once it is not, nobody can read what the op would have stored there, so it is not stored.
SegmentDataflow analyse_dataflow(const std::vector<RecordedOp>& ops,
                                 const std::function<bool(const void*)>& is_live);

// The segment's compiled form.
struct SegmentProgram {
  compiler::FusedKernel kernel;
  std::vector<int> input_external;  // kernel input k reads external operand input_external[k]
  std::vector<int> output_op;       // kernel output k is op output_op[k]'s result
  std::string ir_before;            // IR text before and after the pipeline (debug dumps)
  std::string ir_after;
  std::string error;  // non-empty: the compiler declined the segment, and why
};

// The IR of a segment: one pointwise node per op over its iteration shape.
compiler::Graph segment_graph(const std::vector<RecordedOp>& ops, const SegmentDataflow& flow);

// Lowers, optimises and builds the segment's kernel. Throws std::runtime_error saying why when
// the optimised graph is not exactly one fused kernel storing each output once.
std::shared_ptr<const SegmentProgram> compile_segment(const std::vector<RecordedOp>& ops,
                                                      const SegmentDataflow& flow);

// The segment's signature: ops, dtypes, parameters, dataflow and stored outputs (not sizes or
// addresses: the kernel serves any shape).
std::vector<int64_t> segment_signature(const std::vector<RecordedOp>& ops,
                                       const SegmentDataflow& flow);

// The compiled program for a signature, compiling on a miss (`hit` says which). A segment the
// compiler declines gives a program whose `error` says why.
std::shared_ptr<const SegmentProgram> cached_segment(const std::vector<RecordedOp>& ops,
                                                     const SegmentDataflow& flow, bool* hit);

}  // namespace openneuron::adaptive
