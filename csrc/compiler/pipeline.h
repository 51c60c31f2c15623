// The pass pipeline: each pass, then the verifier, with an optional callback that sees the
// graph after every step (the debug dump).
#pragma once

#include <functional>
#include <string>

#include "compiler/ir.h"

namespace openneuron::compiler {

using PassObserver = std::function<void(const std::string& pass, const Graph& graph)>;

// Verifies `graph`, then runs eliminate_views, fold_constants, eliminate_common_subexpressions,
// eliminate_dead_code, fuse_elementwise and plan_memory, verifying after each. Throws
// VerifyError naming the pass after which a rule broke. `observer` (if set) is called with
// "input" first and then each pass's name. With fuse=false, fuse_elementwise puts every
// elementwise node in a fused node of its own.
void run_pipeline(Graph& graph, const PassObserver& observer = {}, bool fuse = true);

}  // namespace openneuron::compiler
