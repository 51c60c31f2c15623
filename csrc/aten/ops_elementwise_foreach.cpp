// The boxed _foreach_* kernel: checks and allocates per tensor on the host, then queues ONE task
// that runs the pointwise kernel over the whole list (the point of foreach: one launch).
#include <c10/core/DeviceGuard.h>

#include <array>
#include <vector>

#include "aten/fallback.h"
#include "aten/op_helpers.h"
#include "aten/ops_elementwise_common.h"
#include "aten/ops_elementwise_pointwise.h"
#include "kernels/runtime/parallel_views.h"

namespace openneuron::bridge {

using namespace elementwise;

namespace {

struct ForeachJob {
  kernels::TensorView out;
  std::vector<Operand> inputs;
  kernels::DType compute;
  kernels::PointwiseParams params;
};

}  // namespace

ForeachKernel::ForeachKernel(ForeachSpec spec, const std::string& op_name)
    : spec_(spec), name_("aten::" + op_name), counter_(new NativeOpCounter(name_.c_str())) {}

void ForeachKernel::operator()(const c10::OperatorHandle& op, c10::DispatchKeySet,
                               torch::jit::Stack* stack) {
  const auto& schema = op.schema();
  const size_t num_args = schema.arguments().size();
  const bool in_place = schema.name().back() == '_';
  auto args = torch::jit::last(*stack, num_args);

  std::vector<std::vector<at::Tensor>> lists;
  const c10::IValue* extra = nullptr;
  std::vector<const c10::IValue*> trailing;  // alpha
  for (size_t pos = 0; pos < num_args; ++pos) {
    const c10::IValue& value = args[pos];
    if (value.isTensorList()) {
      lists.push_back(value.toTensorVector());
    } else if (!extra && schema.arguments()[pos].name() != "alpha") {
      extra = &value;
    } else {
      trailing.push_back(&value);
    }
  }
  const std::vector<at::Tensor>& self = lists.front();
  const size_t count = self.size();
  for (const auto& list : lists) {
    TORCH_CHECK(list.size() == count, "Tensor lists must have the same number of tensors, got ",
                count, " and ", list.size());
  }
  if (extra && extra->isList()) {
    TORCH_CHECK(extra->toListRef().size() == count,
                "Tensor list must have same number of elements as scalar list.");
  }

  bool native = true;
  for (const auto& list : lists) {
    for (const at::Tensor& t : list) native = native && is_native_compute_dtype(t.scalar_type());
  }
  if (extra && extra->isTensor()) {
    const at::Tensor& t = extra->toTensor();
    native = native && (t.dim() == 0) && (t.is_privateuseone() || t.is_cpu()) &&
             (is_native_compute_dtype(t.scalar_type()) || t.is_cpu());
  }
  if (!native) {
    host_fallback(op, stack);
    return;
  }

  // tensor ** host scalar takes pow's exponent-parameter kernel (exact paths for x**2, x**3,
  // x**0.5, ...), as pow does, so _foreach_pow equals pow per tensor as on the CPU.
  const bool pow_scalar = spec_.op == kernels::PointwiseOp::Pow && extra && !extra->isTensor();
  std::vector<at::Tensor> results;
  std::vector<ForeachJob> jobs;
  jobs.reserve(count);
  if (count > 0) {
    const c10::DeviceGuard guard(self.front().device());
    counter_->hit();
    for (size_t i = 0; i < count; ++i) {
      std::vector<at::Tensor> operands;
      for (const auto& list : lists) operands.push_back(list[i]);
      kernels::PointwiseParams params;
      int num_params = 0;
      if (extra) {
        c10::IValue item = extra->isList() ? extra->toListRef()[i] : *extra;
        if (pow_scalar) {
          TORCH_CHECK(
              !(at::isIntegralType(self[i].scalar_type(), true) && item.toScalar().toDouble() < 0),
              "Integers to negative integer powers are not allowed.");
          params.values[num_params] =
              kernel_scalar(rounded_to(item.toScalar(), self[i].scalar_type()));
          params.present[num_params] = true;
          ++num_params;
        } else if (spec_.extra_is_operand) {
          operands.push_back(item.isTensor() ? item.toTensor() : wrap_scalar(item.toScalar()));
        } else {
          params.values[num_params] = scalar_param(item, &params.present[num_params]);
          ++num_params;
        }
      }
      for (const c10::IValue* value : trailing) {
        if (num_params == 4) break;
        params.values[num_params] = scalar_param(*value, &params.present[num_params]);
        ++num_params;
      }
      at::native::ResultTypeState state{};
      for (const at::Tensor& t : operands) state = at::native::update_result_type_state(t, state);
      const at::ScalarType promoted = at::native::result_type(state);
      const at::ScalarType result = result_dtype(spec_.result, promoted, self[i].scalar_type());
      const at::ScalarType compute = compute_dtype(spec_.result, promoted, result);
      // As add and sub do on the CPU: a 16-bit result rounds host scalars and alpha to its
      // dtype first, then computes in fp32 and rounds once.
      const bool rounds_scalars = (spec_.op == kernels::PointwiseOp::AddAlpha ||
                                   spec_.op == kernels::PointwiseOp::SubAlpha) &&
                                  is_16bit_float(result);
      if (rounds_scalars) {
        for (int k = 0; k < num_params; ++k) {
          if (params.present[k] && !params.values[k].is_integral) {
            params.values[k] = kernel_scalar(rounded_to(at::Scalar(params.values[k].f), result));
          }
        }
      }
      const c10::Device device = check_operand_devices(name_.c_str(), operands, at::Tensor());
      at::Tensor out;
      if (in_place) {
        out = self[i];
        TORCH_CHECK(at::canCast(result, out.scalar_type()), "result type ", result,
                    " can't be cast to the desired output type ", out.scalar_type());
      } else {
        out = at::empty(self[i].sizes(), at::TensorOptions().dtype(result).device(device));
        results.push_back(out);
      }
      if (out.numel() == 0) continue;
      ForeachJob job{view_of(out), {}, kernel_dtype(compute), params};
      for (const at::Tensor& t : operands)
        job.inputs.emplace_back(t, out.sizes(),
                                rounds_scalars ? result : host_scalar_dtype(compute));
      jobs.push_back(std::move(job));
    }
    const kernels::PointwiseOp kernel_op = pow_scalar ? kernels::PointwiseOp::PowScalar : spec_.op;
    stream_for(self.front()).enqueue(name_.c_str(), [kernel_op, jobs = std::move(jobs)]() mutable {
      const auto run = [&](ForeachJob& job) {
        std::array<kernels::TensorView, 3> views;
        for (size_t k = 0; k < job.inputs.size(); ++k) views[k] = job.inputs[k].bind();
        kernels::pointwise(kernel_op, job.out, views.data(), static_cast<int>(job.inputs.size()),
                           job.compute, job.params);
      };
      // Large tensors use every kernel thread each; small ones (most of a model's parameters)
      // would each run on one thread, so they run side by side instead.
      std::vector<ForeachJob*> small;
      int64_t small_elements = 0;
      for (ForeachJob& job : jobs) {
        if (job.out.numel() >= 2 * kernels::kParallelGrainElements) {
          run(job);
        } else {
          small.push_back(&job);
          small_elements += job.out.numel();
        }
      }
      const auto run_range = [&](int64_t begin, int64_t end) {
        for (int64_t i = begin; i < end; ++i) run(*small[i]);
      };
      const auto count = static_cast<int64_t>(small.size());
      if (small_elements < 2 * kernels::kParallelGrainElements) {
        run_range(0, count);  // costs less than waking another thread
      } else {
        kernels::parallel_for(0, count, 1, run_range);
      }
    });
  }
  torch::jit::drop(*stack, num_args);
  if (!in_place) torch::jit::push(*stack, c10::IValue(results));
}

}  // namespace openneuron::bridge
