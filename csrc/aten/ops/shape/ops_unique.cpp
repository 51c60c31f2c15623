// torch.unique and torch.unique_consecutive over the flattened tensor, composed of the device's
// own ops (a stable sort, a boundary mask, masked_select, cumsum, bincount): nothing leaves the
// device but the count of distinct values, which sizes the result, as CUDA's unique reads it.
// Values always come back sorted (the CPU and CUDA sort even when sorted=False); NaNs are all
// distinct, as == makes them. Other dtypes and the dim= forms take the host fallback.
#include <ATen/ops/_unique.h>
#include <ATen/ops/_unique2.h>
#include <ATen/ops/bincount.h>
#include <ATen/ops/cumsum.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/masked_select.h>
#include <ATen/ops/ne.h>
#include <ATen/ops/ones.h>
#include <ATen/ops/sort.h>
#include <ATen/ops/unique_consecutive.h>
#include <c10/core/DeviceGuard.h>
#include <torch/library.h>

#include <tuple>

#include "aten/core/op_tracking.h"
#include "aten/core/tensor_views.h"
#include "aten/fallback/fallback.h"

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

UniqueResult unique_consecutive(const at::Tensor& self, bool return_inverse, bool return_counts,
                                std::optional<int64_t> dim) {
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
}

}  // namespace openneuron::bridge
