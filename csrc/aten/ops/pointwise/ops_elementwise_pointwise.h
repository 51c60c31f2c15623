// A boxed kernel that implements any pointwise ATen op (functional, in-place and out=) from a
// one-line PointwiseSpec: the registration table in register_elementwise.cpp is the op list.
#pragma once

#include <ATen/core/dispatch/Dispatcher.h>
#include <c10/util/SmallVector.h>

#include <cstdint>
#include <string>
#include <vector>

#include "aten/core/op_tracking.h"
#include "kernels/pointwise/pointwise.h"

namespace openneuron::bridge {

// How an op's result dtype follows from the promoted dtype of its operands.
enum class ResultRule : uint8_t {
  Common,        // the promoted dtype (add, maximum, where)
  FloatPromote,  // the promoted dtype, integers and bool becoming the default float (exp, div)
  Bool,          // bool (comparisons, isnan)
  Self,          // operand 0's dtype (masked_fill)
};

// Which promoted dtypes the device computes the op for; others go to the host fallback,
// which raises PyTorch's own error for unsupported dtypes.
enum DtypeClass : uint8_t { kFloats = 1, kIntegers = 2, kBool = 4, kAllTypes = 7, kNumbers = 3 };

// Which out= dtypes an op accepts besides its result dtype, as its TensorIterator is set up.
// An in-place self is always held to castability (the result must cast to it safely).
enum class OutDtype : uint8_t {
  Castable,  // any dtype the result casts to safely (add, exp, comparisons, clamp by tensors)
  Exact,     // only the result dtype (abs, floor, activations, clamp by scalars, lerp by tensor)
};

struct PointwiseSpec {
  kernels::PointwiseOp op;
  ResultRule result = ResultRule::Common;
  uint8_t dtypes = kAllTypes;
  // Schema positions of the operands (Tensor or Scalar); every other non-out argument is a
  // scalar parameter, in order (None -> absent, str -> 1 for "tanh"/"floor", 2 for "trunc").
  std::vector<int> operand_args = {0};
  // Bit k set: operand k takes part in type promotion (all by default).
  uint32_t promote_mask = ~0u;
  OutDtype out_dtype = OutDtype::Castable;
};

// The kernel call a pointwise op makes for `args` (its schema's arguments): the op, the result
// and compute dtypes, scalar parameters and the operands (Python scalars wrapped as 0-dim CPU
// tensors; operand_args[k] is operand k's argument position, -1 for a wrapped scalar). False
// when the op runs on the host fallback. Raises the op's own argument errors. Only dtypes,
// ranks and devices of tensor arguments are read, so the compiler plans with empty stand-ins.
struct PointwisePlan {
  kernels::PointwiseOp op;
  at::ScalarType result;
  at::ScalarType compute;
  kernels::PointwiseParams params;
  // At most three operands; inline storage keeps planning free of heap allocations.
  c10::SmallVector<at::Tensor, 3> operands;
  c10::SmallVector<int, 3> operand_args;
};
bool plan_pointwise(const PointwiseSpec& spec, const c10::FunctionSchema& schema,
                    c10::ArrayRef<c10::IValue> args, PointwisePlan* plan);

// The same for the arithmetic ops with typed kernels (add/sub/mul/div.Tensor, relu,
// threshold_backward); false for other names or when the op runs on the host.
bool plan_typed_elementwise(const std::string& overload_name, c10::ArrayRef<c10::IValue> args,
                            PointwisePlan* plan);

// The spec registered for an aten overload ("add.Tensor", "exp"), or null.
const PointwiseSpec* find_pointwise_spec(const std::string& overload_name);
void register_pointwise_spec(const std::string& overload_name, const PointwiseSpec& spec);

class PointwiseKernel final : public c10::OperatorKernel {
 public:
  PointwiseKernel(PointwiseSpec spec, const std::string& op_name);
  void operator()(const c10::OperatorHandle& op, c10::DispatchKeySet keys,
                  torch::jit::Stack* stack);

 private:
  // Queues (or records, in adaptive eager) the planned kernel writing `out`.
  void launch(const PointwisePlan& plan, const at::Tensor& out);

  PointwiseSpec spec_;
  std::string name_;
  NativeOpCounter* counter_;  // lives for the process, like every native op counter
};

// Boxed kernel for the _foreach_* ops: one queued task loops over the whole tensor list. Every
// tensor is checked as the op's per-tensor form checks it (broadcast shapes, result dtype,
// castability into an in-place self, dtypes the op refuses) before anything is queued; a list
// that needs a dtype the device does not compute runs whole on the host fallback.
struct ForeachSpec {
  kernels::PointwiseOp op;
  ResultRule result = ResultRule::Common;
  bool extra_is_operand = true;  // the Scalar/Scalar[]/Tensor after the lists: operand or param
  uint8_t dtypes = kAllTypes;    // compute dtypes run natively (as PointwiseSpec::dtypes)
};

class ForeachKernel final : public c10::OperatorKernel {
 public:
  ForeachKernel(ForeachSpec spec, const std::string& op_name);
  void operator()(const c10::OperatorHandle& op, c10::DispatchKeySet keys,
                  torch::jit::Stack* stack);

 private:
  ForeachSpec spec_;
  std::string name_;
  NativeOpCounter* counter_;
};

// zero_ (ops_elementwise_zero.cpp).
at::Tensor& zero_(at::Tensor& self);

// torch's _fused_adam_ / _fused_adamw_ (ops_elementwise_fused_adam.cpp).
void fused_adam_(at::TensorList self, at::TensorList grads, at::TensorList exp_avgs,
                 at::TensorList exp_avg_sqs, at::TensorList max_exp_avg_sqs,
                 at::TensorList state_steps, double lr, double beta1, double beta2,
                 double weight_decay, double eps, bool amsgrad, bool maximize,
                 const std::optional<at::Tensor>& grad_scale,
                 const std::optional<at::Tensor>& found_inf);
void fused_adamw_(at::TensorList self, at::TensorList grads, at::TensorList exp_avgs,
                  at::TensorList exp_avg_sqs, at::TensorList max_exp_avg_sqs,
                  at::TensorList state_steps, double lr, double beta1, double beta2,
                  double weight_decay, double eps, bool amsgrad, bool maximize,
                  const std::optional<at::Tensor>& grad_scale,
                  const std::optional<at::Tensor>& found_inf);

// torch's _fused_sgd_ (ops_elementwise_fused_sgd.cpp).
void fused_sgd_(at::TensorList self, at::TensorList grads, at::TensorList momentum_buffer_list,
                double weight_decay, double momentum, double lr, double dampening, bool nesterov,
                bool maximize, bool is_first_step, const std::optional<at::Tensor>& grad_scale,
                const std::optional<at::Tensor>& found_inf);

// True when a fused optimizer step can run natively: every tensor of `lists` is a neuron
// tensor of a native floating dtype, every step count and grad_scale/found_inf a neuron fp32
// tensor (ops_elementwise_fused_adam.cpp).
bool fused_optimizer_is_native(std::initializer_list<at::TensorList> lists,
                               const std::optional<at::Tensor>& grad_scale,
                               const std::optional<at::Tensor>& found_inf, at::TensorList steps);

}  // namespace openneuron::bridge
