// Registrations of the core native kernels (storage, copies, first arithmetic) and of the
// host fallback for every op without a native kernel. Each kernel family has its own
// register_<family>.cpp beside this file.
#include <ATen/ops/_coalesced_native.h>
#include <ATen/ops/_indices_native.h>
#include <ATen/ops/_nnz_native.h>
#include <ATen/ops/_sparse_coo_tensor_with_dims_and_tensors_native.h>
#include <ATen/ops/_values_native.h>
#include <ATen/ops/dense_dim_native.h>
#include <ATen/ops/indices_native.h>
#include <ATen/ops/is_coalesced_native.h>
#include <ATen/ops/sparse_dim_native.h>
#include <ATen/ops/unfold_native.h>
#include <ATen/ops/values_native.h>
#include <ATen/ops/view_as_complex_native.h>
#include <ATen/ops/view_as_real_native.h>
#include <torch/library.h>

#include "aten/fallback/fallback.h"
#include "aten/fallback/sparse_fallback.h"
#include "aten/ops/matmul/ops_matmul_out_dtype.h"
#include "aten/ops/matmul/ops_matmul_vector.h"
#include "aten/ops/matmul/ops_scaled_mm_v2.h"
#include "aten/ops/ops.h"

namespace openneuron::bridge {

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  // Storage, creation and views.
  m.impl("empty.memory_format", TORCH_FN(empty_memory_format));
  m.impl("empty_strided", TORCH_FN(empty_strided));
  m.impl("as_strided", TORCH_FN(as_strided));
  m.impl("view", TORCH_FN(view));
  m.impl("_reshape_alias", TORCH_FN(reshape_alias));
  // View ops with per-backend kernels: PyTorch's own metadata-only kernels, so they alias
  // (the host fallback would return a copy).
  m.impl("view_as_real", TORCH_FN(at::native::view_as_real));
  m.impl("view_as_complex", TORCH_FN(at::native::view_as_complex));
  m.impl("unfold", TORCH_FN(at::native::unfold));
  m.impl("resize_", TORCH_FN(resize_));
  m.impl("set_.source_Storage_storage_offset", TORCH_FN(set_source_storage_offset));
  m.impl("set_.source_Storage", TORCH_FN(set_source_storage));
  m.impl("set_.source_Tensor", TORCH_FN(set_source_tensor));
  m.impl("set_", TORCH_FN(set_empty));
  m.impl("is_set_to", TORCH_FN(is_set_to));
  m.impl("record_stream", TORCH_FN(record_stream));
  m.impl("_has_compatible_shallow_copy_type", TORCH_FN(has_compatible_shallow_copy_type));

  // Copies.
  m.impl("_copy_from", TORCH_FN(copy_from));
  m.impl("_copy_from_and_resize", TORCH_FN(copy_from_and_resize));
  m.impl("_local_scalar_dense", TORCH_FN(local_scalar_dense));

  // Elementwise.
  m.impl("fill_.Scalar", TORCH_FN(fill_scalar_));
  m.impl("fill_.Tensor", TORCH_FN(fill_tensor_));
  m.impl("add.Tensor", TORCH_FN(add));
  m.impl("add_.Tensor", TORCH_FN(add_));
  m.impl("add.out", TORCH_FN(add_out));
  m.impl("sub.Tensor", TORCH_FN(sub));
  m.impl("sub_.Tensor", TORCH_FN(sub_));
  m.impl("sub.out", TORCH_FN(sub_out));
  m.impl("mul.Tensor", TORCH_FN(mul_with_complex));
  m.impl("mul_.Tensor", TORCH_FN(mul_with_complex_));
  m.impl("mul.out", TORCH_FN(mul_with_complex_out));
  m.impl("div.Tensor", TORCH_FN(div));
  m.impl("div_.Tensor", TORCH_FN(div_));
  m.impl("div.out", TORCH_FN(div_out));
  m.impl("relu", TORCH_FN(relu));
  m.impl("relu_", TORCH_FN(relu_));
  m.impl("threshold_backward", TORCH_FN(threshold_backward));
  m.impl("threshold_backward.grad_input", TORCH_FN(threshold_backward_out));

  // Reductions.
  m.impl("sum.dim_IntList", TORCH_FN(sum_dim));
  m.impl("sum.IntList_out", TORCH_FN(sum_out));
  m.impl("mean.dim", TORCH_FN(mean_dim));
  m.impl("mean.out", TORCH_FN(mean_out));

