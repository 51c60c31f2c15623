#include "aten/fallback/fallback.h"

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/MemoryOverlap.h>
#include <ATen/core/ivalue.h>
#include <ATen/ops/_copy_from_and_resize.h>

#include <atomic>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "aten/core/generator.h"
#include "aten/core/host_access.h"
#include "aten/core/op_tracking.h"
#include "aten/core/runtime_errors.h"
#include "aten/core/tensor_views.h"
#include "aten/fallback/fallback_widening.h"
#include "runtime/errors.h"
#include "runtime/runtime.h"

namespace openneuron::bridge {

namespace {

std::atomic<int> g_strict{-1};  // -1: not yet read from the environment

bool is_generator_type(const c10::TypePtr& type) {
  if (type->kind() == c10::TypeKind::GeneratorType) return true;
  return type->kind() == c10::TypeKind::OptionalType &&
         type->containedType(0)->kind() == c10::TypeKind::GeneratorType;
}

// Ops whose CUDA kernels accept CPU index tensors beside device tensors.
bool accepts_host_indices(const std::string& name) {
  return name.rfind("aten::index", 0) == 0 || name.rfind("aten::_index_put_impl_", 0) == 0;
}

// Returns whether any argument is a neuron tensor; *device_out is its device (or the current
// device when none is).
bool check_devices(const std::string& name, const torch::jit::Stack& stack, size_t first,
                   c10::Device* device_out) {
  std::optional<c10::Device> device;
  std::optional<c10::Device> host_tensor;
  auto visit = [&](const at::Tensor& tensor) {
    if (!tensor.defined()) return;
    if (tensor.is_privateuseone()) {
      if (device && *device != tensor.device()) {
        TORCH_CHECK(false,
                    "Expected all tensors to be on the same device, but found at least two "
                    "devices, ",
                    *device, " and ", tensor.device(), "! (in ", name, ")");
      }
      device = tensor.device();
    } else if (tensor.dim() > 0) {
      host_tensor = tensor.device();
    }
  };
  for (size_t i = first; i < stack.size(); ++i) {
    const auto& value = stack[i];
    if (value.isTensor()) {
      visit(value.toTensor());
    } else if (value.isTensorList()) {
      for (const at::Tensor& tensor : value.toTensorList().vec()) visit(tensor);
    } else if (value.isOptionalTensorList()) {
      for (const auto& tensor : value.toOptionalTensorList().vec()) {
        if (tensor.has_value()) visit(*tensor);
      }
    }
  }
  if (device && host_tensor && !accepts_host_indices(name)) {
    TORCH_CHECK(false,
                "Expected all tensors to be on the same device, but found at least two "
                "devices, ",
                *device, " and ", *host_tensor, "! (in ", name, ")");
  }
  *device_out = device.value_or(c10::Device(
      c10::DeviceType::PrivateUse1, static_cast<c10::DeviceIndex>(runtime::current_device())));
  return device.has_value();
}

// Whether the op names a device explicitly (a factory's or to()'s device=): then a CPU result
// is what the caller asked for.
bool names_a_device(const c10::OperatorHandle& op, const torch::jit::Stack& stack, size_t first) {
  const auto& arguments = op.schema().arguments();
  for (size_t i = 0; i < arguments.size(); ++i) {
    if (arguments[i].name() == "device" && !stack[first + i].isNone()) return true;
  }
  return false;
}

// cpu_fallback puts results on the device of the first tensor argument, which is the CPU when
// that argument is a wrapped number (torch.sub(1, x), 1 - x) or another 0-dim CPU tensor; as on
// CUDA, results of an op with a neuron tensor argument belong on neuron.
void keep_results_on_device(const c10::OperatorHandle& op, torch::jit::Stack& stack,
                            c10::Device device) {
  const size_t returns = op.schema().returns().size();
  for (size_t i = stack.size() - returns; i < stack.size(); ++i) {
    c10::IValue& value = stack[i];
    if (value.isTensor()) {
      const at::Tensor& result = value.toTensor();
      if (result.defined() && result.is_cpu()) value = c10::IValue(result.to(device));
    } else if (value.isTensorList()) {
      std::vector<at::Tensor> results = value.toTensorList().vec();
      bool moved = false;
      for (at::Tensor& result : results) {
        if (result.defined() && result.is_cpu()) {
          result = result.to(device);
          moved = true;
        }
      }
      if (moved) value = c10::IValue(c10::List<at::Tensor>(results));
    }
  }
}

// Mixes a Philox (seed, offset) pair into a seed for a host generator.
uint64_t mix_seed(uint64_t seed, uint64_t offset) {
  uint64_t z = seed + 0x9E3779B97F4A7C15ULL * (offset + 1);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

// Host kernels take CPU generators: derive one from the neuron generator, so fallback
// random ops stay deterministic under neuron seeds and independent of the CPU generator.
void replace_generators(const c10::OperatorHandle& op, torch::jit::Stack& stack, size_t first,
                        c10::Device device) {
  const auto& arguments = op.schema().arguments();
  for (size_t i = 0; i < arguments.size(); ++i) {
    if (!is_generator_type(arguments[i].type())) continue;
    auto& value = stack[first + i];
    std::optional<at::Generator> given;
    if (value.isGenerator()) given = value.toGenerator();
    if (given && given->device().is_cpu()) continue;
    NeuronGeneratorImpl* generator = resolve_generator(given, device.index());
    auto [seed, offset] = generator->reserve(1);
    value = c10::IValue(at::make_generator<at::CPUGeneratorImpl>(mix_seed(seed, offset)));
  }
}

// Arguments some CPU kernels update in place although their schema does not mark them
// mutable (Tensor(a!)), so cpu_fallback, which writes back only marked arguments, would drop
// the update: native_batch_norm's running_mean and running_var (arguments 3 and 4) in training.
const std::vector<size_t>* unmarked_mutated_arguments(const std::string& name) {
  static const std::vector<size_t> kBatchNormRunningStats = {3, 4};
  if (name == "aten::native_batch_norm" || name == "aten::native_batch_norm.out") {
    return &kBatchNormRunningStats;
  }
  return nullptr;
}

// cpu_fallback copies a broadcast (stride-0) argument to the host densely, so the host kernel
// sees other strides than a CPU tensor would and lays its result out otherwise (TensorIterator
// orders output dims by the operands' strides). Read-only broadcast arguments go over as their
// compact data, broadcast again on the host.
void keep_broadcasts(const c10::OperatorHandle& op, torch::jit::Stack& stack, size_t first) {
  const auto& arguments = op.schema().arguments();
  for (size_t i = 0; i < arguments.size(); ++i) {
    const c10::AliasInfo* alias = arguments[i].alias_info();
    c10::IValue& value = stack[first + i];
    if ((alias != nullptr && alias->isWrite()) || !value.isTensor()) continue;
    const at::Tensor& tensor = value.toTensor();
    if (!tensor.defined() || !tensor.is_privateuseone()) continue;
    std::vector<int64_t> compact_sizes = tensor.sizes().vec();
    bool broadcast = false;
    for (int64_t d = 0; d < tensor.dim(); ++d) {
      if (tensor.stride(d) == 0 && tensor.size(d) > 1) {
        compact_sizes[d] = 1;
        broadcast = true;
      }
    }
    if (!broadcast) continue;
    at::Tensor compact = tensor.as_strided(compact_sizes, tensor.strides());
    value = c10::IValue(compact.cpu().expand(tensor.sizes()));
  }
}

// In-place ops that run on host copies, where the CPU cannot see how the device tensors share
// memory: the CPU's (and CUDA's) overlap checks for them, made on the device tensors first.
// kIndexed: self holds each location once and shares no memory with its index or source;
// kSelfOnly: self holds each location once; kElementwise: that, and no operand shares part of
// self's memory (the shifts: checked before their dtype). The CPU lets index_fill_ and
// masked_fill_ write an expanded self (with a deprecation warning), so they are not held to
// the first rule.
void check_host_write_overlaps(const c10::OperatorHandle& op, const torch::jit::Stack& stack,
                               size_t first) {
  enum class Rule { kIndexed, kSelfOnly, kElementwise };
  static const std::unordered_map<std::string, Rule> rules = {
      {"aten::put_", Rule::kIndexed},
      {"aten::index_fill_", Rule::kIndexed},
      {"aten::index_copy_", Rule::kIndexed},
      {"aten::masked_scatter_", Rule::kSelfOnly},
      {"aten::__ilshift__", Rule::kElementwise},
      {"aten::__irshift__", Rule::kElementwise},
      {"aten::bitwise_left_shift_", Rule::kElementwise},
      {"aten::bitwise_right_shift_", Rule::kElementwise},
      {"aten::masked_fill_", Rule::kElementwise},
  };
  const auto rule = rules.find(op.schema().name());
  if (rule == rules.end()) return;
  const auto& arguments = op.schema().arguments();
  const at::Tensor self = stack[first].toTensor();
  if (!self.is_privateuseone()) return;
  if (op.schema().name() != "aten::masked_fill_" && op.schema().name() != "aten::index_fill_") {
    at::assert_no_internal_overlap(self);
  }
  if (rule->second == Rule::kSelfOnly) return;
  for (size_t i = 1; i < arguments.size(); ++i) {
    const c10::IValue& value = stack[first + i];
    if (!value.isTensor() || !value.toTensor().defined()) continue;
    const at::Tensor& operand = value.toTensor();
    if (rule->second == Rule::kIndexed) {
      at::assert_no_overlap(self, operand);
    } else if (!(operand.is_cpu() && operand.dim() == 0)) {
      at::assert_no_partial_overlap(self, operand);
    }
  }
}

// index_fill_ into a self whose elements share memory (an expanded tensor), which the CPU
// allows with a deprecation warning: the host copy would be dense and its write-back refused,
// so the CPU kernel runs on the device memory itself, after the streams have run the work
// queued before. False for any other call.
bool index_fill_shared_elements(const c10::OperatorHandle& op, torch::jit::Stack* stack,
                                size_t first) {
  if (op.schema().name() != "aten::index_fill_") return false;
  const at::Tensor self = (*stack)[first].toTensor();
  if (!self.is_privateuseone() || at::has_internal_overlap(self) != at::MemOverlap::Yes) {
    return false;
  }
  const int64_t dim = (*stack)[first + 1].toInt();
  const at::Tensor index = (*stack)[first + 2].toTensor();
  const c10::IValue& value = (*stack)[first + 3];
  for (const at::Tensor* t : {&index, &self}) {
    if (!t->is_privateuseone()) continue;
    const c10::DeviceGuard guard(t->device());
    OPENNEURON_RUNTIME_CALL(stream_for(*t).synchronize());
  }
  const at::Tensor host_index = index.is_privateuseone() ? host_alias(index) : index;
  const at::Scalar fill = value.isTensor() ? value.toTensor().item() : value.toScalar();
  host_alias(self).index_fill_(dim, host_index, fill);
  torch::jit::drop(*stack, op.schema().arguments().size());
  torch::jit::push(*stack, self);
  return true;
}

}  // namespace

std::string full_name(const c10::OperatorHandle& op) {
  const auto& name = op.schema().operator_name();
  return name.overload_name.empty() ? name.name : name.name + "." + name.overload_name;
}

void set_strict_mode(bool strict) { g_strict = strict ? 1 : 0; }

bool strict_mode() {
  int strict = g_strict.load();
  if (strict < 0) {
    bool from_environment = false;
    try {
      from_environment = ::openneuron::runtime::Runtime::get().config().strict;
    } catch (const ::openneuron::runtime::Error&) {
      // An invalid configuration is reported where the runtime is first used.
    }
    strict = from_environment ? 1 : 0;
    g_strict = strict;
  }
  return strict == 1;
}

void host_fallback(const c10::OperatorHandle& op, torch::jit::Stack* stack) {
  const std::string name = full_name(op);
  TORCH_CHECK_NOT_IMPLEMENTED(!strict_mode(), "neuron: ", name,
                              " has no native kernel and OPENNEURON_STRICT=1 forbids running it "
                              "on the host (CPU fallback)");
  // A view's result must alias its input; a host run would return a copy instead.
  for (const c10::Argument& result : op.schema().returns()) {
    TORCH_CHECK_NOT_IMPLEMENTED(result.alias_info() == nullptr || result.alias_info()->isWrite(),
                                "neuron: ", name,
                                " is a view op without a native kernel; running it on the host "
                                "would return a copy instead of a view");
  }
  const size_t first = stack->size() - op.schema().arguments().size();
  c10::Device device(c10::DeviceType::PrivateUse1, 0);
  const bool has_device_tensor = check_devices(name, *stack, first, &device);
  const bool results_on_device = has_device_tensor && !names_a_device(op, *stack, first);
  if (record_fallback(name)) {
    TORCH_WARN("neuron: ", name,
               " has no native kernel for these inputs and runs on the host "
               "(CPU fallback); counted in openneuron.get_fallback_ops(). Set OPENNEURON_STRICT=1 "
               "to make this an error.");
  }
  replace_generators(op, *stack, first, device);
  // Unmarked in-place updates go to host copies we own, then back to the device tensors.
  std::vector<std::pair<at::Tensor, at::Tensor>> written_back;  // (device tensor, host copy)
  if (const std::vector<size_t>* mutated = unmarked_mutated_arguments(name)) {
    for (size_t index : *mutated) {
      c10::IValue& value = (*stack)[first + index];
      if (!value.isTensor() || !value.toTensor().defined() ||
          !value.toTensor().is_privateuseone()) {
        continue;
      }
      at::Tensor on_device = value.toTensor();
      at::Tensor on_host = on_device.cpu();
      value = c10::IValue(on_host);
      written_back.emplace_back(std::move(on_device), std::move(on_host));
    }
  }
  // The host writes an out= into a dense copy and copies it back, so an out= in which one
  // location holds several elements (an expanded one) is refused first, as TensorIterator does
  // (except the CPU's threshold, idempotent, which its in-place form reaches as out=self).
  const auto& arguments = op.schema().arguments();
  for (size_t i = 0; i < arguments.size() && name != "aten::threshold.out"; ++i) {
    const c10::IValue& value = (*stack)[first + i];
    if (arguments[i].is_out() && value.isTensor() && value.toTensor().defined() &&
        value.toTensor().is_privateuseone()) {
      at::assert_no_internal_overlap(value.toTensor());
    }
  }
  check_host_write_overlaps(op, *stack, first);
  if (index_fill_shared_elements(op, stack, first)) return;
  run_widening_unsupported_dtypes(op, stack, name, names_a_device(op, *stack, first),
                                  [&](torch::jit::Stack* host_stack) {
                                    keep_broadcasts(op, *host_stack, first);
                                    at::native::cpu_fallback(op, host_stack);
                                  });
  for (auto& [on_device, on_host] : written_back) at::_copy_from_and_resize(on_host, on_device);
  if (results_on_device) keep_results_on_device(op, *stack, device);
}

}  // namespace openneuron::bridge
