// The reference interpreter: the living definition of the elementwise IR. It runs pointwise,
// cast, scalar and fused nodes one op at a time over whole host tensors (a fused body is
// interpreted node by node, never tiled), reduce nodes over whole tensors with the kernel
// library's reductions, and gemm_epilogue nodes as the whole product
// (kernels::gemm or kernels::conv2d_forward) followed by their body, so the fast executors can be
// tested against it.
#pragma once

#include <cstdint>
#include <vector>

#include "compiler/ir.h"
#include "kernels/core/tensor_view.h"

namespace openneuron::compiler {

// A dense row-major host tensor.
struct HostTensor {
  DType dtype = DType::Float32;
  std::vector<int64_t> shape;
  std::vector<unsigned char> bytes;

  HostTensor() = default;
  HostTensor(DType dtype, std::vector<int64_t> shape);
  int64_t numel() const;
  kernels::TensorView view();
  // This tensor broadcast to `shape` (leading dims added, stride 0 along size-1 dims).
  kernels::TensorView broadcast_to(const std::vector<int64_t>& shape);
};

// Runs `graph` on `inputs` (one per graph input, with concrete shapes) and returns one tensor per
// graph output. Shapes of results are the broadcast of their inputs' shapes. Throws
// std::invalid_argument for a node it does not define (extern, sym).
std::vector<HostTensor> interpret(const Graph& graph, const std::vector<HostTensor>& inputs);

}  // namespace openneuron::compiler
