// mm, bmm, addmm and baddbmm with an out_dtype (the `.dtype` overloads): CUDA has them and
// the CPU does not. 16-bit operands may write an fp32 result, accumulated and kept in fp32.
#pragma once

#include <ATen/core/Tensor.h>

namespace openneuron::bridge {

// Each checks what CUDA checks, with its messages, before anything is queued: out_dtype is
// the operands' dtype, or fp32 for fp16/bf16 operands; an out= has dtype out_dtype.
at::Tensor mm_out_dtype(const at::Tensor& self, const at::Tensor& mat2, at::ScalarType out_dtype);
at::Tensor& mm_out_dtype_out(const at::Tensor& self, const at::Tensor& mat2,
                             at::ScalarType out_dtype, at::Tensor& out);
at::Tensor bmm_out_dtype(const at::Tensor& self, const at::Tensor& mat2, at::ScalarType out_dtype);
at::Tensor& bmm_out_dtype_out(const at::Tensor& self, const at::Tensor& mat2,
                              at::ScalarType out_dtype, at::Tensor& out);
// self (the added term) has mat2's dtype and broadcasts to the product's shape.
at::Tensor addmm_out_dtype(const at::Tensor& self, const at::Tensor& mat1, const at::Tensor& mat2,
                           at::ScalarType out_dtype, const at::Scalar& beta,
                           const at::Scalar& alpha);
at::Tensor& addmm_out_dtype_out(const at::Tensor& self, const at::Tensor& mat1,
                                const at::Tensor& mat2, at::ScalarType out_dtype,
                                const at::Scalar& beta, const at::Scalar& alpha, at::Tensor& out);
// self (the added term) has the product's shape [B, M, N]; any floating dtype, read as out_dtype.
at::Tensor baddbmm_out_dtype(const at::Tensor& self, const at::Tensor& batch1,
                             const at::Tensor& batch2, at::ScalarType out_dtype,
                             const at::Scalar& beta, const at::Scalar& alpha);
at::Tensor& baddbmm_out_dtype_out(const at::Tensor& self, const at::Tensor& batch1,
                                  const at::Tensor& batch2, at::ScalarType out_dtype,
                                  const at::Scalar& beta, const at::Scalar& alpha, at::Tensor& out);

}  // namespace openneuron::bridge
