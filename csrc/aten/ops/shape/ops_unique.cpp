// torch.unique and torch.unique_consecutive over the flattened tensor, composed of the device's
// own ops (a stable sort, a boundary mask, masked_select, cumsum, bincount): nothing leaves the
// device but the count of distinct values, which sizes the result, as CUDA's unique reads it.
// Values always come back sorted (the CPU and CUDA sort even when sorted=False); NaNs are all
// distinct, as == makes them. Along a dimension (dim=), the slices are rows sorted
// lexicographically by a kernel and compared whole. Other dtypes take the host fallback.
#include <ATen/WrapDimUtils.h>
#include <ATen/ops/_unique.h>
#include <ATen/ops/_unique2.h>
#include <ATen/ops/any.h>
#include <ATen/ops/arange.h>
#include <ATen/ops/bincount.h>
#include <ATen/ops/cumsum.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/index_select.h>
#include <ATen/ops/masked_select.h>
#include <ATen/ops/ne.h>
#include <ATen/ops/nonzero.h>
#include <ATen/ops/ones.h>
#include <ATen/ops/sort.h>
#include <ATen/ops/unique_consecutive.h>
#include <ATen/ops/unique_dim.h>
#include <ATen/ops/unique_dim_consecutive.h>
#include <c10/core/DeviceGuard.h>
#include <torch/library.h>

#include <algorithm>
#include <tuple>
#include <vector>

#include "aten/core/op_tracking.h"
#include "aten/core/tensor_views.h"
#include "aten/fallback/fallback.h"
#include "kernels/shape/row_order.h"

