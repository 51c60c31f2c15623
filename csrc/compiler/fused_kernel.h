// Fused elementwise kernels: a fused node's body lowered to a list of kernel-library calls
// that run tile by tile, so intermediates stay in cache instead of travelling through memory.
//
// Each tile is a box of at most kTileElements elements of the iteration space; every
// instruction runs the kernel library's own loop for its op (kernels::pointwise or
// kernels::copy) on that box, with intermediates in per-thread scratch of their own dtype.
// Results therefore equal running the ops one by one, bit for bit (each op rounds to its
// result's dtype exactly as eager does). Tiles are spread over the kernel thread pool.
#pragma once

#include <string>
#include <vector>

#include "compiler/ir.h"
#include "compiler/scalar_eval.h"
#include "kernels/core/tensor_view.h"
#include "kernels/pointwise/pointwise.h"

namespace openneuron::compiler {

struct FusedInstr {
  bool is_cast = false;
  kernels::PointwiseOp op = kernels::PointwiseOp::Abs;
  DType compute = DType::Float32;
  kernels::PointwiseParams params;
  int args[3] = {-1, -1, -1};  // slots
  int num_args = 0;
  int result = -1;  // slot
};

// Slots: [0, num_inputs) are the inputs, then the constants, then one per instruction result.
struct FusedKernel {
  int num_inputs = 0;
  std::vector<HostScalar> constants;
  std::vector<FusedInstr> instrs;
  std::vector<DType> slot_dtypes;
  std::vector<int> outputs;  // slots, in the fused node's output order

  // One line per instruction, e.g. "  %4:bf16 = Mul.f32(%0, %3)".
  std::string listing() const;
};

// Elements per tile (a few of them in every dtype fit in L2).
constexpr int64_t kTileElements = 8192;

// Lowers a verified fused body. Throws std::invalid_argument on a malformed body.
FusedKernel build_fused_kernel(const Graph& body);

// Runs the kernel. Every output view has the iteration shape; every input has its ndim and
// sizes with stride 0 along broadcast dims, and any dtype. An output may alias an input exactly
// only if the kernel reads that input no later than it writes that output (plan_memory's rule).
void run_fused_kernel(const FusedKernel& kernel, const kernels::TensorView* outputs,
                      const kernels::TensorView* inputs);

}  // namespace openneuron::compiler
