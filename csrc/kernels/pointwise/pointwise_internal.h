// How pointwise.cpp hands an op to the file that defines it. Private to the kernel library.
#pragma once

#include <stdexcept>
#include <string>

#include "kernels/pointwise/pointwise.h"

namespace openneuron::kernels::pointwise_detail {

// Each returns false when `op` is not one of its ops; the views are already shape-checked.
bool run_unary_math(PointwiseOp op, const TensorView& out, const TensorView& x, DType compute,
                    const PointwiseParams& params);
bool run_special_unary(PointwiseOp op, const TensorView& out, const TensorView& x, DType compute,
                       const PointwiseParams& params);
bool run_special_binary(PointwiseOp op, const TensorView& out, const TensorView& x,
                        const TensorView& y, DType compute, const PointwiseParams& params);
bool run_activation(PointwiseOp op, const TensorView& out, const TensorView* in, DType compute,
                    const PointwiseParams& params);
bool run_binary_math(PointwiseOp op, const TensorView& out, const TensorView& x,
                     const TensorView& y, DType compute, const PointwiseParams& params);
bool run_ternary(PointwiseOp op, const TensorView& out, const TensorView& x, const TensorView& y,
                 const TensorView& z, DType compute, const PointwiseParams& params);

[[noreturn]] inline void unsupported_compute(PointwiseOp op, DType compute) {
  throw std::invalid_argument("openneuron kernels: pointwise op " +
                              std::to_string(static_cast<int>(op)) +
                              " does not support compute dtype " + dtype_name(compute));
}

}  // namespace openneuron::kernels::pointwise_detail
