// Reductions composed of native ops (masked_fill, ne, sum, amin, amax): nansum, count_nonzero
// over dims and aminmax, with the CPU's checks made at the call.
#include "aten/ops/reduce/ops_reduce_composed.h"

#include <ATen/WrapDimUtils.h>
#include <ATen/native/Resize.h>

#include <numeric>
#include <vector>

#include "aten/core/op_helpers.h"
#include "aten/core/op_tracking.h"
#include "aten/core/tensor_views.h"
#include "aten/fallback/fallback.h"

namespace openneuron::bridge {

namespace {

// The device composes the op: a neuron tensor of a native dtype (float64 and complex stay on
// the host, decision 4).
bool composes_natively(std::initializer_list<const at::Tensor*> tensors) {
  for (const at::Tensor* t : tensors) {
    if (!t->is_privateuseone()) return false;
  }
  return all_native_dtypes(tensors);
}

// self with NaN replaced by zero; integers and bool have none.
at::Tensor nan_as_zero(const at::Tensor& self) {
  if (!at::isFloatingType(self.scalar_type())) return self;
  return self.masked_fill(self.isnan(), 0);
}

void check_out_dtype(const at::Tensor& out, const at::Tensor& result) {
  TORCH_CHECK(out.scalar_type() == result.scalar_type(), "Expected out tensor to have dtype ",
              result.scalar_type(), ", but got ", out.scalar_type(), " instead");
}

}  // namespace

at::Tensor nansum(const at::Tensor& self, at::OptionalIntArrayRef dim, bool keepdim,
                  std::optional<at::ScalarType> dtype) {
  if (!composes_natively({&self}) || (dtype && !is_native_compute_dtype(*dtype))) {
    return OPENNEURON_FALLBACK(nansum, self, dim, keepdim, dtype);
  }
  OPENNEURON_NATIVE_OP("aten::nansum");
  return at::sum(nan_as_zero(self), dim, keepdim, dtype);
}

at::Tensor& nansum_out(const at::Tensor& self, at::OptionalIntArrayRef dim, bool keepdim,
                       std::optional<at::ScalarType> dtype, at::Tensor& out) {
  if (!composes_natively({&self, &out}) || (dtype && !is_native_compute_dtype(*dtype))) {
    return OPENNEURON_FALLBACK(nansum_out, self, dim, keepdim, dtype, out);
  }
  OPENNEURON_NATIVE_OP("aten::nansum.out");
  return at::sum_out(out, nan_as_zero(self), dim, keepdim, dtype);
}

at::Tensor count_nonzero_dims(const at::Tensor& self, at::IntArrayRef dims) {
  if (!composes_natively({&self}))
    return OPENNEURON_FALLBACK(count_nonzero_dim_IntList, self, dims);
  OPENNEURON_NATIVE_OP("aten::count_nonzero.dim_IntList");
  return at::ne(self, 0).sum(dims);
}

std::tuple<at::Tensor, at::Tensor> aminmax(const at::Tensor& self, std::optional<int64_t> dim,
                                           bool keepdim) {
  if (!composes_natively({&self})) return OPENNEURON_FALLBACK(aminmax, self, dim, keepdim);
  OPENNEURON_NATIVE_OP("aten::aminmax");
  std::vector<int64_t> dims;
  if (dim.has_value()) {
    const int64_t wrapped = at::maybe_wrap_dim(*dim, self.dim());
    TORCH_CHECK_INDEX(self.dim() == 0 || self.size(wrapped) != 0,
                      "aminmax: Expected reduction dim ", wrapped, " to have non-zero size.");
    dims.push_back(wrapped);
  } else {
    TORCH_CHECK(self.numel() > 0,
                "aminmax(): cannot compute aminmax over an empty dimension as the operation has "
                "no identity.");
    dims.resize(self.dim());
    std::iota(dims.begin(), dims.end(), int64_t{0});
  }
  return {at::amin(self, dims, keepdim), at::amax(self, dims, keepdim)};
}

std::tuple<at::Tensor&, at::Tensor&> aminmax_out(const at::Tensor& self, std::optional<int64_t> dim,
                                                 bool keepdim, at::Tensor& min, at::Tensor& max) {
  if (!composes_natively({&self, &min, &max})) {
    return OPENNEURON_FALLBACK(aminmax_out, self, dim, keepdim, min, max);
  }
  OPENNEURON_NATIVE_OP("aten::aminmax.out");
  const auto [low, high] = bridge::aminmax(self, dim, keepdim);
  check_out_dtype(min, low);
  check_out_dtype(max, high);
  at::native::resize_output(min, low.sizes());
  at::native::resize_output(max, high.sizes());
  min.copy_(low);
  max.copy_(high);
  return {min, max};
}

}  // namespace openneuron::bridge
