// A segment lowered through the graph compiler: its IR, the pipeline, the fused kernel, and
// the cache that keeps compiled segments by signature.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "adaptive/recorded_op.h"
#include "adaptive/segment_dataflow.h"
#include "compiler/fused_kernel.h"
#include "compiler/ir.h"

namespace openneuron::adaptive {

// The segment's compiled form.
struct SegmentProgram {
  struct Kernel {
    compiler::FusedKernel kernel;
    std::vector<int> inputs;   // >= 0: an external operand; < 0: segment output (-1 - input)
    std::vector<int> outputs;  // segment outputs (indices into SegmentDataflow::outputs)
  };
  std::vector<Kernel> kernels;  // run one after another
  std::string ir_before;        // IR text before and after the pipeline (debug dumps)
  std::string ir_after;
  std::string error;  // non-empty: the compiler declined the segment, and why
};

// The IR of a segment: one pointwise node per op over its iteration shape.
compiler::Graph segment_graph(const std::vector<RecordedOp>& ops, const SegmentDataflow& flow);

// Lowers, optimises and builds the segment's kernels. When the optimised graph is not a list of
// fused kernels that store each output once, the program's `error` says why.
std::shared_ptr<const SegmentProgram> compile_segment(const std::vector<RecordedOp>& ops,
                                                      const SegmentDataflow& flow);

// The segment's signature: ops, dtypes, parameters, dataflow and stored outputs (not sizes or
// addresses: the kernel serves any shape).
std::vector<int64_t> segment_signature(const std::vector<RecordedOp>& ops,
                                       const SegmentDataflow& flow);
// The same, written into `key` (its room is reused).
void write_segment_signature(const std::vector<RecordedOp>& ops, const SegmentDataflow& flow,
                             std::vector<int64_t>& key);

// The compiled program for a signature, compiling on a miss (`hit` says which). A segment the
// compiler declines gives a program whose `error` says why.
std::shared_ptr<const SegmentProgram> cached_segment(const std::vector<RecordedOp>& ops,
                                                     const SegmentDataflow& flow, bool* hit);

}  // namespace openneuron::adaptive
