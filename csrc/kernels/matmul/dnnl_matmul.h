// Matrix products through oneDNN, for dtypes where it beats widening to fp32 for BLAS
// (fp32 and bf16: its brgemm kernels beat OpenBLAS here, and bf16 uses native bf16 dot products).
#pragma once

#include <cstdint>

#include "kernels/core/tensor_view.h"

namespace openneuron::kernels {

// Computes gemm()'s contract (see matmul.h) with oneDNN when it has an optimised kernel for
// these operands and gemm_library.h lets oneDNN run this dtype; returns false, having written
// nothing, otherwise.
bool dnnl_gemm(const TensorView& out, const TensorView& a, const TensorView& b,
               const TensorView* bias, double alpha, double beta);

// Row-major fp32 c = alpha * op(a) @ op(b) + beta * c with leading dimensions, through
// dnnl_gemm; false (c untouched) when oneDNN declines.
bool dense_sgemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha,
                 const float* a, int64_t lda, const float* b, int64_t ldb, float beta, float* c,
                 int64_t ldc);

}  // namespace openneuron::kernels
