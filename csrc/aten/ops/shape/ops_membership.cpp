// torch.isin on the device: generate() asks it at every step whether tokens are stop tokens.
#include <ATen/ExpandUtils.h>
#include <ATen/ScalarOps.h>
#include <ATen/native/Resize.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/isin.h>
#include <ATen/ops/result_type.h>
#include <c10/core/DeviceGuard.h>

#include "aten/core/op_helpers.h"
#include "aten/core/op_tracking.h"
#include "aten/core/tensor_views.h"
#include "aten/fallback/fallback.h"
#include "aten/ops/ops_reduce_index.h"
#include "kernels/shape/membership.h"

namespace openneuron::bridge {

namespace {

// The CPU's and CUDA's refusal, raised at the call.
void check_isin_dtype(at::ScalarType dtype) {
  TORCH_CHECK(dtype != at::kBool && !at::isComplexType(dtype),
              "Unsupported input type encountered for isin(): ", dtype);
}

bool isin_is_native(const at::Tensor& elements, const at::Tensor& test) {
  return is_native_compute_dtype(at::result_type(elements, test)) &&
         elements.dim() <= kernels::kMaxDims && test.dim() <= kernels::kMaxDims;
}

}  // namespace

at::Tensor& isin_out(const at::Tensor& elements, const at::Tensor& test_elements,
                     bool assume_unique, bool invert, at::Tensor& out) {
  check_isin_dtype(elements.scalar_type());
  check_isin_dtype(test_elements.scalar_type());
  if (!isin_is_native(elements, test_elements)) {
    return OPENNEURON_FALLBACK(isin_Tensor_Tensor_out, elements, test_elements, assume_unique,
                               invert, out);
  }
  OPENNEURON_NATIVE_OP("aten::isin.Tensor_Tensor_out");
  const c10::Device device = check_same_device("isin", {&elements, &test_elements, &out});
  const c10::DeviceGuard guard(device);
  TORCH_CHECK(out.scalar_type() == at::kBool, "Expected out tensor to have dtype bool, but got ",
              out.dtype(), " instead");
  at::native::resize_output(out, elements.sizes());
  if (out.numel() == 0) return out;
  // Both sides compared in their promoted dtype, as the CPU compares them.
  const at::ScalarType common = at::result_type(elements, test_elements);
  const at::Tensor lhs = elements.to(device).to(common);
  const at::Tensor rhs = test_elements.to(device).to(common);
  const kernels::TensorView out_view = view_of(out);
  const kernels::TensorView lhs_view = view_of(lhs);
  const kernels::TensorView rhs_view = view_of(rhs);
  stream_for(out).enqueue("aten::isin",
                          [=] { kernels::isin(out_view, lhs_view, rhs_view, invert); });
  return out;
}

at::Tensor isin(const at::Tensor& elements, const at::Tensor& test_elements, bool assume_unique,
                bool invert) {
  at::Tensor out = at::empty({0}, elements.options().dtype(at::kBool));
  return isin_out(elements, test_elements, assume_unique, invert, out);
}

at::Tensor& isin_scalar_out(const at::Tensor& elements, const at::Scalar& test_element,
                            bool assume_unique, bool invert, at::Tensor& out) {
  const at::Tensor test = wrapped_number(test_element);
  return isin_out(elements, test, assume_unique, invert, out);
}

at::Tensor isin_scalar(const at::Tensor& elements, const at::Scalar& test_element,
                       bool assume_unique, bool invert) {
  at::Tensor out = at::empty({0}, elements.options().dtype(at::kBool));
  return isin_scalar_out(elements, test_element, assume_unique, invert, out);
}

at::Tensor& isin_scalar_tensor_out(const at::Scalar& element, const at::Tensor& test_elements,
                                   bool assume_unique, bool invert, at::Tensor& out) {
  const at::Tensor elements = wrapped_number(element);
  return isin_out(elements, test_elements, assume_unique, invert, out);
}

at::Tensor isin_scalar_tensor(const at::Scalar& element, const at::Tensor& test_elements,
                              bool assume_unique, bool invert) {
  const c10::DeviceGuard guard(test_elements.device());
  at::Tensor out = at::empty({0}, test_elements.options().dtype(at::kBool));
  return isin_scalar_tensor_out(element, test_elements, assume_unique, invert, out);
}

}  // namespace openneuron::bridge
