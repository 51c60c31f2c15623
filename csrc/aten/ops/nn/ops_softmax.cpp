// Softmax and log-softmax, forward and backward, on the device.
#include <ATen/WrapDimUtils.h>
#include <ATen/native/Resize.h>
#include <ATen/ops/_log_softmax.h>
#include <ATen/ops/_log_softmax_backward_data.h>
#include <ATen/ops/_softmax.h>
#include <ATen/ops/_softmax_backward_data.h>
#include <ATen/ops/empty.h>
#include <c10/core/DeviceGuard.h>

#include "aten/core/op_helpers.h"
#include "aten/core/op_tracking.h"
#include "aten/core/tensor_views.h"
#include "aten/fallback/fallback.h"
#include "aten/ops/ops.h"
#include "kernels/nn/softmax.h"

namespace openneuron::bridge {

namespace {

bool is_softmax_dtype(at::ScalarType type) {
  return type == at::kFloat || type == at::kBFloat16 || type == at::kHalf;
}

at::ScalarType forward_result_type(const at::Tensor& self, bool half_to_float) {
  TORCH_CHECK(
      !half_to_float || self.scalar_type() == at::kHalf || self.scalar_type() == at::kBFloat16,
      "softmax: half_to_float applies to float16 and bfloat16 inputs only");
  return half_to_float ? at::kFloat : self.scalar_type();
}

void launch_forward(const char* name, const at::Tensor& self, int64_t dim, bool log,
                    const at::Tensor& out) {
  if (out.numel() == 0) return;
  const int wrapped = static_cast<int>(at::maybe_wrap_dim(dim, self.dim()));
  const kernels::TensorView in_view = view_of(self);
  const kernels::TensorView out_view = view_of(out);
  stream_for(out).enqueue(name, [=] { kernels::softmax(out_view, in_view, wrapped, log); });
}

at::Tensor forward(const char* name, const at::Tensor& self, int64_t dim, bool half_to_float,
                   bool log) {
  const c10::DeviceGuard guard(self.device());
  at::Tensor out =
      at::empty(self.sizes(), self.options().dtype(forward_result_type(self, half_to_float)));
  launch_forward(name, self, dim, log, out);
  return out;
}

at::Tensor backward(const char* name, const at::Tensor& grad_output, const at::Tensor& output,
                    int64_t dim, at::ScalarType input_dtype, bool log) {
  const c10::Device device = check_same_device(name, {&grad_output, &output});
  const c10::DeviceGuard guard(device);
  TORCH_CHECK(grad_output.sizes().equals(output.sizes()), name,
              ": grad_output and output shapes differ");
  at::Tensor grad_input = at::empty(output.sizes(), output.options().dtype(input_dtype));
  if (grad_input.numel() == 0) return grad_input;
  const int wrapped = static_cast<int>(at::maybe_wrap_dim(dim, output.dim()));
  const kernels::TensorView grad_in_view = view_of(grad_input);
  const kernels::TensorView grad_out_view = view_of(grad_output);
  const kernels::TensorView out_view = view_of(output);
  stream_for(grad_input).enqueue(name, [=] {
    kernels::softmax_backward(grad_in_view, grad_out_view, out_view, wrapped, log);
  });
  return grad_input;
}

}  // namespace

at::Tensor softmax(const at::Tensor& self, int64_t dim, bool half_to_float) {
  if (!is_softmax_dtype(self.scalar_type())) {
    return OPENNEURON_FALLBACK(_softmax, self, dim, half_to_float);
  }
  OPENNEURON_NATIVE_OP("aten::_softmax");
  return forward("aten::_softmax", self, dim, half_to_float, /*log=*/false);
}

at::Tensor& softmax_out(const at::Tensor& self, int64_t dim, bool half_to_float, at::Tensor& out) {
  if (!is_softmax_dtype(self.scalar_type()) || !is_softmax_dtype(out.scalar_type())) {
    return OPENNEURON_FALLBACK(_softmax_out, self, dim, half_to_float, out);
  }
  OPENNEURON_NATIVE_OP("aten::_softmax.out");
  check_same_device("aten::_softmax.out", {&self, &out});
  const c10::DeviceGuard guard(self.device());
  TORCH_CHECK(out.scalar_type() == forward_result_type(self, half_to_float),
              "_softmax.out: out has dtype ", out.scalar_type());
  at::native::resize_output(out, self.sizes());
  launch_forward("aten::_softmax", self, dim, /*log=*/false, out);
  return out;
}

at::Tensor log_softmax(const at::Tensor& self, int64_t dim, bool half_to_float) {
  if (!is_softmax_dtype(self.scalar_type())) {
    return OPENNEURON_FALLBACK(_log_softmax, self, dim, half_to_float);
  }
  OPENNEURON_NATIVE_OP("aten::_log_softmax");
  return forward("aten::_log_softmax", self, dim, half_to_float, /*log=*/true);
}

at::Tensor& log_softmax_out(const at::Tensor& self, int64_t dim, bool half_to_float,
                            at::Tensor& out) {
  if (!is_softmax_dtype(self.scalar_type()) || !is_softmax_dtype(out.scalar_type())) {
    return OPENNEURON_FALLBACK(_log_softmax_out, self, dim, half_to_float, out);
  }
  OPENNEURON_NATIVE_OP("aten::_log_softmax.out");
  check_same_device("aten::_log_softmax.out", {&self, &out});
  const c10::DeviceGuard guard(self.device());
  TORCH_CHECK(out.scalar_type() == forward_result_type(self, half_to_float),
              "_log_softmax.out: out has dtype ", out.scalar_type());
  at::native::resize_output(out, self.sizes());
  launch_forward("aten::_log_softmax", self, dim, /*log=*/true, out);
  return out;
}

at::Tensor softmax_backward(const at::Tensor& grad_output, const at::Tensor& output, int64_t dim,
                            at::ScalarType input_dtype) {
  if (!is_softmax_dtype(grad_output.scalar_type()) || !is_softmax_dtype(output.scalar_type()) ||
      !is_softmax_dtype(input_dtype)) {
    return OPENNEURON_FALLBACK(_softmax_backward_data, grad_output, output, dim, input_dtype);
  }
  OPENNEURON_NATIVE_OP("aten::_softmax_backward_data");
  return backward("aten::_softmax_backward_data", grad_output, output, dim, input_dtype, false);
}

at::Tensor log_softmax_backward(const at::Tensor& grad_output, const at::Tensor& output,
                                int64_t dim, at::ScalarType input_dtype) {
  if (!is_softmax_dtype(grad_output.scalar_type()) || !is_softmax_dtype(output.scalar_type()) ||
      !is_softmax_dtype(input_dtype)) {
    return OPENNEURON_FALLBACK(_log_softmax_backward_data, grad_output, output, dim, input_dtype);
  }
  OPENNEURON_NATIVE_OP("aten::_log_softmax_backward_data");
  return backward("aten::_log_softmax_backward_data", grad_output, output, dim, input_dtype, true);
}

}  // namespace openneuron::bridge
