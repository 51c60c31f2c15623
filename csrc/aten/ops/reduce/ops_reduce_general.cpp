// Variance/std, extremes, argmax/argmin, product, norms, all/any, logsumexp and cumulative
// sums/products on the device. Each op sizes its outputs, then queues one kernel call.
#include <ATen/Functions.h>
#include <ATen/WrapDimUtils.h>
#include <ATen/WrapDimUtilsMulti.h>
#include <ATen/native/Resize.h>
#include <c10/core/DeviceGuard.h>

#include <cmath>

#include "aten/core/op_helpers.h"
#include "aten/core/op_tracking.h"
#include "aten/core/tensor_views.h"
#include "aten/fallback/fallback.h"
#include "aten/ops/ops_reduce_index.h"
#include "kernels/reduce/reduce_general.h"
#include "kernels/reduce/scan.h"

namespace openneuron::bridge {

namespace {

using kernels::GeneralReduceOp;
using kernels::GeneralReduceParams;

// Bit d set when dim d is reduced; no dims (or an empty list) reduces all of them.
uint32_t mask_of(const at::Tensor& self, at::OptionalIntArrayRef dim) {
  const int64_t ndim = self.dim();
  if (!dim.has_value() || dim->empty()) return ndim == 0 ? 0u : ((1u << ndim) - 1);
  const auto bits = at::dim_list_to_bitset(*dim, ndim);
  uint32_t mask = 0;
  for (int64_t d = 0; d < ndim; ++d) {
    if (bits[d]) mask |= 1u << d;
  }
  return mask;
}

uint32_t mask_of_dim(const at::Tensor& self, int64_t dim) {
  const int64_t wrapped = at::maybe_wrap_dim(dim, self.dim());
  return self.dim() == 0 ? 0u : (1u << wrapped);
}

std::vector<int64_t> reduced_shape(const at::Tensor& self, uint32_t mask, bool keepdim) {
  std::vector<int64_t> shape;
  for (int64_t d = 0; d < self.dim(); ++d) {
    if (!(mask & (1u << d)))
      shape.push_back(self.size(d));
    else if (keepdim)
      shape.push_back(1);
  }
  return shape;
}

// The device can run it: a native dtype, few enough dims for the mask, on the device.
bool native_input(const at::Tensor& self) {
  return self.dim() <= 31 && is_native_compute_dtype(self.scalar_type());
}
bool native_float_input(const at::Tensor& self) {
  return native_input(self) && at::isFloatingType(self.scalar_type());
}

// PyTorch refuses extremes over empty dims (there is no identity).
void check_nonempty_reduction(const char* name, const at::Tensor& self, uint32_t mask) {
  if (self.dim() == 0) return;
  if (mask == (self.dim() >= 32 ? ~0u : (1u << self.dim()) - 1)) {
    TORCH_CHECK_INDEX(self.numel() > 0, name,
                      "(): Expected reduction dim to be specified for input.numel() == 0.");
  }
  for (int64_t d = 0; d < self.dim(); ++d) {
    if (mask & (1u << d)) {
      TORCH_CHECK_INDEX(self.size(d) > 0, name, "(): Expected reduction dim ", d,
                        " to have non-zero size.");
    }
  }
}

at::Tensor keepdim_layout(const at::Tensor& out, const at::Tensor& self, uint32_t mask) {
  at::Tensor view = out;
  if (out.dim() != self.dim()) {
    for (int64_t d = 0; d < self.dim(); ++d) {
      if (mask & (1u << d)) view = view.unsqueeze(d);
    }
  }
  return view;
}

void launch(const char* name, GeneralReduceOp op, const GeneralReduceParams& params,
            const at::Tensor& self, uint32_t mask, const at::Tensor& primary,
            const at::Tensor& secondary = at::Tensor()) {
  if (primary.numel() == 0) return;
  const kernels::TensorView primary_view = view_of(keepdim_layout(primary, self, mask));
  kernels::TensorView secondary_view;
  if (secondary.defined()) secondary_view = view_of(keepdim_layout(secondary, self, mask));
  const kernels::TensorView in_view = view_of(self);
  stream_for(primary).enqueue(name, [=] {
    kernels::reduce_general(op, params, primary_view, secondary_view, in_view, mask);
  });
}

at::Tensor new_output(const at::Tensor& self, uint32_t mask, bool keepdim, at::ScalarType dtype) {
  return at::empty(reduced_shape(self, mask, keepdim), self.options().dtype(dtype));
}

void prepare_out(const char* name, const at::Tensor& self, at::Tensor& out, uint32_t mask,
                 bool keepdim, at::ScalarType expected) {
  check_same_device(name, {&self, &out});
  TORCH_CHECK(out.scalar_type() == expected, name, ": Expected out tensor to have dtype ", expected,
              ", but got ", out.scalar_type(), " instead");
  at::native::resize_output(out, reduced_shape(self, mask, keepdim));
}

GeneralReduceParams var_params(const std::optional<at::Scalar>& correction, bool take_sqrt) {
  GeneralReduceParams params;
  params.correction = correction.has_value() ? correction->toDouble() : 1.0;
  params.take_sqrt = take_sqrt;
  return params;
}

at::ScalarType bool_reduction_dtype(const at::Tensor& self) {
  return self.scalar_type() == at::kByte ? at::kByte : at::kBool;
}

}  // namespace

// ---- var / std -------------------------------------------------------------------------

at::Tensor var_correction(const at::Tensor& self, at::OptionalIntArrayRef dim,
                          const std::optional<at::Scalar>& correction, bool keepdim) {
  if (!native_float_input(self))
    return OPENNEURON_FALLBACK(var_correction, self, dim, correction, keepdim);
  OPENNEURON_NATIVE_OP("aten::var.correction");
  const c10::DeviceGuard guard(self.device());
  const uint32_t mask = mask_of(self, dim);
  at::Tensor out = new_output(self, mask, keepdim, self.scalar_type());
  launch("aten::var", GeneralReduceOp::Var, var_params(correction, false), self, mask, out);
  return out;
}

at::Tensor& var_correction_out(const at::Tensor& self, at::OptionalIntArrayRef dim,
                               const std::optional<at::Scalar>& correction, bool keepdim,
                               at::Tensor& out) {
  if (!native_float_input(self) || !native_input(out)) {
    return OPENNEURON_FALLBACK(var_correction_out, self, dim, correction, keepdim, out);
  }
  OPENNEURON_NATIVE_OP("aten::var.correction_out");
  const c10::DeviceGuard guard(self.device());
  const uint32_t mask = mask_of(self, dim);
  prepare_out("var.correction_out", self, out, mask, keepdim, self.scalar_type());
  launch("aten::var", GeneralReduceOp::Var, var_params(correction, false), self, mask, out);
  return out;
}

at::Tensor std_correction(const at::Tensor& self, at::OptionalIntArrayRef dim,
                          const std::optional<at::Scalar>& correction, bool keepdim) {
  if (!native_float_input(self))
    return OPENNEURON_FALLBACK(std_correction, self, dim, correction, keepdim);
  OPENNEURON_NATIVE_OP("aten::std.correction");
  const c10::DeviceGuard guard(self.device());
  const uint32_t mask = mask_of(self, dim);
  at::Tensor out = new_output(self, mask, keepdim, self.scalar_type());
  launch("aten::std", GeneralReduceOp::Var, var_params(correction, true), self, mask, out);
  return out;
}

at::Tensor& std_correction_out(const at::Tensor& self, at::OptionalIntArrayRef dim,
                               const std::optional<at::Scalar>& correction, bool keepdim,
                               at::Tensor& out) {
  if (!native_float_input(self) || !native_input(out)) {
    return OPENNEURON_FALLBACK(std_correction_out, self, dim, correction, keepdim, out);
  }
  OPENNEURON_NATIVE_OP("aten::std.correction_out");
  const c10::DeviceGuard guard(self.device());
  const uint32_t mask = mask_of(self, dim);
  prepare_out("std.correction_out", self, out, mask, keepdim, self.scalar_type());
  launch("aten::std", GeneralReduceOp::Var, var_params(correction, true), self, mask, out);
  return out;
}

std::tuple<at::Tensor, at::Tensor> var_mean_correction(const at::Tensor& self,
                                                       at::OptionalIntArrayRef dim,
                                                       const std::optional<at::Scalar>& correction,
                                                       bool keepdim) {
  if (!native_float_input(self)) {
    return OPENNEURON_FALLBACK(var_mean_correction, self, dim, correction, keepdim);
  }
  OPENNEURON_NATIVE_OP("aten::var_mean.correction");
  const c10::DeviceGuard guard(self.device());
  const uint32_t mask = mask_of(self, dim);
  at::Tensor var = new_output(self, mask, keepdim, self.scalar_type());
  at::Tensor mean = new_output(self, mask, keepdim, self.scalar_type());
  launch("aten::var_mean", GeneralReduceOp::Var, var_params(correction, false), self, mask, var,
         mean);
  return {var, mean};
}

std::tuple<at::Tensor, at::Tensor> std_mean_correction(const at::Tensor& self,
                                                       at::OptionalIntArrayRef dim,
                                                       const std::optional<at::Scalar>& correction,
                                                       bool keepdim) {
  if (!native_float_input(self)) {
    return OPENNEURON_FALLBACK(std_mean_correction, self, dim, correction, keepdim);
  }
  OPENNEURON_NATIVE_OP("aten::std_mean.correction");
  const c10::DeviceGuard guard(self.device());
  const uint32_t mask = mask_of(self, dim);
  at::Tensor std = new_output(self, mask, keepdim, self.scalar_type());
  at::Tensor mean = new_output(self, mask, keepdim, self.scalar_type());
  launch("aten::std_mean", GeneralReduceOp::Var, var_params(correction, true), self, mask, std,
         mean);
  return {std, mean};
}

// ---- max / min / amax / amin / argmax / argmin ------------------------------------------

namespace {

at::Tensor extreme_all(const char* name, GeneralReduceOp op, const at::Tensor& self) {
  const c10::DeviceGuard guard(self.device());
  const uint32_t mask = mask_of(self, std::nullopt);
  check_nonempty_reduction(op == GeneralReduceOp::Max ? "max" : "min", self, mask);
  at::Tensor out = new_output(self, mask, false, self.scalar_type());
  launch(name, op, {}, self, mask, out);
  return out;
}

void extreme_dim_into(const char* name, GeneralReduceOp op, const at::Tensor& self, int64_t dim,
                      bool keepdim, at::Tensor& values, at::Tensor& indices) {
  const uint32_t mask = mask_of_dim(self, dim);
  check_nonempty_reduction(op == GeneralReduceOp::Max ? "max" : "min", self, mask);
  launch(name, op, {}, self, mask, values, indices);
}

}  // namespace

at::Tensor max_all(const at::Tensor& self) {
  if (!native_input(self)) return OPENNEURON_FALLBACK(max, self);
  OPENNEURON_NATIVE_OP("aten::max");
  return extreme_all("aten::max", GeneralReduceOp::Max, self);
}

at::Tensor& max_all_out(const at::Tensor& self, at::Tensor& out) {
  if (!native_input(self) || !native_input(out))
    return OPENNEURON_FALLBACK(max_unary_out, self, out);
  OPENNEURON_NATIVE_OP("aten::max.unary_out");
  const c10::DeviceGuard guard(self.device());
  const uint32_t mask = mask_of(self, std::nullopt);
  check_nonempty_reduction("max", self, mask);
  prepare_out("max.unary_out", self, out, mask, false, self.scalar_type());
  launch("aten::max", GeneralReduceOp::Max, {}, self, mask, out);
  return out;
}

at::Tensor min_all(const at::Tensor& self) {
  if (!native_input(self)) return OPENNEURON_FALLBACK(min, self);
  OPENNEURON_NATIVE_OP("aten::min");
  return extreme_all("aten::min", GeneralReduceOp::Min, self);
}

at::Tensor& min_all_out(const at::Tensor& self, at::Tensor& out) {
  if (!native_input(self) || !native_input(out))
    return OPENNEURON_FALLBACK(min_unary_out, self, out);
  OPENNEURON_NATIVE_OP("aten::min.unary_out");
  const c10::DeviceGuard guard(self.device());
  const uint32_t mask = mask_of(self, std::nullopt);
  check_nonempty_reduction("min", self, mask);
  prepare_out("min.unary_out", self, out, mask, false, self.scalar_type());
  launch("aten::min", GeneralReduceOp::Min, {}, self, mask, out);
  return out;
}

std::tuple<at::Tensor, at::Tensor> max_dim(const at::Tensor& self, int64_t dim, bool keepdim) {
  if (!native_input(self)) return OPENNEURON_FALLBACK(max_dim, self, dim, keepdim);
  OPENNEURON_NATIVE_OP("aten::max.dim");
  const c10::DeviceGuard guard(self.device());
  const uint32_t mask = mask_of_dim(self, dim);
  at::Tensor values = new_output(self, mask, keepdim, self.scalar_type());
  at::Tensor indices = new_output(self, mask, keepdim, at::kLong);
  extreme_dim_into("aten::max.dim", GeneralReduceOp::Max, self, dim, keepdim, values, indices);
  return {values, indices};
}

std::tuple<at::Tensor&, at::Tensor&> max_dim_out(const at::Tensor& self, int64_t dim, bool keepdim,
                                                 at::Tensor& values, at::Tensor& indices) {
  if (!native_input(self) || !native_input(values)) {
    return OPENNEURON_FALLBACK(max_dim_max, self, dim, keepdim, values, indices);
  }
  OPENNEURON_NATIVE_OP("aten::max.dim_max");
  const c10::DeviceGuard guard(self.device());
  const uint32_t mask = mask_of_dim(self, dim);
  prepare_out("max.dim_max", self, values, mask, keepdim, self.scalar_type());
  prepare_out("max.dim_max", self, indices, mask, keepdim, at::kLong);
  extreme_dim_into("aten::max.dim", GeneralReduceOp::Max, self, dim, keepdim, values, indices);
  return {values, indices};
}

std::tuple<at::Tensor, at::Tensor> min_dim(const at::Tensor& self, int64_t dim, bool keepdim) {
  if (!native_input(self)) return OPENNEURON_FALLBACK(min_dim, self, dim, keepdim);
  OPENNEURON_NATIVE_OP("aten::min.dim");
  const c10::DeviceGuard guard(self.device());
  const uint32_t mask = mask_of_dim(self, dim);
  at::Tensor values = new_output(self, mask, keepdim, self.scalar_type());
  at::Tensor indices = new_output(self, mask, keepdim, at::kLong);
  extreme_dim_into("aten::min.dim", GeneralReduceOp::Min, self, dim, keepdim, values, indices);
  return {values, indices};
}

std::tuple<at::Tensor&, at::Tensor&> min_dim_out(const at::Tensor& self, int64_t dim, bool keepdim,
                                                 at::Tensor& values, at::Tensor& indices) {
  if (!native_input(self) || !native_input(values)) {
    return OPENNEURON_FALLBACK(min_dim_min, self, dim, keepdim, values, indices);
  }
  OPENNEURON_NATIVE_OP("aten::min.dim_min");
  const c10::DeviceGuard guard(self.device());
  const uint32_t mask = mask_of_dim(self, dim);
  prepare_out("min.dim_min", self, values, mask, keepdim, self.scalar_type());
  prepare_out("min.dim_min", self, indices, mask, keepdim, at::kLong);
  extreme_dim_into("aten::min.dim", GeneralReduceOp::Min, self, dim, keepdim, values, indices);
  return {values, indices};
}

namespace {

at::Tensor& amax_amin_into(const char* name, GeneralReduceOp op, const at::Tensor& self,
                           at::IntArrayRef dim, bool keepdim, at::Tensor& out) {
  const c10::DeviceGuard guard(self.device());
  const uint32_t mask = mask_of(self, dim);
  check_nonempty_reduction(op == GeneralReduceOp::Max ? "amax" : "amin", self, mask);
  prepare_out(name, self, out, mask, keepdim, self.scalar_type());
  launch(name, op, {}, self, mask, out);
  return out;
}

at::Tensor& arg_into(const char* name, GeneralReduceOp op, const at::Tensor& self,
                     std::optional<int64_t> dim, bool keepdim, at::Tensor& out) {
  const c10::DeviceGuard guard(self.device());
  TORCH_CHECK(self.scalar_type() != at::kBool, op == GeneralReduceOp::ArgMax ? "argmax" : "argmin",
              "(): does not support bool input");
  // Without a dim the flattened tensor is reduced; keepdim then keeps every dim as size 1.
  const uint32_t mask = dim.has_value() ? mask_of_dim(self, *dim) : mask_of(self, std::nullopt);
  check_nonempty_reduction(op == GeneralReduceOp::ArgMax ? "argmax" : "argmin", self, mask);
  prepare_out(name, self, out, mask, keepdim, at::kLong);
  launch(name, op, {}, self, mask, out);
  return out;
}

}  // namespace

at::Tensor amax(const at::Tensor& self, at::IntArrayRef dim, bool keepdim) {
  if (!native_input(self)) return OPENNEURON_FALLBACK(amax, self, dim, keepdim);
  OPENNEURON_NATIVE_OP("aten::amax");
  at::Tensor out = at::empty({0}, self.options());
  return amax_amin_into("aten::amax", GeneralReduceOp::Max, self, dim, keepdim, out);
}

at::Tensor& amax_out(const at::Tensor& self, at::IntArrayRef dim, bool keepdim, at::Tensor& out) {
  if (!native_input(self) || !native_input(out))
    return OPENNEURON_FALLBACK(amax_out, self, dim, keepdim, out);
  OPENNEURON_NATIVE_OP("aten::amax.out");
  return amax_amin_into("aten::amax", GeneralReduceOp::Max, self, dim, keepdim, out);
}

at::Tensor amin(const at::Tensor& self, at::IntArrayRef dim, bool keepdim) {
  if (!native_input(self)) return OPENNEURON_FALLBACK(amin, self, dim, keepdim);
  OPENNEURON_NATIVE_OP("aten::amin");
  at::Tensor out = at::empty({0}, self.options());
  return amax_amin_into("aten::amin", GeneralReduceOp::Min, self, dim, keepdim, out);
}

at::Tensor& amin_out(const at::Tensor& self, at::IntArrayRef dim, bool keepdim, at::Tensor& out) {
  if (!native_input(self) || !native_input(out))
    return OPENNEURON_FALLBACK(amin_out, self, dim, keepdim, out);
  OPENNEURON_NATIVE_OP("aten::amin.out");
  return amax_amin_into("aten::amin", GeneralReduceOp::Min, self, dim, keepdim, out);
}

at::Tensor argmax(const at::Tensor& self, std::optional<int64_t> dim, bool keepdim) {
  if (!native_input(self)) return OPENNEURON_FALLBACK(argmax, self, dim, keepdim);
  OPENNEURON_NATIVE_OP("aten::argmax");
  at::Tensor out = at::empty({0}, self.options().dtype(at::kLong));
  return arg_into("aten::argmax", GeneralReduceOp::ArgMax, self, dim, keepdim, out);
}

at::Tensor& argmax_out(const at::Tensor& self, std::optional<int64_t> dim, bool keepdim,
                       at::Tensor& out) {
  if (!native_input(self)) return OPENNEURON_FALLBACK(argmax_out, self, dim, keepdim, out);
  OPENNEURON_NATIVE_OP("aten::argmax.out");
  return arg_into("aten::argmax", GeneralReduceOp::ArgMax, self, dim, keepdim, out);
}

at::Tensor argmin(const at::Tensor& self, std::optional<int64_t> dim, bool keepdim) {
  if (!native_input(self)) return OPENNEURON_FALLBACK(argmin, self, dim, keepdim);
  OPENNEURON_NATIVE_OP("aten::argmin");
  at::Tensor out = at::empty({0}, self.options().dtype(at::kLong));
  return arg_into("aten::argmin", GeneralReduceOp::ArgMin, self, dim, keepdim, out);
}

at::Tensor& argmin_out(const at::Tensor& self, std::optional<int64_t> dim, bool keepdim,
                       at::Tensor& out) {
  if (!native_input(self)) return OPENNEURON_FALLBACK(argmin_out, self, dim, keepdim, out);
  OPENNEURON_NATIVE_OP("aten::argmin.out");
  return arg_into("aten::argmin", GeneralReduceOp::ArgMin, self, dim, keepdim, out);
}

// ---- prod ------------------------------------------------------------------------------

namespace {

at::ScalarType prod_result_type(const at::Tensor& self, std::optional<at::ScalarType> dtype) {
  if (dtype) return *dtype;
  return at::isIntegralType(self.scalar_type(), /*includeBool=*/true) ? at::kLong
                                                                      : self.scalar_type();
}

}  // namespace

at::Tensor prod_all(const at::Tensor& self, std::optional<at::ScalarType> dtype) {
  const at::ScalarType result = prod_result_type(self, dtype);
  if (!native_input(self) || !is_native_compute_dtype(result))
    return OPENNEURON_FALLBACK(prod, self, dtype);
  OPENNEURON_NATIVE_OP("aten::prod");
  const c10::DeviceGuard guard(self.device());
  const uint32_t mask = mask_of(self, std::nullopt);
  at::Tensor out = new_output(self, mask, false, result);
  launch("aten::prod", GeneralReduceOp::Prod, {}, self, mask, out);
  return out;
}

at::Tensor prod_dim(const at::Tensor& self, int64_t dim, bool keepdim,
                    std::optional<at::ScalarType> dtype) {
  const at::ScalarType result = prod_result_type(self, dtype);
  if (!native_input(self) || !is_native_compute_dtype(result)) {
    return OPENNEURON_FALLBACK(prod_dim_int, self, dim, keepdim, dtype);
  }
  OPENNEURON_NATIVE_OP("aten::prod.dim_int");
  const c10::DeviceGuard guard(self.device());
  const uint32_t mask = mask_of_dim(self, dim);
  at::Tensor out = new_output(self, mask, keepdim, result);
  launch("aten::prod", GeneralReduceOp::Prod, {}, self, mask, out);
  return out;
}

at::Tensor& prod_dim_out(const at::Tensor& self, int64_t dim, bool keepdim,
                         std::optional<at::ScalarType> dtype, at::Tensor& out) {
  if (!native_input(self) || !native_input(out)) {
    return OPENNEURON_FALLBACK(prod_int_out, self, dim, keepdim, dtype, out);
  }
  OPENNEURON_NATIVE_OP("aten::prod.int_out");
  const c10::DeviceGuard guard(self.device());
  const uint32_t mask = mask_of_dim(self, dim);
  prepare_out("prod.int_out", self, out, mask, keepdim, dtype.value_or(out.scalar_type()));
  launch("aten::prod", GeneralReduceOp::Prod, {}, self, mask, out);
  return out;
}

// ---- norms -----------------------------------------------------------------------------

namespace {

at::Tensor& vector_norm_into(const at::Tensor& self, double ord, at::OptionalIntArrayRef dim,
                             bool keepdim, at::Tensor& out) {
  const c10::DeviceGuard guard(self.device());
  const uint32_t mask = mask_of(self, dim);
  if (ord < 0 || std::isinf(ord)) {
    // Negative and infinite orders have no identity for an empty reduction.
    bool empty_reduction = self.numel() == 0 && self.dim() > 0;
    for (int64_t d = 0; d < self.dim(); ++d) {
      if ((mask & (1u << d)) && self.size(d) == 0) empty_reduction = true;
      if (!(mask & (1u << d)) && self.size(d) == 0) empty_reduction = false;
    }
    TORCH_CHECK(!empty_reduction, "linalg.vector_norm cannot compute the ", ord,
                " norm on an empty tensor because the operation does not have an identity");
  }
  at::native::resize_output(out, reduced_shape(self, mask, keepdim));
  GeneralReduceParams params;
  params.p = ord;
  launch("aten::linalg_vector_norm", GeneralReduceOp::Norm, params, self, mask, out);
  return out;
}

}  // namespace

at::Tensor linalg_vector_norm(const at::Tensor& self, const at::Scalar& ord,
                              at::OptionalIntArrayRef dim, bool keepdim,
                              std::optional<at::ScalarType> dtype) {
  const at::ScalarType result = dtype.value_or(self.scalar_type());
  if (!native_float_input(self) || !is_native_compute_dtype(result) ||
      !at::isFloatingType(result)) {
    return OPENNEURON_FALLBACK(linalg_vector_norm, self, ord, dim, keepdim, dtype);
  }
  OPENNEURON_NATIVE_OP("aten::linalg_vector_norm");
  at::Tensor out = at::empty({0}, self.options().dtype(result));
  return vector_norm_into(self, ord.toDouble(), dim, keepdim, out);
}

at::Tensor& linalg_vector_norm_out(const at::Tensor& self, const at::Scalar& ord,
                                   at::OptionalIntArrayRef dim, bool keepdim,
                                   std::optional<at::ScalarType> dtype, at::Tensor& out) {
  if (!native_float_input(self) || !native_float_input(out)) {
    return OPENNEURON_FALLBACK(linalg_vector_norm_out, self, ord, dim, keepdim, dtype, out);
  }
  OPENNEURON_NATIVE_OP("aten::linalg_vector_norm.out");
  check_same_device("linalg_vector_norm.out", {&self, &out});
  return vector_norm_into(self, ord.toDouble(), dim, keepdim, out);
}

at::Tensor norm_dim(const at::Tensor& self, const std::optional<at::Scalar>& p, at::IntArrayRef dim,
                    bool keepdim) {
  if (!native_float_input(self))
    return OPENNEURON_FALLBACK(norm_ScalarOpt_dim, self, p, dim, keepdim);
  OPENNEURON_NATIVE_OP("aten::norm.ScalarOpt_dim");
  at::Tensor out = at::empty({0}, self.options());
  return vector_norm_into(self, p.has_value() ? p->toDouble() : 2.0, dim, keepdim, out);
}

at::Tensor& norm_dim_out(const at::Tensor& self, const std::optional<at::Scalar>& p,
                         at::IntArrayRef dim, bool keepdim, at::Tensor& out) {
  if (!native_float_input(self) || !native_float_input(out)) {
    return OPENNEURON_FALLBACK(norm_out, self, p, dim, keepdim, out);
  }
  OPENNEURON_NATIVE_OP("aten::norm.out");
  check_same_device("norm.out", {&self, &out});
  return vector_norm_into(self, p.has_value() ? p->toDouble() : 2.0, dim, keepdim, out);
}

// ---- all / any -------------------------------------------------------------------------

namespace {

at::Tensor bool_reduce(const char* name, GeneralReduceOp op, const at::Tensor& self, uint32_t mask,
                       bool keepdim) {
  const c10::DeviceGuard guard(self.device());
  at::Tensor out = new_output(self, mask, keepdim, bool_reduction_dtype(self));
  launch(name, op, {}, self, mask, out);
  return out;
}

at::Tensor& bool_reduce_out(const char* name, GeneralReduceOp op, const at::Tensor& self,
                            uint32_t mask, bool keepdim, at::Tensor& out) {
  const c10::DeviceGuard guard(self.device());
  check_same_device(name, {&self, &out});
  TORCH_CHECK(out.scalar_type() == at::kBool || out.scalar_type() == at::kByte,
              name + 6 /* without "aten::" */,
              " only supports bool tensor for result, got: ", out.scalar_type());
  at::native::resize_output(out, reduced_shape(self, mask, keepdim));
  launch(name, op, {}, self, mask, out);
  return out;
}

// all/any over an explicit empty dim list reduce nothing (unlike sum, where it means every
// dim): each element is tested alone, as on the CPU.
uint32_t bool_reduce_mask(const at::Tensor& self, at::OptionalIntArrayRef dim) {
  return dim.has_value() && dim->empty() ? 0u : mask_of(self, dim);
}

}  // namespace

#define OPENNEURON_BOOL_REDUCTIONS(NAME, OP)                                                       \
  at::Tensor NAME##_all(const at::Tensor& self) {                                                  \
    if (!native_input(self)) return OPENNEURON_FALLBACK(NAME, self);                               \
    OPENNEURON_NATIVE_OP("aten::" #NAME);                                                          \
    return bool_reduce("aten::" #NAME, OP, self, mask_of(self, std::nullopt), false);              \
  }                                                                                                \
  at::Tensor& NAME##_all_out(const at::Tensor& self, at::Tensor& out) {                            \
    if (!native_input(self)) return OPENNEURON_FALLBACK(NAME##_all_out, self, out);                \
    OPENNEURON_NATIVE_OP("aten::" #NAME ".all_out");                                               \
    return bool_reduce_out("aten::" #NAME, OP, self, mask_of(self, std::nullopt), false, out);     \
  }                                                                                                \
  at::Tensor NAME##_dim(const at::Tensor& self, int64_t dim, bool keepdim) {                       \
    if (!native_input(self)) return OPENNEURON_FALLBACK(NAME##_dim, self, dim, keepdim);           \
    OPENNEURON_NATIVE_OP("aten::" #NAME ".dim");                                                   \
    return bool_reduce("aten::" #NAME, OP, self, mask_of_dim(self, dim), keepdim);                 \
  }                                                                                                \
  at::Tensor& NAME##_dim_out(const at::Tensor& self, int64_t dim, bool keepdim, at::Tensor& out) { \
    if (!native_input(self)) return OPENNEURON_FALLBACK(NAME##_out, self, dim, keepdim, out);      \
    OPENNEURON_NATIVE_OP("aten::" #NAME ".out");                                                   \
    return bool_reduce_out("aten::" #NAME, OP, self, mask_of_dim(self, dim), keepdim, out);        \
  }                                                                                                \
  at::Tensor NAME##_dims(const at::Tensor& self, at::OptionalIntArrayRef dim, bool keepdim) {      \
    if (!native_input(self)) return OPENNEURON_FALLBACK(NAME##_dims, self, dim, keepdim);          \
    OPENNEURON_NATIVE_OP("aten::" #NAME ".dims");                                                  \
    return bool_reduce("aten::" #NAME, OP, self, bool_reduce_mask(self, dim), keepdim);            \
  }                                                                                                \
  at::Tensor& NAME##_dims_out(const at::Tensor& self, at::OptionalIntArrayRef dim, bool keepdim,   \
                              at::Tensor& out) {                                                   \
    if (!native_input(self)) return OPENNEURON_FALLBACK(NAME##_dims_out, self, dim, keepdim, out); \
    OPENNEURON_NATIVE_OP("aten::" #NAME ".dims_out");                                              \
    return bool_reduce_out("aten::" #NAME, OP, self, bool_reduce_mask(self, dim), keepdim, out);   \
  }

OPENNEURON_BOOL_REDUCTIONS(all, GeneralReduceOp::All)
OPENNEURON_BOOL_REDUCTIONS(any, GeneralReduceOp::Any)
#undef OPENNEURON_BOOL_REDUCTIONS

// ---- logsumexp -------------------------------------------------------------------------

at::Tensor logsumexp(const at::Tensor& self, at::IntArrayRef dim, bool keepdim) {
  if (native_input(self) && at::isIntegralType(self.scalar_type(), /*includeBool=*/true)) {
    // Integers and bool are promoted to the default float first, as on the CPU.
    return bridge::logsumexp(self.to(c10::typeMetaToScalarType(c10::get_default_dtype())), dim,
                             keepdim);
  }
  if (!native_float_input(self)) return OPENNEURON_FALLBACK(logsumexp, self, dim, keepdim);
  OPENNEURON_NATIVE_OP("aten::logsumexp");
  const c10::DeviceGuard guard(self.device());
  const uint32_t mask = mask_of(self, dim);
  at::Tensor out = new_output(self, mask, keepdim, self.scalar_type());
  launch("aten::logsumexp", GeneralReduceOp::LogSumExp, {}, self, mask, out);
  return out;
}

at::Tensor& logsumexp_out(const at::Tensor& self, at::IntArrayRef dim, bool keepdim,
                          at::Tensor& out) {
  if (native_input(self) && at::isIntegralType(self.scalar_type(), /*includeBool=*/true) &&
      native_float_input(out)) {
    return logsumexp_out(self.to(c10::typeMetaToScalarType(c10::get_default_dtype())), dim, keepdim,
                         out);
  }
  if (!native_float_input(self) || !native_float_input(out)) {
    return OPENNEURON_FALLBACK(logsumexp_out, self, dim, keepdim, out);
  }
  OPENNEURON_NATIVE_OP("aten::logsumexp.out");
  const c10::DeviceGuard guard(self.device());
  const uint32_t mask = mask_of(self, dim);
  check_same_device("logsumexp.out", {&self, &out});
  at::native::resize_output(out, reduced_shape(self, mask, keepdim));
  launch("aten::logsumexp", GeneralReduceOp::LogSumExp, {}, self, mask, out);
  return out;
}

// ---- hash_tensor -----------------------------------------------------------------------

// mode 0: the XOR of the elements' 64-bit patterns (floats widened to float64, integers and bool
// to int64), reduced as int64 into the uint64 result's bits. Other modes, empty tensors (the
// CPU refuses every empty reduction) and other out dtypes go to the host, which raises the
// CPU's errors.
at::Tensor& hash_tensor_out(const at::Tensor& self, at::IntArrayRef dim, bool keepdim, int64_t mode,
                            at::Tensor& out) {
  if (!native_input(self) || mode != 0 || out.scalar_type() != at::kUInt64 || self.numel() == 0) {
    return OPENNEURON_FALLBACK(hash_tensor_out, self, dim, keepdim, mode, out);
  }
  OPENNEURON_NATIVE_OP("aten::hash_tensor.out");
  const c10::DeviceGuard guard(self.device());
  check_same_device("hash_tensor.out", {&self, &out});
  const uint32_t mask = mask_of(self, dim);
  at::native::resize_output(out, reduced_shape(self, mask, keepdim));
  const at::Tensor widened =
      self.to(at::isFloatingType(self.scalar_type()) ? at::kDouble : at::kLong).view(at::kLong);
  launch("aten::hash_tensor", GeneralReduceOp::BitwiseXor, {}, widened, mask, out.view(at::kLong));
  return out;
}

// ---- cumsum / cumprod ------------------------------------------------------------------

namespace {

at::ScalarType scan_result_type(const at::Tensor& self, std::optional<at::ScalarType> dtype) {
  if (dtype) return *dtype;
  return at::isIntegralType(self.scalar_type(), /*includeBool=*/true) ? at::kLong
                                                                      : self.scalar_type();
}

void launch_scan(const char* name, kernels::ScanOp op, const at::Tensor& self, int64_t dim,
                 const at::Tensor& out) {
  if (out.numel() == 0) return;
  const int wrapped = static_cast<int>(at::maybe_wrap_dim(dim, self.dim()));
  const kernels::TensorView out_view = view_of(out);
  const kernels::TensorView in_view = view_of(self);
  stream_for(out).enqueue(name, [=] { kernels::scan(op, out_view, in_view, wrapped); });
}

}  // namespace

#define OPENNEURON_SCANS(NAME, OP)                                                                 \
  at::Tensor NAME(const at::Tensor& self, int64_t dim, std::optional<at::ScalarType> dtype) {      \
    const at::ScalarType result = scan_result_type(self, dtype);                                   \
    if (!native_input(self) || !is_native_compute_dtype(result)) {                                 \
      return OPENNEURON_FALLBACK(NAME, self, dim, dtype);                                          \
    }                                                                                              \
    OPENNEURON_NATIVE_OP("aten::" #NAME);                                                          \
    const c10::DeviceGuard guard(self.device());                                                   \
    at::maybe_wrap_dim(dim, self.dim());                                                           \
    at::Tensor out = at::empty(self.sizes(), self.options().dtype(result));                        \
    launch_scan("aten::" #NAME, OP, self, dim, out);                                               \
    return out;                                                                                    \
  }                                                                                                \
  at::Tensor& NAME##_(at::Tensor& self, int64_t dim, std::optional<at::ScalarType> dtype) {        \
    if (!native_input(self)) return OPENNEURON_FALLBACK(NAME##_, self, dim, dtype);                \
    OPENNEURON_NATIVE_OP("aten::" #NAME "_");                                                      \
    const c10::DeviceGuard guard(self.device());                                                   \
    TORCH_CHECK(!dtype || *dtype == self.scalar_type(), #NAME "_: dtype must match self");         \
    at::maybe_wrap_dim(dim, self.dim());                                                           \
    launch_scan("aten::" #NAME "_", OP, self, dim, self);                                          \
    return self;                                                                                   \
  }                                                                                                \
  at::Tensor& NAME##_out(const at::Tensor& self, int64_t dim, std::optional<at::ScalarType> dtype, \
                         at::Tensor& out) {                                                        \
    if (!native_input(self) || !native_input(out)) {                                               \
      return OPENNEURON_FALLBACK(NAME##_out, self, dim, dtype, out);                               \
    }                                                                                              \
    OPENNEURON_NATIVE_OP("aten::" #NAME ".out");                                                   \
    const c10::DeviceGuard guard(self.device());                                                   \
    check_same_device(#NAME ".out", {&self, &out});                                                \
    at::maybe_wrap_dim(dim, self.dim());                                                           \
    TORCH_CHECK(!dtype || *dtype == out.scalar_type(), #NAME ".out: dtype must match out");        \
    at::native::resize_output(out, self.sizes());                                                  \
    launch_scan("aten::" #NAME, OP, self, dim, out);                                               \
    return out;                                                                                    \
  }

OPENNEURON_SCANS(cumsum, kernels::ScanOp::Sum)
OPENNEURON_SCANS(cumprod, kernels::ScanOp::Prod)
#undef OPENNEURON_SCANS

// logcumsumexp's kernel: floats only, as the CPU's (which accumulates fp32 in double too).
at::Tensor& logcumsumexp_out(const at::Tensor& self, int64_t dim, at::Tensor& out) {
  if (!native_float_input(self) || out.scalar_type() != self.scalar_type()) {
    return OPENNEURON_FALLBACK(_logcumsumexp_out, self, dim, out);
  }
  OPENNEURON_NATIVE_OP("aten::_logcumsumexp.out");
  const c10::DeviceGuard guard(check_same_device("logcumsumexp", {&self, &out}));
  at::maybe_wrap_dim(dim, self.dim());
  at::native::resize_output(out, self.sizes());
  const at::Tensor source = unaliased_input(self, {&out});
  launch_scan("aten::logcumsumexp", kernels::ScanOp::LogSumExp, source, dim, out);
  return out;
}

at::Tensor logcumsumexp(const at::Tensor& self, int64_t dim) {
  if (!native_float_input(self)) return OPENNEURON_FALLBACK(_logcumsumexp, self, dim);
  OPENNEURON_NATIVE_OP("aten::_logcumsumexp");
  at::Tensor out = at::empty(self.sizes(), self.options());
  return logcumsumexp_out(self, dim, out);
}

}  // namespace openneuron::bridge
