// The pass pipeline: each pass, then the verifier, with an optional callback that sees the
// graph after every step (the debug dump).
#pragma once

#include <functional>
#include <string>

#include "compiler/ir.h"

namespace openneuron::compiler {

using PassObserver = std::function<void(const std::string& pass, const Graph& graph)>;

// Which fusions run, and whether layout elimination does (the other passes always do).
struct PipelineOptions {
  bool eliminate_layouts = true;  // false: keep every copy that changes nothing
  bool fuse = true;               // false: every elementwise node is a fused node of its own
  bool gemm_epilogues = true;     // fuse elementwise consumers into mm/addmm (needs fuse)
  bool bmm_epilogues = true;      // ... into bmm (needs gemm_epilogues)
  bool conv_epilogues = true;     // ... into 2-D convolutions (needs gemm_epilogues)
  bool sibling_gemms = true;      // merge linear layers that share an input (not bitwise)
  // true: every program equals the unfused ops bit for bit (adaptive eager, and torch.compile's
  // options={"bitwise": True}); false: fusions may round differently (torch.compile's default,
  // held to the float64 accuracy rule). Passes that would change bits run only when false.
  bool bitwise = true;
};

// Verifies `graph`, then runs eliminate_views, eliminate_layouts, fold_constants,
// eliminate_common_subexpressions, eliminate_dead_code, merge_sibling_gemms (only when not
// bitwise), fuse_elementwise, fuse_gemm_epilogue,
// widen_gemm_epilogues (only when not bitwise) and plan_memory, verifying after each. Throws
// VerifyError naming the pass after which a rule broke. `observer` (if set) is called with "input"
// first and then each pass's name. Passes that `options` turn off leave the graph as is.
void run_pipeline(Graph& graph, const PassObserver& observer = {},
                  const PipelineOptions& options = {});

}  // namespace openneuron::compiler
