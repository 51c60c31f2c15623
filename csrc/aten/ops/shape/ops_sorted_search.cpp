// torch.searchsorted and torch.bucketize on the device. PyTorch's meta kernel checks the call
// first (shapes, side/right, sorter, out_int32), so errors are the CPU's, raised at the call;
// operands are promoted to their common dtype, as the CPU compares them.
#include <ATen/ScalarOps.h>
#include <ATen/native/Resize.h>
#include <ATen/ops/bucketize.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/empty_strided.h>
#include <ATen/ops/result_type.h>
#include <ATen/ops/searchsorted.h>
#include <c10/core/DeviceGuard.h>
#include <c10/util/accumulate.h>
#include <torch/library.h>

#include <optional>

#include "aten/core/op_helpers.h"
#include "aten/core/op_tracking.h"
#include "aten/core/tensor_views.h"
#include "aten/fallback/fallback.h"
#include "kernels/shape/sorted_search.h"

namespace openneuron::bridge {
namespace {

at::Tensor meta_like(const at::Tensor& tensor) {
  return at::empty_strided(tensor.sizes(), tensor.strides(),
                           tensor.options().device(c10::DeviceType::Meta));
}

std::optional<at::Tensor> meta_like(const std::optional<at::Tensor>& tensor) {
  if (!tensor.has_value() || !tensor->defined()) return std::nullopt;
  return meta_like(*tensor);
}

bool search_is_native(at::ScalarType common) {
  return common != at::kBool && !at::isComplexType(common) && is_native_compute_dtype(common);
}

// Writes the insertion points into `result` (values' shape, int32 or int64, contiguous).
void run_search(at::Tensor& result, const at::Tensor& boundaries, const at::Tensor& values,
                const std::optional<at::Tensor>& sorter, bool right, at::ScalarType common) {
  const c10::Device device = result.device();
  // Rows: 1-D boundaries serve every value (one row of all values); N-D boundaries pair their
  // leading dims with the values' (the meta check made them equal). Sizes may be 0.
  const bool shared = boundaries.dim() <= 1;
  const int64_t length = boundaries.dim() == 0 ? 1 : boundaries.size(-1);
  const auto leading = [](const at::Tensor& t) {
    return c10::multiply_integers(t.sizes().begin(), t.sizes().end() - 1);
  };
  const int64_t boundary_rows = shared ? 1 : leading(boundaries);
  const int64_t value_rows = shared ? 1 : leading(values);
  const int64_t value_count = shared ? values.numel() : values.size(-1);
  if (values.numel() == 0) return;
  const at::Tensor rows_b =
      boundaries.to(device).to(common).contiguous().reshape({boundary_rows, length});
  const at::Tensor rows_v =
      values.to(device).to(common).contiguous().reshape({value_rows, value_count});
  std::optional<at::Tensor> rows_order;
  if (sorter.has_value() && sorter->defined()) {
    rows_order = sorter->to(device).to(at::kLong).contiguous().reshape({boundary_rows, length});
  }
  if (length == 0) {
    result.zero_();
    return;
  }
  const kernels::TensorView out_view = view_of(result.view({value_rows, value_count}));
  const kernels::TensorView b_view = view_of(rows_b);
  const kernels::TensorView v_view = view_of(rows_v);
  const std::optional<kernels::TensorView> order_view =
      rows_order ? std::optional<kernels::TensorView>(view_of(*rows_order)) : std::nullopt;
  stream_for(result).enqueue("aten::searchsorted", [=] {
    kernels::sorted_search(out_view, b_view, v_view, order_view ? &*order_view : nullptr, right);
  });
}

at::Tensor& sorted_search_out(const at::Tensor& boundaries, const at::Tensor& values,
                              bool out_int32, bool right, std::optional<c10::string_view> side,
                              const std::optional<at::Tensor>& sorter, at::Tensor& out) {
  // The CPU's checks, on meta tensors: they raise its errors and give the result's dtype.
  const bool scalar_values = values.unsafeGetTensorImpl()->is_wrapped_number();
  const at::Tensor checked = scalar_values
                                 ? at::searchsorted(meta_like(boundaries), values.item(), out_int32,
                                                    right, side, meta_like(sorter))
                                 : at::searchsorted(meta_like(boundaries), meta_like(values),
                                                    out_int32, right, side, meta_like(sorter));
  const at::ScalarType common = at::result_type(boundaries, values);
  // Bool operands promote with the other one; two bool ones get the CPU kernel's refusal.
  if (!search_is_native(common)) {
    if (scalar_values) {
      return OPENNEURON_FALLBACK(searchsorted_Scalar_out, boundaries, values.item(), out_int32,
                                 right, side, sorter, out);
    }
    return OPENNEURON_FALLBACK(searchsorted_Tensor_out, boundaries, values, out_int32, right, side,
                               sorter, out);
  }
  OPENNEURON_NATIVE_OP("aten::searchsorted");
  const at::Tensor* sorter_pointer = sorter.has_value() && sorter->defined() ? &*sorter : nullptr;
  const c10::Device device = scalar_values
                                 ? check_same_device("searchsorted", {&boundaries, &out})
                                 : check_same_device("searchsorted", {&boundaries, &values, &out});
  if (sorter_pointer != nullptr) check_same_device("searchsorted", {&boundaries, sorter_pointer});
  const c10::DeviceGuard guard(device);
  TORCH_CHECK(out.scalar_type() == checked.scalar_type(), "torch.searchsorted(): output tensor's ",
              "dtype is wrong, it can only be Int(int32) or Long(int64) depending on whether ",
              "out_int32 flag is True, but we got output tensor's dtype ", out.scalar_type(),
              " and out_int32 flag is ", (out_int32 ? "True" : "False"));
  at::native::resize_output(out, checked.sizes());
  const bool direct = out.is_contiguous();
  at::Tensor result = direct ? out : at::empty(checked.sizes(), out.options());
  const bool is_right = right || (side.has_value() && *side == "right");
  run_search(result, boundaries, values, sorter, is_right, common);
  if (!direct) out.copy_(result);
  return out;
}

at::Tensor sorted_search(const at::Tensor& boundaries, const at::Tensor& values, bool out_int32,
                         bool right, std::optional<c10::string_view> side,
                         const std::optional<at::Tensor>& sorter) {
  const c10::DeviceGuard guard(boundaries.device());
  at::Tensor out = at::empty({0}, boundaries.options().dtype(out_int32 ? at::kInt : at::kLong));
  return sorted_search_out(boundaries, values, out_int32, right, side, sorter, out);
}

at::Tensor& sorted_search_scalar_out(const at::Tensor& boundaries, const at::Scalar& value,
                                     bool out_int32, bool right,
                                     std::optional<c10::string_view> side,
                                     const std::optional<at::Tensor>& sorter, at::Tensor& out) {
  return sorted_search_out(boundaries, wrapped_number(value), out_int32, right, side, sorter, out);
}

at::Tensor sorted_search_scalar(const at::Tensor& boundaries, const at::Scalar& value,
                                bool out_int32, bool right, std::optional<c10::string_view> side,
                                const std::optional<at::Tensor>& sorter) {
  return sorted_search(boundaries, wrapped_number(value), out_int32, right, side, sorter);
}

void check_bucketize_boundaries(const at::Tensor& boundaries) {
  TORCH_CHECK(boundaries.dim() == 1, "boundaries tensor must be 1 dimension, but got dim(",
              boundaries.dim(), ")");
}

// bucketize(values, boundaries) is searchsorted(boundaries, values) with 1-D boundaries.
at::Tensor& bucketize_into(const at::Tensor& values, const at::Tensor& boundaries, bool out_int32,
                           bool right, at::Tensor& out) {
  check_bucketize_boundaries(boundaries);
  (void)at::bucketize(meta_like(values), meta_like(boundaries), out_int32, right);
  return sorted_search_out(boundaries, values, out_int32, right, std::nullopt, std::nullopt, out);
}

at::Tensor bucketize_values(const at::Tensor& values, const at::Tensor& boundaries, bool out_int32,
                            bool right) {
  check_bucketize_boundaries(boundaries);
  (void)at::bucketize(meta_like(values), meta_like(boundaries), out_int32, right);
  return sorted_search(boundaries, values, out_int32, right, std::nullopt, std::nullopt);
}

at::Tensor bucketize_scalar_values(const at::Scalar& value, const at::Tensor& boundaries,
                                   bool out_int32, bool right) {
  check_bucketize_boundaries(boundaries);
  (void)at::bucketize(value, meta_like(boundaries), out_int32, right);
  return sorted_search(boundaries, wrapped_number(value), out_int32, right, std::nullopt,
                       std::nullopt);
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("searchsorted.Tensor", TORCH_FN(sorted_search));
  m.impl("searchsorted.Tensor_out", TORCH_FN(sorted_search_out));
  m.impl("searchsorted.Scalar", TORCH_FN(sorted_search_scalar));
  m.impl("searchsorted.Scalar_out", TORCH_FN(sorted_search_scalar_out));
  m.impl("bucketize.Tensor", TORCH_FN(bucketize_values));
  m.impl("bucketize.Tensor_out", TORCH_FN(bucketize_into));
  m.impl("bucketize.Scalar", TORCH_FN(bucketize_scalar_values));
}

}  // namespace openneuron::bridge
