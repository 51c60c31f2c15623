// The boxed _foreach_* kernel: checks and allocates per tensor on the host, then queues ONE task
// that runs the pointwise kernel over the whole list (the point of foreach: one launch).
#include <c10/core/DeviceGuard.h>

#include <array>
#include <vector>

#include "aten/core/op_helpers.h"
#include "aten/fallback/fallback.h"
#include "aten/ops/pointwise/ops_elementwise_common.h"
#include "aten/ops/pointwise/ops_elementwise_pointwise.h"
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

// One list position's call, planned and checked on the host before anything is queued.
struct ForeachItem {
  std::vector<at::Tensor> operands;
  kernels::PointwiseParams params;
  at::ScalarType result;
  at::ScalarType compute;
  bool rounds_scalars;
  at::DimVector shape;  // the operands' broadcast shape
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
  TORCH_CHECK(count > 0, "Tensor list must have at least one tensor.");
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
  const bool with_alpha =
      spec_.op == kernels::PointwiseOp::AddAlpha || spec_.op == kernels::PointwiseOp::SubAlpha;
  // _foreach_maximum_/minimum_/clamp_* by scalars are clamp_min_/clamp_max_ per tensor.
  const bool clamps_by_scalars =
      extra && !extra->isTensor() &&
      (spec_.op == kernels::PointwiseOp::Maximum || spec_.op == kernels::PointwiseOp::Minimum ||
       spec_.op == kernels::PointwiseOp::ClampMin || spec_.op == kernels::PointwiseOp::ClampMax);
  // The CPU clamps numbers only (maximum of two bool tensors is fine, of a bool and a scalar not).
  const uint8_t allowed_dtypes = clamps_by_scalars ? (spec_.dtypes & kNumbers) : spec_.dtypes;
  std::vector<ForeachItem> items;
  items.reserve(count);
  for (size_t i = 0; i < count; ++i) {
    ForeachItem item;
    std::vector<at::Tensor>& operands = item.operands;
    for (const auto& list : lists) operands.push_back(list[i]);
    kernels::PointwiseParams& params = item.params;
    int num_params = 0;
    bool complex_param = false;  // complex math runs on the host
    at::native::ResultTypeState state{};
    std::optional<at::Scalar> exponent;
    if (extra) {
      c10::IValue value = extra->isList() ? extra->toListRef()[i] : *extra;
      if (pow_scalar) {
        // The exponent is a parameter of the kernel but promotes as pow's scalar operand does
        // (an integer tensor ** 0.5 is a float tensor).
        exponent = value.toScalar();
        state = at::native::update_result_type_state(wrap_scalar(*exponent), state);
        ++num_params;
      } else if (spec_.extra_is_operand) {
        operands.push_back(value.isTensor() ? value.toTensor() : wrap_scalar(value.toScalar()));
      } else if (value.isComplexDouble()) {
        complex_param = true;
      } else {
        params.values[num_params] = scalar_param(value, &params.present[num_params]);
        ++num_params;
      }
    }
    for (const c10::IValue* value : trailing) {
      if (num_params == 4) break;
      if (value->isComplexDouble()) {
        complex_param = true;
        continue;
      }
      params.values[num_params] = scalar_param(*value, &params.present[num_params]);
      ++num_params;
    }
    for (const at::Tensor& t : operands) state = at::native::update_result_type_state(t, state);
    const at::ScalarType promoted = at::native::result_type(state);
    item.result = result_dtype(spec_.result, promoted, self[i].scalar_type());
    item.compute = compute_dtype(spec_.result, promoted, item.result);

    // The checks the per-tensor op makes before it computes, in its order.
    if (spec_.op == kernels::PointwiseOp::SubAlpha) {
      check_subtraction_dtypes(operands[0].scalar_type(), operands[1].scalar_type());
    }
    if (with_alpha && !trailing.empty()) check_alpha(item.result, trailing.front()->toScalar());
    if (spec_.op == kernels::PointwiseOp::Addcdiv) check_addcdiv_dtypes(operands[1], operands[2]);
    if (spec_.op == kernels::PointwiseOp::Lerp || spec_.op == kernels::PointwiseOp::LerpScalar) {
      check_lerp_dtypes(operands[0], operands[1], operands.size() > 2 ? &operands[2] : nullptr);
    }
    if (complex_param || !is_native_compute_dtype(item.result) ||
        !is_native_compute_dtype(item.compute) || !dtype_allowed(allowed_dtypes, item.compute)) {
      // Nothing is queued yet: the host runs the whole list (and raises the CPU's errors for
      // dtypes the op refuses).
      host_fallback(op, stack);
      return;
    }
    if (exponent) {
      TORCH_CHECK(!(at::isIntegralType(item.compute, true) && exponent->toDouble() < 0),
                  "Integers to negative integer powers are not allowed.");
      params.values[0] = kernel_scalar(rounded_to(*exponent, item.result));
      params.present[0] = true;
    }
    // As add and sub do on the CPU: a 16-bit result rounds host scalars and alpha to its
    // dtype first, then computes in fp32 and rounds once.
    item.rounds_scalars = (spec_.op == kernels::PointwiseOp::AddAlpha ||
                           spec_.op == kernels::PointwiseOp::SubAlpha) &&
                          is_16bit_float(item.result);
    if (item.rounds_scalars) {
      for (int k = 0; k < num_params; ++k) {
        if (params.present[k] && !params.values[k].is_integral) {
          params.values[k] = kernel_scalar(rounded_to(at::Scalar(params.values[k].f), item.result));
        }
      }
    }
    // Operands broadcast as the per-tensor op's do; an in-place self must hold the result.
    item.shape = at::DimVector(operands.front().sizes());
    for (size_t k = 1; k < operands.size(); ++k) {
      item.shape = at::infer_size_dimvector(item.shape, operands[k].sizes());
    }
    (void)check_operand_devices(name_.c_str(), operands, at::Tensor());
    if (in_place) {
      check_result_fits_self(item.result, self[i], clamps_by_scalars);
      TORCH_CHECK(self[i].sizes().equals(item.shape), "output with shape ", self[i].sizes(),
                  " doesn't match the broadcast shape ", c10::IntArrayRef(item.shape));
    }
    items.push_back(std::move(item));
  }

  std::vector<at::Tensor> results;
  if (count > 0) {
    const c10::DeviceGuard guard(self.front().device());
    counter_->hit();
    std::vector<ForeachJob> jobs;
    jobs.reserve(count);
    for (size_t i = 0; i < count; ++i) {
      ForeachItem& item = items[i];
      at::Tensor out = self[i];
      if (!in_place) {
        out =
            at::empty(item.shape, at::TensorOptions().dtype(item.result).device(self[i].device()));
        results.push_back(out);
      }
      if (out.numel() == 0) continue;
      ForeachJob job{view_of(out), {}, kernel_dtype(item.compute), item.params};
      const at::ScalarType host_dtype =
          item.rounds_scalars ? item.result : host_scalar_dtype(item.compute);
      for (const at::Tensor& t : item.operands) job.inputs.emplace_back(t, out.sizes(), host_dtype);
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