  // Matrix products.
  m.impl("mm", TORCH_FN(mm));
  m.impl("mm.out", TORCH_FN(mm_out));
  m.impl("addmm", TORCH_FN(addmm));
  m.impl("addmm_", TORCH_FN(addmm_));
  m.impl("addmm.out", TORCH_FN(addmm_out));
  m.impl("bmm", TORCH_FN(bmm));
  m.impl("bmm.out", TORCH_FN(bmm_out));
  m.impl("baddbmm", TORCH_FN(baddbmm));
  m.impl("baddbmm_", TORCH_FN(baddbmm_));
  m.impl("baddbmm.out", TORCH_FN(baddbmm_out));
  // CUDA's out_dtype overloads (the CPU has none).
  m.impl("mm.dtype", TORCH_FN(mm_out_dtype));
  m.impl("mm.dtype_out", TORCH_FN(mm_out_dtype_out));
  m.impl("bmm.dtype", TORCH_FN(bmm_out_dtype));
  m.impl("bmm.dtype_out", TORCH_FN(bmm_out_dtype_out));
  m.impl("addmm.dtype", TORCH_FN(addmm_out_dtype));
  m.impl("addmm.dtype_out", TORCH_FN(addmm_out_dtype_out));
  m.impl("baddbmm.dtype", TORCH_FN(baddbmm_out_dtype));
  m.impl("baddbmm.dtype_out", TORCH_FN(baddbmm_out_dtype_out));
  m.impl("addr", TORCH_FN(addr));
  m.impl("addr.out", TORCH_FN(addr_out));
  m.impl("dot", TORCH_FN(dot));
  m.impl("dot.out", TORCH_FN(dot_out));
  // Matrix-vector and batch-summed products, vdot (integer dtypes too).
  m.impl("addmv", TORCH_FN(addmv));
  m.impl("addmv_", TORCH_FN(addmv_));
  m.impl("addmv.out", TORCH_FN(addmv_out));
  m.impl("vdot", TORCH_FN(vdot));
  m.impl("vdot.out", TORCH_FN(vdot_out));
  m.impl("addbmm", TORCH_FN(addbmm));
  m.impl("addbmm_", TORCH_FN(addbmm_));
  m.impl("addbmm.out", TORCH_FN(addbmm_out));
  m.impl("_grouped_mm", TORCH_FN(grouped_mm));
  m.impl("_scaled_mm", TORCH_FN(scaled_mm));
  m.impl("_scaled_mm.out", TORCH_FN(scaled_mm_out));
  m.impl("_scaled_mm_v2", TORCH_FN(scaled_mm_v2));
  m.impl("_scaled_grouped_mm", TORCH_FN(scaled_grouped_mm));

  // Softmax.
  m.impl("_softmax", TORCH_FN(softmax));
  m.impl("_softmax.out", TORCH_FN(softmax_out));
  m.impl("_log_softmax", TORCH_FN(log_softmax));
  m.impl("_log_softmax.out", TORCH_FN(log_softmax_out));
  m.impl("_softmax_backward_data", TORCH_FN(softmax_backward));
  m.impl("_log_softmax_backward_data", TORCH_FN(log_softmax_backward));

  // Random numbers.
  m.impl("uniform_", TORCH_FN(uniform_));
  m.impl("normal_", TORCH_FN(normal_));
}

// Copies see conjugate/negative view bits themselves (copy_from resolves them); without this
// the generic math-bit fallback would materialise the view with a copy, and so recurse.
TORCH_LIBRARY_IMPL(aten, Conjugate, m) {
  m.impl("_copy_from", torch::CppFunction::makeFallthrough());
  m.impl("_copy_from_and_resize", torch::CppFunction::makeFallthrough());
}

TORCH_LIBRARY_IMPL(aten, Negative, m) {
  m.impl("_copy_from", torch::CppFunction::makeFallthrough());
  m.impl("_copy_from_and_resize", torch::CppFunction::makeFallthrough());
}

// A sparse COO tensor whose indices and values are device tensors: PyTorch's own
// device-generic constructor and accessors (metadata only, the parts alias). No sparse
// kernels: every other sparse op runs on the host (sparse_host_fallback).
TORCH_LIBRARY_IMPL(aten, SparsePrivateUse1, m) {
  m.impl("_sparse_coo_tensor_with_dims_and_tensors",
         TORCH_FN(at::native::new_with_dims_and_tensor_sparse_symint));
  m.impl("_indices", TORCH_FN(at::native::_indices_sparse));
  m.impl("_values", TORCH_FN(at::native::_values_sparse));
  m.impl("indices", TORCH_FN(at::native::indices_sparse));
  m.impl("values", TORCH_FN(at::native::values_sparse));
  m.impl("sparse_dim", TORCH_FN(at::native::sparse_dim_sparse));
  m.impl("dense_dim", TORCH_FN(at::native::dense_dim_sparse));
  m.impl("_nnz", TORCH_FN(at::native::_nnz_sparse));
  m.impl("is_coalesced", TORCH_FN(at::native::is_coalesced_sparse));
  m.impl("_coalesced_", TORCH_FN(at::native::_coalesced_sparse_));
}

TORCH_LIBRARY_IMPL(_, PrivateUse1, m) {
  m.fallback(torch::CppFunction::makeFromBoxedFunction<&host_fallback>());
}

// Sparse ops other than the accessors above run on the host (indices and values moved over).
TORCH_LIBRARY_IMPL(_, SparsePrivateUse1, m) {
  m.fallback(torch::CppFunction::makeFromBoxedFunction<&sparse_host_fallback>());
}

}  // namespace openneuron::bridge
