// A GEMM, batched GEMM or convolution followed by its fused epilogue.
#include "compiler/gemm_epilogue.h"

#include <stdexcept>
#include <vector>

#include "compiler/epilogue_faults.h"
#include "kernels/matmul/matmul.h"
#include "kernels/pointwise/cast.h"

namespace openneuron::compiler {

using kernels::TensorView;

namespace {

bool is_dense(const TensorView& t) {
  int64_t stride = 1;
  for (int d = t.ndim - 1; d >= 0; --d) {
    if (t.sizes[d] > 1 && t.strides[d] != stride) return false;
    stride *= t.sizes[d];
  }
  return true;
}

// The body over a product already computed: the product is read densely, in row-major order,
// at outputs[0]'s iteration shape.
void run_body(const FusedKernel& kernel, const TensorView& product, const TensorView* outputs,
              const TensorView* inputs) {
  const TensorView& shape = outputs[0];
  if (epilogue_fault() == EpilogueFault::kSkipBody) {  // a test's deliberately wrong kernel
    if (product.data == shape.data) return;
    TensorView source = shape;
    source.data = product.data;
    source.dtype = product.dtype;
    int64_t dense_stride = 1;
    for (int d = shape.ndim - 1; d >= 0; --d) {
      source.strides[d] = dense_stride;
      dense_stride *= shape.sizes[d];
    }
    kernels::copy(shape, source);
    return;
  }
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

}  // namespace

size_t epilogue_operands(const Node& node) {
  const std::string gemm = node.string_attr("gemm");
  if (gemm == "addmm") return 3;
  if (gemm == "conv") return node.int_attr("bias", 0) != 0 ? 3 : 2;
  return 2;
}

kernels::Conv2dParams conv_params_of(const Node& node) {
  kernels::Conv2dParams p;
  auto pair = [&](const char* name, int64_t* into) {
    const Attr* a = node.attr(name);
    if (!a || a->list.size() != 2) {
      throw std::invalid_argument(std::string("compiler: a conv epilogue needs ") + name);
    }
    into[0] = a->list[0].i;
    into[1] = a->list[1].i;
  };
  pair("stride", p.stride);
  pair("padding", p.padding);
  pair("dilation", p.dilation);
  p.groups = node.int_attr("groups", 1);
  return p;
}

void run_gemm_epilogue(const FusedKernel& kernel, const TensorView& a, const TensorView& b,
                       const TensorView* bias, double alpha, double beta, const TensorView& product,
                       const TensorView* outputs, const TensorView* inputs) {
  const TensorView& shape = outputs[0];
  const int rank = product.ndim;
  const int64_t m = rank >= 2 ? product.sizes[rank - 2] : 0;
  const int64_t n = rank >= 2 ? product.sizes[rank - 1] : 0;
  const bool batched = rank == 3;
  const bool fits =
      (rank == 2 || batched) && a.ndim == rank && b.ndim == rank && a.sizes[rank - 2] == m &&
      b.sizes[rank - 1] == n && a.sizes[rank - 1] == b.sizes[rank - 2] &&
      (!batched || (a.sizes[0] == product.sizes[0] && b.sizes[0] == product.sizes[0]));
  if (!fits || shape.ndim < 1 || shape.sizes[shape.ndim - 1] != n ||
      shape.numel() != product.numel() || !is_dense(product)) {
    throw std::invalid_argument("compiler: gemm_epilogue operands do not fit its iteration shape");
  }
  if (kernel.num_inputs < 1) throw std::invalid_argument("compiler: gemm_epilogue without product");
  if (product.numel() == 0) return;
  const EpilogueFault fault = epilogue_fault();  // kNone outside tests
  if (fault == EpilogueFault::kDropBias) bias = nullptr;
  if (fault == EpilogueFault::kWrongScale) alpha *= 1.001;
  kernels::gemm(product, a, b, bias, alpha, beta);
  run_body(kernel, product, outputs, inputs);
}

void run_conv_epilogue(const FusedKernel& kernel, const TensorView& input, const TensorView& weight,
                       const TensorView* bias, const kernels::Conv2dParams& params,
                       const TensorView& product, const TensorView* outputs,
                       const TensorView* inputs) {
  const TensorView& shape = outputs[0];
  bool fits = input.ndim == 4 && weight.ndim == 4 && product.ndim == 4 && shape.ndim == 4 &&
              product.sizes[0] == input.sizes[0] && product.sizes[1] == weight.sizes[0] &&
              is_dense(product);
  for (int d = 0; fits && d < 4; ++d) fits = shape.sizes[d] == product.sizes[d];
  if (!fits) {
    throw std::invalid_argument("compiler: conv epilogue operands do not fit its iteration shape");
  }
  if (kernel.num_inputs < 1) throw std::invalid_argument("compiler: conv epilogue without product");
  if (product.numel() == 0) return;
  if (epilogue_fault() == EpilogueFault::kDropBias) bias = nullptr;  // kNone outside tests
  kernels::conv2d_forward(product, input, weight, bias, params);
  run_body(kernel, product, outputs, inputs);
}

}  // namespace openneuron::compiler
