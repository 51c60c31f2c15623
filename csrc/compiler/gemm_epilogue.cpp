// A GEMM followed by its fused epilogue.
#include "compiler/gemm_epilogue.h"

#include <stdexcept>
#include <vector>

#include "kernels/matmul/matmul.h"

namespace openneuron::compiler {

using kernels::TensorView;

void run_gemm_epilogue(const FusedKernel& kernel, const TensorView& a, const TensorView& b,
                       const TensorView* bias, double alpha, double beta, const TensorView& product,
                       const TensorView* outputs, const TensorView* inputs) {
  const TensorView& shape = outputs[0];
  const int64_t m = product.sizes[0];
  const int64_t n = product.sizes[1];
  if (a.ndim != 2 || b.ndim != 2 || product.ndim != 2 || a.sizes[0] != m || b.sizes[1] != n ||
      a.sizes[1] != b.sizes[0] || shape.ndim < 1 || shape.sizes[shape.ndim - 1] != n ||
      shape.numel() != m * n || (n > 1 && product.strides[1] != 1) ||
      (m > 1 && product.strides[0] != n)) {
    throw std::invalid_argument("compiler: gemm_epilogue operands do not fit its iteration shape");
  }
  if (kernel.num_inputs < 1) throw std::invalid_argument("compiler: gemm_epilogue without product");
  if (m * n == 0) return;
  kernels::gemm(product, a, b, bias, alpha, beta);
  // The product seen at the iteration shape (dense, row-major).
  std::vector<TensorView> ins(static_cast<size_t>(kernel.num_inputs));
  ins[0] = shape;
  ins[0].data = product.data;
  ins[0].dtype = product.dtype;
  int64_t stride = 1;
  for (int d = shape.ndim - 1; d >= 0; --d) {
    ins[0].strides[d] = stride;
    stride *= shape.sizes[d];
  }
  for (int k = 1; k < kernel.num_inputs; ++k) ins[k] = inputs[k - 1];
  run_fused_kernel(kernel, outputs, ins.data());
}

}  // namespace openneuron::compiler
