// Registrations of the reduce-index family: general reductions, scans, indexing, sorting,
// concatenation and creation ops.
#include <torch/library.h>

#include "aten/ops/ops_reduce_index.h"
#include "aten/ops/reduce/ops_reduce_composed.h"

namespace openneuron::bridge {

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  // Variance and standard deviation.
  m.impl("var.correction", TORCH_FN(var_correction));
  m.impl("var.correction_out", TORCH_FN(var_correction_out));
  m.impl("std.correction", TORCH_FN(std_correction));
  m.impl("std.correction_out", TORCH_FN(std_correction_out));
  m.impl("var_mean.correction", TORCH_FN(var_mean_correction));
  m.impl("std_mean.correction", TORCH_FN(std_mean_correction));

  // Histograms.
  m.impl("histc", TORCH_FN(histc));
  m.impl("histc.out", TORCH_FN(histc_out));
  m.impl("bincount", TORCH_FN(bincount));

  // Set membership.
  m.impl("isin.Tensor_Tensor", TORCH_FN(isin));
  m.impl("isin.Tensor_Tensor_out", TORCH_FN(isin_out));
  m.impl("isin.Tensor_Scalar", TORCH_FN(isin_scalar));
  m.impl("isin.Tensor_Scalar_out", TORCH_FN(isin_scalar_out));
  m.impl("isin.Scalar_Tensor", TORCH_FN(isin_scalar_tensor));
  m.impl("isin.Scalar_Tensor_out", TORCH_FN(isin_scalar_tensor_out));

  // Extremes.
  m.impl("max", TORCH_FN(max_all));
  m.impl("max.unary_out", TORCH_FN(max_all_out));
  m.impl("min", TORCH_FN(min_all));
  m.impl("min.unary_out", TORCH_FN(min_all_out));
  m.impl("max.dim", TORCH_FN(max_dim));
  m.impl("max.dim_max", TORCH_FN(max_dim_out));
  m.impl("min.dim", TORCH_FN(min_dim));
  m.impl("min.dim_min", TORCH_FN(min_dim_out));
  m.impl("amax", TORCH_FN(amax));
  m.impl("amax.out", TORCH_FN(amax_out));
  m.impl("amin", TORCH_FN(amin));
  m.impl("amin.out", TORCH_FN(amin_out));
  m.impl("argmax", TORCH_FN(argmax));
  m.impl("argmax.out", TORCH_FN(argmax_out));
  m.impl("argmin", TORCH_FN(argmin));
  m.impl("argmin.out", TORCH_FN(argmin_out));

  // Product, norms, boolean reductions, logsumexp.
  m.impl("prod", TORCH_FN(prod_all));
  m.impl("prod.dim_int", TORCH_FN(prod_dim));
  m.impl("prod.int_out", TORCH_FN(prod_dim_out));
  m.impl("linalg_vector_norm", TORCH_FN(linalg_vector_norm));
  m.impl("linalg_vector_norm.out", TORCH_FN(linalg_vector_norm_out));
  m.impl("norm.ScalarOpt_dim", TORCH_FN(norm_dim));
  m.impl("norm.out", TORCH_FN(norm_dim_out));
  m.impl("all", TORCH_FN(all_all));
  m.impl("all.all_out", TORCH_FN(all_all_out));
  m.impl("all.dim", TORCH_FN(all_dim));
  m.impl("all.out", TORCH_FN(all_dim_out));
  m.impl("all.dims", TORCH_FN(all_dims));
  m.impl("all.dims_out", TORCH_FN(all_dims_out));
  m.impl("any", TORCH_FN(any_all));
  m.impl("any.all_out", TORCH_FN(any_all_out));
  m.impl("any.dim", TORCH_FN(any_dim));
  m.impl("any.out", TORCH_FN(any_dim_out));
  m.impl("any.dims", TORCH_FN(any_dims));
  m.impl("any.dims_out", TORCH_FN(any_dims_out));
  m.impl("logsumexp", TORCH_FN(logsumexp));
  m.impl("logsumexp.out", TORCH_FN(logsumexp_out));
  m.impl("hash_tensor.out", TORCH_FN(hash_tensor_out));
  m.impl("_logcumsumexp", TORCH_FN(logcumsumexp));
  m.impl("_logcumsumexp.out", TORCH_FN(logcumsumexp_out));
  // Composed of native ops: nansum (nanmean's sum), count_nonzero over dims, aminmax.
  m.impl("nansum", TORCH_FN(nansum));
  m.impl("nansum.out", TORCH_FN(nansum_out));
  m.impl("count_nonzero.dim_IntList", TORCH_FN(count_nonzero_dims));
  m.impl("aminmax", TORCH_FN(aminmax));
  m.impl("aminmax.out", TORCH_FN(aminmax_out));

  // Scans.
  m.impl("cumsum", TORCH_FN(cumsum));
  m.impl("cumsum_", TORCH_FN(cumsum_));
  m.impl("cumsum.out", TORCH_FN(cumsum_out));
  m.impl("cumprod", TORCH_FN(cumprod));
  m.impl("cumprod_", TORCH_FN(cumprod_));
  m.impl("cumprod.out", TORCH_FN(cumprod_out));

