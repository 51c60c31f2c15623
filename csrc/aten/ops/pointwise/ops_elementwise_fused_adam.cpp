// torch.optim's fused Adam/AdamW step: one queued task updates every parameter of the group.
#include <ATen/ops/_fused_adam.h>
#include <ATen/ops/_fused_adamw.h>
#include <c10/core/DeviceGuard.h>

#include "aten/core/op_helpers.h"
#include "aten/core/op_tracking.h"
#include "aten/core/tensor_views.h"
#include "aten/fallback/fallback.h"
#include "aten/ops/pointwise/ops_elementwise_pointwise.h"
#include "kernels/nn/fused_adam.h"

namespace openneuron::bridge {

namespace {

struct AdamJob {
  kernels::TensorView param, grad, exp_avg, exp_avg_sq, max_exp_avg_sq;
  const float* step;  // device memory, read when the task runs (after the step increment)
};

void run_fused_adam(const char* name, bool decoupled, at::TensorList self, at::TensorList grads,
                    at::TensorList exp_avgs, at::TensorList exp_avg_sqs,
                    at::TensorList max_exp_avg_sqs, at::TensorList state_steps, double lr,
                    double beta1, double beta2, double weight_decay, double eps, bool amsgrad,
                    bool maximize, const std::optional<at::Tensor>& grad_scale,
                    const std::optional<at::Tensor>& found_inf) {
  const size_t count = self.size();
  TORCH_CHECK(grads.size() == count && exp_avgs.size() == count && exp_avg_sqs.size() == count &&
                  state_steps.size() == count && (!amsgrad || max_exp_avg_sqs.size() == count),
              name, ": tensor lists must have the same length");
  if (count == 0) return;
  const c10::DeviceGuard guard(self[0].device());
  std::vector<AdamJob> jobs;
  for (size_t i = 0; i < count; ++i) {
    for (const at::Tensor* t : {&grads[i], &exp_avgs[i], &exp_avg_sqs[i]}) {
      TORCH_CHECK(t->sizes().equals(self[i].sizes()), name, ": shapes of param and state differ");
      (void)check_same_device(name, {&self[i], t});
      // The CPU's and CUDA's fused steps read every tensor of a parameter in its dtype.
      TORCH_CHECK(t->scalar_type() == self[i].scalar_type(), "expected scalar type ",
                  self[i].scalar_type(), " but found ", t->scalar_type());
    }
    if (self[i].numel() == 0) continue;
    AdamJob job;
    job.param = view_of(self[i]);
    job.grad = view_of(grads[i]);
    job.exp_avg = view_of(exp_avgs[i]);
    job.exp_avg_sq = view_of(exp_avg_sqs[i]);
    job.max_exp_avg_sq = amsgrad ? view_of(max_exp_avg_sqs[i]) : job.exp_avg_sq;
    job.step = static_cast<const float*>(state_steps[i].data_ptr());
    jobs.push_back(job);
  }
  kernels::AdamHyperparameters hyper;
  hyper.lr = lr;
  hyper.beta1 = beta1;
  hyper.beta2 = beta2;
  hyper.weight_decay = weight_decay;
  hyper.eps = eps;
  hyper.amsgrad = amsgrad;
  hyper.maximize = maximize;
  hyper.decoupled_weight_decay = decoupled;
  const float* scale = grad_scale.has_value() ? grad_scale->const_data_ptr<float>() : nullptr;
  const float* inf = found_inf.has_value() ? found_inf->const_data_ptr<float>() : nullptr;
  stream_for(self[0]).enqueue(name, [jobs = std::move(jobs), hyper, scale, inf] {
    if (inf && *inf == 1.0f) return;  // the grad scaler found inf/NaN: skip the step
    for (const AdamJob& job : jobs) {
      kernels::fused_adam(job.param, job.grad, job.exp_avg, job.exp_avg_sq, job.max_exp_avg_sq,
                          static_cast<double>(*job.step), hyper, scale);
    }
  });
}

}  // namespace

bool fused_optimizer_is_native(std::initializer_list<at::TensorList> lists,
                               const std::optional<at::Tensor>& grad_scale,
                               const std::optional<at::Tensor>& found_inf, at::TensorList steps) {
  for (at::TensorList list : lists) {
    for (const at::Tensor& t : list) {
      if (!at::isFloatingType(t.scalar_type()) || !is_native_compute_dtype(t.scalar_type()) ||
          !t.is_privateuseone()) {
        return false;
      }
    }
  }
  for (const at::Tensor& t : steps) {
    if (t.scalar_type() != at::kFloat || !t.is_privateuseone()) return false;
  }
  for (const auto* t : {&grad_scale, &found_inf}) {
    if (t->has_value() && ((*t)->scalar_type() != at::kFloat || !(*t)->is_privateuseone()))
      return false;
  }
  return true;
}

void fused_adam_(at::TensorList self, at::TensorList grads, at::TensorList exp_avgs,
                 at::TensorList exp_avg_sqs, at::TensorList max_exp_avg_sqs,
                 at::TensorList state_steps, double lr, double beta1, double beta2,
                 double weight_decay, double eps, bool amsgrad, bool maximize,
                 const std::optional<at::Tensor>& grad_scale,
                 const std::optional<at::Tensor>& found_inf) {
  if (!fused_optimizer_is_native(
          {self, grads, exp_avgs, exp_avg_sqs, amsgrad ? max_exp_avg_sqs : at::TensorList()},
          grad_scale, found_inf, state_steps)) {
    return OPENNEURON_FALLBACK(_fused_adam_, self, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs,
                               state_steps, lr, beta1, beta2, weight_decay, eps, amsgrad, maximize,
                               grad_scale, found_inf);
  }
  OPENNEURON_NATIVE_OP("aten::_fused_adam_");
  run_fused_adam("aten::_fused_adam_", false, self, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs,
                 state_steps, lr, beta1, beta2, weight_decay, eps, amsgrad, maximize, grad_scale,
                 found_inf);
}

void fused_adamw_(at::TensorList self, at::TensorList grads, at::TensorList exp_avgs,
                  at::TensorList exp_avg_sqs, at::TensorList max_exp_avg_sqs,
                  at::TensorList state_steps, double lr, double beta1, double beta2,
                  double weight_decay, double eps, bool amsgrad, bool maximize,
                  const std::optional<at::Tensor>& grad_scale,
                  const std::optional<at::Tensor>& found_inf) {
  if (!fused_optimizer_is_native(
          {self, grads, exp_avgs, exp_avg_sqs, amsgrad ? max_exp_avg_sqs : at::TensorList()},
          grad_scale, found_inf, state_steps)) {
    return OPENNEURON_FALLBACK(_fused_adamw_, self, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs,
                               state_steps, lr, beta1, beta2, weight_decay, eps, amsgrad, maximize,
                               grad_scale, found_inf);
  }
  OPENNEURON_NATIVE_OP("aten::_fused_adamw_");
  run_fused_adam("aten::_fused_adamw_", true, self, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs,
                 state_steps, lr, beta1, beta2, weight_decay, eps, amsgrad, maximize, grad_scale,
                 found_inf);
}

}  // namespace openneuron::bridge