namespace openneuron::bridge {
namespace {

using UniqueResult = std::tuple<at::Tensor, at::Tensor, at::Tensor>;

bool unique_is_native(const at::Tensor& self) {
  const at::ScalarType dtype = self.scalar_type();
  return dtype == at::kBool || (is_native_compute_dtype(dtype) && !at::isComplexType(dtype));
}

// Distinct runs of `values` (1-D, in order): the run values, each element's run index, and each
// run's length; inverse and counts only when asked for (empty otherwise, as the CPU returns).
UniqueResult runs_of(const at::Tensor& values, const at::IntArrayRef input_shape,
                     bool return_inverse, bool return_counts, const at::Tensor* order) {
  const at::TensorOptions index_options = values.options().dtype(at::kLong);
  const int64_t n = values.numel();
  if (n == 0) {
    return {values.clone(),
            return_inverse ? at::empty(input_shape, index_options) : at::empty({0}, index_options),
            at::empty({0}, index_options)};
  }
  at::Tensor starts = at::ones({n}, values.options().dtype(at::kBool));
  starts.slice(0, 1).copy_(at::ne(values.slice(0, 1), values.slice(0, 0, n - 1)));
  at::Tensor distinct = at::masked_select(values, starts);
  at::Tensor inverse = at::empty({0}, index_options);
  at::Tensor counts = at::empty({0}, index_options);
  if (return_inverse || return_counts) {
    const at::Tensor run = at::cumsum(starts, 0, at::kLong).sub_(1);
    if (return_inverse) {
      if (order == nullptr) {
        inverse = run.view(input_shape);
      } else {
        inverse = at::empty({n}, index_options);
        inverse.index_put_({*order}, run);
        inverse = inverse.view(input_shape);
      }
    }
    if (return_counts) counts = at::bincount(run, {}, distinct.numel());
  }
  return {distinct, inverse, counts};
}

UniqueResult unique2(const at::Tensor& self, bool sorted, bool return_inverse, bool return_counts) {
  if (!unique_is_native(self)) {
    return OPENNEURON_FALLBACK(_unique2, self, sorted, return_inverse, return_counts);
  }
  OPENNEURON_NATIVE_OP("aten::_unique2");
  const c10::DeviceGuard guard(self.device());
  const auto [values, order] = at::sort(self.reshape(-1), /*stable=*/true, 0, false);
  return runs_of(values, self.sizes(), return_inverse, return_counts, &order);
}

// The older torch.unique entry point (no counts), used by index_fill's backward.
std::tuple<at::Tensor, at::Tensor> unique(const at::Tensor& self, bool sorted,
                                          bool return_inverse) {
  if (!unique_is_native(self)) return OPENNEURON_FALLBACK(_unique, self, sorted, return_inverse);
  OPENNEURON_NATIVE_OP("aten::_unique");
  const c10::DeviceGuard guard(self.device());
  const auto [values, order] = at::sort(self.reshape(-1), /*stable=*/true, 0, false);
  const UniqueResult result = runs_of(values, self.sizes(), return_inverse, false, &order);
  return {std::get<0>(result), std::get<1>(result)};
}

// unique along `dim`: the slices along dim as rows, sorted (unless consecutive), their runs of
// equal rows; inverse and counts are always returned, as the CPU does.
UniqueResult unique_rows(const at::Tensor& self, int64_t dim, bool consecutive) {
  const int64_t wrapped = at::maybe_wrap_dim(dim, self.dim());
  const at::TensorOptions index_options = self.options().dtype(at::kLong);
  if (self.numel() == 0) {
    const auto sizes = self.sizes();
    TORCH_CHECK(std::count(sizes.begin(), sizes.end(), 0) == 1,
                "Number of zero sized dimensions is more than one, so unique cannot be applied ");
    TORCH_CHECK(self.size(wrapped) == 0,
                "There are 0 sized dimensions, and they aren't selected, so unique cannot be "
                "applied");
    return {at::empty(sizes, self.options()), at::empty({0}, index_options),
            at::empty({0}, index_options)};
  }
  const at::Tensor moved = self.movedim(wrapped, 0);
  const at::Tensor rows = moved.contiguous().view({moved.size(0), -1});
  const int64_t n = rows.size(0);
  at::Tensor order = at::arange(n, index_options);
  at::Tensor sorted = rows;
  if (!consecutive) {
    const kernels::TensorView order_view = view_of(order);
    const kernels::TensorView rows_view = view_of(rows);
    stream_for(order).enqueue("aten::unique_dim",
                              [=] { kernels::lexicographic_row_order(order_view, rows_view); });
    sorted = at::index_select(rows, 0, order);
  }
  at::Tensor starts = at::ones({n}, self.options().dtype(at::kBool));
  if (n > 1) {
    starts.slice(0, 1).copy_(
        at::any(at::ne(sorted.slice(0, 1), sorted.slice(0, 0, n - 1)), /*dim=*/1));
  }
  const at::Tensor first_of_run = at::nonzero(starts).view({-1});
  at::Tensor distinct = at::index_select(sorted, 0, first_of_run);
  std::vector<int64_t> shape = moved.sizes().vec();
  shape[0] = distinct.size(0);
  distinct = distinct.view(shape).movedim(0, wrapped);
  const at::Tensor run = at::cumsum(starts, 0, at::kLong).sub_(1);
  at::Tensor inverse = run;
  if (!consecutive) {
    inverse = at::empty({n}, index_options);
    inverse.index_put_({order}, run);
  }
  return {distinct, inverse, at::bincount(run, {}, first_of_run.numel())};
}

bool unique_rows_is_native(const at::Tensor& self) {
  return unique_is_native(self) && self.dim() > 0 && self.dim() <= kernels::kMaxDims;
}

UniqueResult unique_along_dim(const at::Tensor& self, int64_t dim, bool sorted, bool return_inverse,
                              bool return_counts) {
  if (!unique_rows_is_native(self)) {
    return OPENNEURON_FALLBACK(unique_dim, self, dim, sorted, return_inverse, return_counts);
  }
  OPENNEURON_NATIVE_OP("aten::unique_dim");
  const c10::DeviceGuard guard(self.device());
  return unique_rows(self, dim, /*consecutive=*/false);
}

UniqueResult unique_consecutive_along_dim(const at::Tensor& self, int64_t dim, bool return_inverse,
                                          bool return_counts) {
  if (!unique_rows_is_native(self)) {
    return OPENNEURON_FALLBACK(unique_dim_consecutive, self, dim, return_inverse, return_counts);
  }
  OPENNEURON_NATIVE_OP("aten::unique_dim_consecutive");
  const c10::DeviceGuard guard(self.device());
  return unique_rows(self, dim, /*consecutive=*/true);
}

UniqueResult unique_consecutive(const at::Tensor& self, bool return_inverse, bool return_counts,
                                std::optional<int64_t> dim) {
  if (dim.has_value() && unique_rows_is_native(self)) {
    return unique_consecutive_along_dim(self, *dim, return_inverse, return_counts);
  }
  if (dim.has_value() || !unique_is_native(self)) {
    return OPENNEURON_FALLBACK(unique_consecutive, self, return_inverse, return_counts, dim);
  }
  OPENNEURON_NATIVE_OP("aten::unique_consecutive");
  const c10::DeviceGuard guard(self.device());
  return runs_of(self.reshape(-1), self.sizes(), return_inverse, return_counts, nullptr);
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("_unique2", TORCH_FN(unique2));
  m.impl("unique_consecutive", TORCH_FN(unique_consecutive));
  m.impl("_unique", TORCH_FN(unique));
  m.impl("unique_dim", TORCH_FN(unique_along_dim));
  m.impl("unique_dim_consecutive", TORCH_FN(unique_consecutive_along_dim));
}

}  // namespace openneuron::bridge
