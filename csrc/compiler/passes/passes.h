// The compiler's passes, one per file. Each rewrites a verified graph into a verified graph
// with the same meaning; run_pipeline (pipeline.h) runs them in order.
#pragma once

#include "compiler/ir.h"

namespace openneuron::compiler {

// Removes nodes none of whose outputs are read (by a node or as a graph output), unless the
// node is impure (an extern with impure=1).
void eliminate_dead_code(Graph& graph);

// Merges pure nodes with the same op, attributes, inputs and output types into the first.
void eliminate_common_subexpressions(Graph& graph);

// Evaluates sym arithmetic on constants, and pointwise/cast nodes whose inputs are all
// host scalars, into constants.
void fold_constants(Graph& graph);

// Removes views that change nothing: reshape/view/expand to the input's own shape and layout,
// a transpose undone by another, permutes that compose to the identity. Never for a value the
// graph returns (callers may rely on it being a distinct view).
void eliminate_views(Graph& graph);

// Removes copies that change nothing: same-dtype casts and aten::clone / aten::_to_copy externs
// (same device, strided, not pinned; preserve or contiguous memory format) whose result has the
// input's dtype, shape and dim order, when the input is a buffer the program allocates (the
// output of a pointwise, cast, reduce, fused or gemm_epilogue node; never a graph input or an
// extern's result, whose strides the IR does not fully describe). Kept when an impure extern
// (the only in-place writer) reads either side or a value that may alias it (through externs
// with view=1 or impure=1), and when both sides may alias a graph input or output (a returned
// copy must not become one of the graph's inputs or another of its outputs).
void eliminate_layouts(Graph& graph);

// Not in bitwise mode: linear layers (aten::mm / addmm of one input by transposed weights that
// are graph inputs) that read the same input become one GEMM over their weights concatenated
// (a cached=1 aten::cat) and a column slice per layer (see merge_sibling_gemms.cpp).
void merge_sibling_gemms(Graph& graph);

// Groups pointwise/cast nodes of one shape that feed each other into `fused` nodes (scalar
// constants copied into their bodies); every elementwise node ends up in some fused node.
// A reduce joins the group that produces its (row-major) input at that shape and ends it;
// every reduce ends up last in some fused node. A group stops growing once a node outside it
// reads one of its values. With join=false every
// elementwise node becomes a fused node of its own (fusion off, same program structure).
void fuse_elementwise(Graph& graph, bool join = true);

// The products whose elementwise consumer fuse_gemm_epilogue may fuse.
struct EpilogueProducers {
  bool mm = true;    // aten::mm, aten::addmm
  bool bmm = true;   // aten::bmm
  bool conv = true;  // aten::convolution (2-D)
};

// Turns a fused node that reads an mm/addmm/bmm product (directly or through one reshaping view)
// or a convolution's result that nothing else reads into a gemm_epilogue node computing the
// product and the body together (see fuse_gemm_epilogue.cpp for the legality rules).
void fuse_gemm_epilogue(Graph& graph, const EpilogueProducers& producers = {});

// Not in bitwise mode: gemm_epilogue nodes (not conv) over bf16/fp16 operands keep the GEMM's
// fp32 result and run their body in fp32, rounding once where a value is returned or explicitly
// cast (see widen_gemm_epilogues.cpp). Results differ from eager's by that rounding.
void widen_gemm_epilogues(Graph& graph);

// Annotates every node with free=[...]: the values whose last reader (or, if unread, whose
// definition) is that node and that the graph does not return; and fused nodes with
// reuse=[output, input, ...] pairs where the output may take over the buffer of an input that
// dies there (same dtype, shape and layout; the body reads the input no later than it writes
// the output; none for bodies that end in a reduce); and gemm_epilogue nodes with product_into=k
// when output k can hold the product (same dtype and shape, row-major, written no earlier than the
// body's last read of it). The program runner drops freed values and checks a reuse at run time.
void plan_memory(Graph& graph);

}  // namespace openneuron::compiler
