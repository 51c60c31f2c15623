// kthvalue, median, nanmedian and mode on the device, choosing among equal elements as the
// CPU does (kernels/shape/selection.h). The CPU's shape checks run at the call; a dtype the
// CPU refuses, or an out= of the wrong dtype, goes to the host, which raises the CPU's error.
#include <ATen/WrapDimUtils.h>
#include <ATen/native/Resize.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/kthvalue_ops.h>
#include <ATen/ops/median_ops.h>
#include <ATen/ops/mode_ops.h>
#include <ATen/ops/nanmedian_ops.h>
#include <c10/core/DeviceGuard.h>
#include <torch/library.h>

#include <vector>

#include "aten/core/op_helpers.h"
#include "aten/core/op_tracking.h"
#include "aten/core/tensor_views.h"
#include "aten/fallback/fallback.h"
#include "kernels/shape/selection.h"

namespace openneuron::bridge {
namespace {

enum class Selection { KthValue, Median, NanMedian, Mode };

const char* name_of(Selection selection) {
  switch (selection) {
    case Selection::KthValue:
      return "kthvalue";
    case Selection::Median:
    case Selection::NanMedian:
      return "median";
    default:
      return "mode";
  }
}

const char* queue_name_of(Selection selection) {
  switch (selection) {
    case Selection::KthValue:
      return "aten::kthvalue";
    case Selection::Median:
      return "aten::median";
    case Selection::NanMedian:
      return "aten::nanmedian";
    default:
      return "aten::mode";
  }
}

// The CPU computes every selection for integers, half, bfloat16 and float; mode also for bool.
bool selection_is_native(Selection selection, const at::Tensor& self) {
  if (!is_native_compute_dtype(self.scalar_type()) || self.dim() > kernels::kMaxDims) return false;
  return self.scalar_type() != at::kBool || selection == Selection::Mode;
}

bool outputs_match(const at::Tensor& self, const at::Tensor& values, const at::Tensor& indices) {
  return values.scalar_type() == self.scalar_type() && indices.scalar_type() == at::kLong;
}

// Sizes values/indices as the CPU does and queues the kernel over their keepdim views.
void select_into(Selection selection, const at::Tensor& self, int64_t k, int64_t dim, bool keepdim,
                 at::Tensor& values, at::Tensor& indices) {
  const char* name = name_of(selection);
  const c10::DeviceGuard guard(check_same_device(name, {&self, &values, &indices}));
  const int64_t wrapped = at::maybe_wrap_dim(dim, self.dim(), /*wrap_scalar=*/true);
  const int64_t length = self.dim() == 0 ? 1 : self.size(wrapped);
  TORCH_CHECK_INDEX(self.numel() > 0 || length > 0, name, "(): Expected reduction dim ", wrapped,
                    " to have non-zero size.");
  if (selection == Selection::KthValue) {
    TORCH_CHECK(k >= 1 && k <= length, "kthvalue(): selected number k out of range for dimension ",
                wrapped);
  }
  std::vector<int64_t> shape = self.sizes().vec();
  if (self.dim() > 0) {
    if (keepdim) {
      shape[wrapped] = 1;
    } else {
      shape.erase(shape.begin() + wrapped);
    }
  }
  at::native::resize_output(values, shape);
  at::native::resize_output(indices, shape);
  if (self.numel() == 0) return;
  const bool squeezed = self.dim() > 0 && !keepdim;
  const kernels::TensorView values_view = view_of(squeezed ? values.unsqueeze(wrapped) : values);
  const kernels::TensorView indices_view = view_of(squeezed ? indices.unsqueeze(wrapped) : indices);
  const kernels::TensorView in_view = view_of(self);
  const int d = static_cast<int>(self.dim() == 0 ? 0 : wrapped);
  stream_for(values).enqueue(queue_name_of(selection), [=] {
    switch (selection) {
      case Selection::KthValue:
        kernels::kthvalue(values_view, indices_view, in_view, d, k);
        break;
      case Selection::Median:
      case Selection::NanMedian:
        kernels::median(values_view, indices_view, in_view, d, selection == Selection::NanMedian);
        break;
      case Selection::Mode:
        kernels::mode(values_view, indices_view, in_view, d);
        break;
    }
  });
}

std::tuple<at::Tensor&, at::Tensor&> kthvalue_out(const at::Tensor& self, int64_t k, int64_t dim,
                                                  bool keepdim, at::Tensor& values,
                                                  at::Tensor& indices) {
  if (!selection_is_native(Selection::KthValue, self) || !outputs_match(self, values, indices)) {
    return OPENNEURON_FALLBACK(kthvalue_values, self, k, dim, keepdim, values, indices);
  }
  OPENNEURON_NATIVE_OP("aten::kthvalue.values");
  select_into(Selection::KthValue, self, k, dim, keepdim, values, indices);
  return {values, indices};
}

template <Selection kSelection>
std::tuple<at::Tensor&, at::Tensor&> median_dim_out(const at::Tensor& self, int64_t dim,
                                                    bool keepdim, at::Tensor& values,
                                                    at::Tensor& indices) {
  if (!selection_is_native(kSelection, self) || !outputs_match(self, values, indices)) {
    if (kSelection == Selection::Median) {
      return OPENNEURON_FALLBACK(median_dim_values, self, dim, keepdim, values, indices);
    }
    return OPENNEURON_FALLBACK(nanmedian_dim_values, self, dim, keepdim, values, indices);
  }
  OPENNEURON_NATIVE_OP(kSelection == Selection::Median ? "aten::median.dim_values"
                                                       : "aten::nanmedian.dim_values");
  select_into(kSelection, self, 0, dim, keepdim, values, indices);
  return {values, indices};
}

// median()/nanmedian() of every element: the value of the flattened line's selection.
template <Selection kSelection>
at::Tensor median_all(const at::Tensor& self) {
  if (!selection_is_native(kSelection, self) || self.numel() == 0) {
    if (kSelection == Selection::Median) return OPENNEURON_FALLBACK(median, self);
    return OPENNEURON_FALLBACK(nanmedian, self);
  }
  OPENNEURON_NATIVE_OP(kSelection == Selection::Median ? "aten::median" : "aten::nanmedian");
  at::Tensor values = at::empty({}, self.options());
  at::Tensor indices = at::empty({}, self.options().dtype(at::kLong));
  select_into(kSelection, self.reshape({-1}), 0, 0, /*keepdim=*/false, values, indices);
  return values;
}

std::tuple<at::Tensor&, at::Tensor&> mode_out(const at::Tensor& self, int64_t dim, bool keepdim,
                                              at::Tensor& values, at::Tensor& indices) {
  if (!selection_is_native(Selection::Mode, self) || !outputs_match(self, values, indices)) {
    return OPENNEURON_FALLBACK(mode_values, self, dim, keepdim, values, indices);
  }
  OPENNEURON_NATIVE_OP("aten::mode.values");
  select_into(Selection::Mode, self, 0, dim, keepdim, values, indices);
  return {values, indices};
}

std::tuple<at::Tensor, at::Tensor> mode(const at::Tensor& self, int64_t dim, bool keepdim) {
  if (!selection_is_native(Selection::Mode, self)) {
    return OPENNEURON_FALLBACK(mode, self, dim, keepdim);
  }
  at::Tensor values = at::empty({0}, self.options());
  at::Tensor indices = at::empty({0}, self.options().dtype(at::kLong));
  mode_out(self, dim, keepdim, values, indices);
  return {values, indices};
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("kthvalue.values", TORCH_FN(kthvalue_out));
  m.impl("median.dim_values", TORCH_FN(median_dim_out<Selection::Median>));
  m.impl("nanmedian.dim_values", TORCH_FN(median_dim_out<Selection::NanMedian>));
  m.impl("median", TORCH_FN(median_all<Selection::Median>));
  m.impl("nanmedian", TORCH_FN(median_all<Selection::NanMedian>));
  m.impl("mode", TORCH_FN(mode));
  m.impl("mode.values", TORCH_FN(mode_out));
}

}  // namespace openneuron::bridge
