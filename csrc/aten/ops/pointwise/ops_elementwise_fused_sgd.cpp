// torch.optim's fused SGD step: one queued task updates every parameter of the group.
#include <ATen/ops/_fused_sgd.h>
#include <c10/core/DeviceGuard.h>

#include <vector>

#include "aten/core/op_helpers.h"
#include "aten/core/op_tracking.h"
#include "aten/core/tensor_views.h"
#include "aten/fallback/fallback.h"
#include "aten/ops/pointwise/ops_elementwise_pointwise.h"
#include "kernels/nn/fused_sgd.h"

namespace openneuron::bridge {

namespace {

struct SgdJob {
  kernels::TensorView param, grad, momentum_buffer;
};

}  // namespace

void fused_sgd_(at::TensorList self, at::TensorList grads, at::TensorList momentum_buffer_list,
                double weight_decay, double momentum, double lr, double dampening, bool nesterov,
                bool maximize, bool is_first_step, const std::optional<at::Tensor>& grad_scale,
                const std::optional<at::Tensor>& found_inf) {
  if (!fused_optimizer_is_native({self, grads, momentum_buffer_list}, grad_scale, found_inf, {})) {
    return OPENNEURON_FALLBACK(_fused_sgd_, self, grads, momentum_buffer_list, weight_decay,
                               momentum, lr, dampening, nesterov, maximize, is_first_step,
                               grad_scale, found_inf);
  }
  constexpr const char* kName = "aten::_fused_sgd_";
  OPENNEURON_NATIVE_OP(kName);
  const size_t count = self.size();
  const bool has_momentum = momentum != 0.0;
  TORCH_CHECK(grads.size() == count, kName, ": tensor lists must have the same length");
  TORCH_CHECK(!has_momentum || momentum_buffer_list.size() == count, kName,
              ": expected as many momentum buffers as parameters");
  if (count == 0) return;
  const c10::DeviceGuard guard(self[0].device());
  std::vector<SgdJob> jobs;
  for (size_t i = 0; i < count; ++i) {
    TORCH_CHECK(grads[i].sizes().equals(self[i].sizes()), kName,
                ": shapes of param and grad differ");
    (void)check_same_device(kName, {&self[i], &grads[i]});
    // The CPU's and CUDA's fused steps read every tensor of a parameter in its dtype.
    TORCH_CHECK(grads[i].scalar_type() == self[i].scalar_type(), "expected scalar type ",
                self[i].scalar_type(), " but found ", grads[i].scalar_type());
    if (has_momentum) {
      TORCH_CHECK(momentum_buffer_list[i].sizes().equals(self[i].sizes()), kName,
                  ": shapes of param and momentum buffer differ");
      (void)check_same_device(kName, {&self[i], &momentum_buffer_list[i]});
      TORCH_CHECK(momentum_buffer_list[i].scalar_type() == self[i].scalar_type(),
                  "expected scalar type ", self[i].scalar_type(), " but found ",
                  momentum_buffer_list[i].scalar_type());
    }
    if (self[i].numel() == 0) continue;
    SgdJob job;
    job.param = view_of(self[i]);
    job.grad = view_of(grads[i]);
    job.momentum_buffer = has_momentum ? view_of(momentum_buffer_list[i]) : job.param;
    jobs.push_back(job);
  }
  kernels::SgdHyperparameters hyper;
  hyper.lr = lr;
  hyper.weight_decay = weight_decay;
  hyper.momentum = momentum;
  hyper.dampening = dampening;
  hyper.nesterov = nesterov;
  hyper.maximize = maximize;
  hyper.is_first_step = is_first_step;
  const float* scale = grad_scale.has_value() ? grad_scale->const_data_ptr<float>() : nullptr;
  const float* inf = found_inf.has_value() ? found_inf->const_data_ptr<float>() : nullptr;
  stream_for(self[0]).enqueue(kName, [jobs = std::move(jobs), hyper, scale, inf] {
    if (inf && *inf == 1.0f) return;  // the grad scaler found inf/NaN: skip the step
    for (const SgdJob& job : jobs) {
      kernels::fused_sgd(job.param, job.grad, job.momentum_buffer, hyper, scale);
    }
  });
}

}  // namespace openneuron::bridge
