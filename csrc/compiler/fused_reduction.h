// Fused reductions: a fused body that ends in a reduce runs tile by tile over the kept dims;
// each tile computes the body's elementwise part (run_fused_kernel) into cache-sized scratch and
// reduces it at once with the kernel library's reduction, so the reduced input never travels
// through memory.
//
// A tile holds whole reduced extents and is laid out row-major like the value eager reduces
// (the fusion pass requires that value to be row-major), and eager's reduction accumulates each
// result over its elements in memory order independently of the other results, so each result
// equals eager's bit for bit. Eager's sum and mean run on one thread; tiles spread over the
// kernel thread pool.
#pragma once

#include <cstdint>

#include "compiler/fused_kernel.h"
#include "compiler/ir.h"
#include "kernels/core/tensor_view.h"

namespace openneuron::compiler {

enum class ReduceFn { Sum, Mean, Amax };

struct FusedReduction {
  FusedKernel elementwise;  // the body without its reduce; outputs: the node's other outputs,
                            // then (when `source` is -1 and not among them) the reduce's input
  bool has_elementwise = false;
  ReduceFn fn = ReduceFn::Sum;
  uint32_t mask = 0;        // reduced dims of the iteration shape
  int result = -1;          // the node output the reduce defines
  int source_output = -1;   // the reduce reads elementwise output `source_output`, or
  int source_input = -1;    // the node's input `source_input`
  int scratch_output = -1;  // elementwise output index written to scratch (-1: none)
  DType source_dtype = DType::Float32;
};

// Elements per tile of the reduced input (whole reduced extents; at least one row).
constexpr int64_t kReductionTileElements = 32768;

// True when the body ends in a reduce.
bool ends_in_reduce(const Graph& body);

// Lowers a verified fused body that ends in a reduce. Throws std::invalid_argument otherwise.
FusedReduction build_fused_reduction(const Graph& body);

// Runs it over the iteration shape `sizes` (ndim dims): outputs in the node's order, every one
// with the iteration shape except the reduce's result, given in keepdim layout (size 1 on the
// reduced dims); inputs broadcast to the iteration shape. Outputs must not alias inputs.
void run_fused_reduction(const FusedReduction& kernel, int ndim, const int64_t* sizes,
                         const kernels::TensorView* outputs, const kernels::TensorView* inputs);

}  // namespace openneuron::compiler
