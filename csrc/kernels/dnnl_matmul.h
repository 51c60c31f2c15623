// Matrix products through oneDNN, for dtypes where it beats widening to fp32 for BLAS
// (fp32 and bf16: its brgemm kernels beat OpenBLAS here, and bf16 uses native bf16 dot products).
#pragma once

#include "kernels/tensor_view.h"

namespace openneuron::kernels {

// Computes gemm()'s contract (see matmul.h) with oneDNN when it has an optimised kernel for
// these operands; returns false, having written nothing, when it does not.
bool dnnl_gemm(const TensorView& out, const TensorView& a, const TensorView& b,
               const TensorView* bias, double alpha, double beta);

}  // namespace openneuron::kernels