  // Indexing.
  m.impl("index_select", TORCH_FN(index_select));
  m.impl("index_select.out", TORCH_FN(index_select_out));
  m.impl("gather", TORCH_FN(gather));
  m.impl("gather.out", TORCH_FN(gather_out));
  m.impl("scatter.src", TORCH_FN(scatter_src));
  m.impl("scatter_.src", TORCH_FN(scatter_src_));
  m.impl("scatter.src_out", TORCH_FN(scatter_src_out));
  m.impl("scatter.value", TORCH_FN(scatter_value));
  m.impl("scatter_.value", TORCH_FN(scatter_value_));
  m.impl("scatter.value_out", TORCH_FN(scatter_value_out));
  m.impl("scatter_add", TORCH_FN(scatter_add));
  m.impl("scatter_add_", TORCH_FN(scatter_add_));
  m.impl("scatter_add.out", TORCH_FN(scatter_add_out));
  m.impl("scatter_reduce.two", TORCH_FN(scatter_reduce_two));
  m.impl("scatter_reduce_.two", TORCH_FN(scatter_reduce_two_));
  m.impl("scatter_reduce.two_out", TORCH_FN(scatter_reduce_two_out));
  m.impl("index.Tensor", TORCH_FN(index_tensor));
  m.impl("index.Tensor_out", TORCH_FN(index_tensor_out));
  m.impl("_index_put_impl_", TORCH_FN(index_put_impl_));
  m.impl("index_add", TORCH_FN(index_add));
  m.impl("index_add_", TORCH_FN(index_add_));
  m.impl("index_add.out", TORCH_FN(index_add_out));
  m.impl("index_copy.out", TORCH_FN(index_copy_out));
  m.impl("masked_select", TORCH_FN(masked_select));
  m.impl("masked_select.out", TORCH_FN(masked_select_out));
  m.impl("nonzero", TORCH_FN(nonzero));
  m.impl("nonzero.out", TORCH_FN(nonzero_out));
  m.impl("embedding_dense_backward", TORCH_FN(embedding_dense_backward));

  // Indexing on the gather/scatter kernels: fills, flat take/put, masked scatter, equal.
  m.impl("index_fill_.int_Scalar", TORCH_FN(index_fill_int_scalar_));
  m.impl("index_fill_.int_Tensor", TORCH_FN(index_fill_int_tensor_));
  m.impl("take", TORCH_FN(take));
  m.impl("take.out", TORCH_FN(take_out));
  m.impl("put_", TORCH_FN(put_));
  m.impl("masked_scatter_", TORCH_FN(masked_scatter_));
  m.impl("equal", TORCH_FN(equal));
  m.impl("narrow_copy.out", TORCH_FN(narrow_copy_out));
  m.impl("channel_shuffle", TORCH_FN(channel_shuffle));
  m.impl("index_reduce", TORCH_FN(index_reduce));
  m.impl("index_reduce_", TORCH_FN(index_reduce_));
  m.impl("index_reduce.out", TORCH_FN(index_reduce_out));
  m.impl("max_unpool2d", TORCH_FN(max_unpool2d));
  m.impl("max_unpool3d", TORCH_FN(max_unpool3d));
  m.impl("scatter.reduce", TORCH_FN(scatter_reduce_legacy));
  m.impl("scatter_.reduce", TORCH_FN(scatter_reduce_legacy_));
  m.impl("scatter.reduce_out", TORCH_FN(scatter_reduce_legacy_out));
  m.impl("scatter.value_reduce", TORCH_FN(scatter_value_reduce));
  m.impl("scatter_.value_reduce", TORCH_FN(scatter_value_reduce_));
  m.impl("scatter.value_reduce_out", TORCH_FN(scatter_value_reduce_out));

  // Sorting, concatenation, shape and creation.
  m.impl("sort.stable", TORCH_FN(sort_stable));
  m.impl("sort.values_stable", TORCH_FN(sort_stable_out));
  m.impl("topk", TORCH_FN(topk));
  m.impl("topk.values", TORCH_FN(topk_out));
  m.impl("cat", TORCH_FN(cat));
  m.impl("cat.out", TORCH_FN(cat_out));
  m.impl("flip", TORCH_FN(flip));
  m.impl("roll", TORCH_FN(roll));
  m.impl("repeat", TORCH_FN(repeat));
  m.impl("arange.start_out", TORCH_FN(arange_start_out));
  m.impl("linspace.out", TORCH_FN(linspace_out));
  m.impl("logspace.out", TORCH_FN(logspace_out));
  m.impl("eye.out", TORCH_FN(eye_out));
  m.impl("eye.m_out", TORCH_FN(eye_m_out));
  m.impl("tril_indices", TORCH_FN(tril_indices));
  m.impl("triu_indices", TORCH_FN(triu_indices));
  m.impl("tril", TORCH_FN(tril));
  m.impl("tril_", TORCH_FN(tril_));
  m.impl("tril.out", TORCH_FN(tril_out));
  m.impl("triu", TORCH_FN(triu));
  m.impl("triu_", TORCH_FN(triu_));
  m.impl("triu.out", TORCH_FN(triu_out));
}

}  // namespace openneuron::bridge
