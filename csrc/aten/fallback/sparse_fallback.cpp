#include "aten/fallback/sparse_fallback.h"

#include <ATen/SparseTensorImpl.h>
#include <ATen/core/ivalue.h>
#include <ATen/native/SparseTensorUtils.h>
#include <ATen/ops/_copy_from_and_resize.h>
#include <ATen/ops/_sparse_coo_tensor_unsafe.h>

#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "aten/core/op_tracking.h"
#include "aten/fallback/fallback.h"

namespace openneuron::bridge {

namespace {

bool on_device(const at::Tensor& tensor) { return tensor.defined() && tensor.is_privateuseone(); }

// A sparse tensor with `indices` and `values` (on their device), coalesced as `coalesced` says.
at::Tensor sparse_from_parts(const at::Tensor& indices, const at::Tensor& values,
                             at::IntArrayRef sizes, bool coalesced) {
  at::Tensor result =
      at::_sparse_coo_tensor_unsafe(indices, values, sizes, values.options().layout(at::kSparse));
  result._coalesced_(coalesced);
  return result;
}

at::Tensor to_host(const at::Tensor& tensor) {
  if (!on_device(tensor)) return tensor;
  if (!tensor.is_sparse()) return tensor.cpu();
  return sparse_from_parts(tensor._indices().cpu(), tensor._values().cpu(), tensor.sizes(),
                           tensor.is_coalesced());
}

at::Tensor to_device(const at::Tensor& tensor, c10::Device device) {
  if (!tensor.defined() || !tensor.is_cpu()) return tensor;
  if (!tensor.is_sparse()) return tensor.to(device);
  return sparse_from_parts(tensor._indices().to(device), tensor._values().to(device),
                           tensor.sizes(), tensor.is_coalesced());
}

// The device tensor takes the host result's contents: a sparse one its sizes, indices, values
// and coalesced flag (the tensor object stays the caller's); a dense one a copy.
void write_back(const at::Tensor& device_tensor, const at::Tensor& host) {
  if (!device_tensor.is_sparse()) {
    at::_copy_from_and_resize(host, device_tensor);
    return;
  }
  const at::Tensor moved = to_device(host, device_tensor.device());
  auto* impl = at::sparse::get_sparse_impl(device_tensor);
  impl->raw_resize_(moved.sparse_dim(), moved.dense_dim(), moved.sizes());
  impl->set_indices_and_values_unsafe(moved._indices(), moved._values());
  impl->set_coalesced(moved.is_coalesced());
}

}  // namespace

void sparse_host_fallback(const c10::OperatorHandle& op, torch::jit::Stack* stack) {
  const std::string name = full_name(op);
  TORCH_CHECK_NOT_IMPLEMENTED(!strict_mode(), "neuron: ", name,
                              " on sparse tensors has no native kernel and OPENNEURON_STRICT=1 "
                              "forbids running it on the host (CPU fallback)");
  if (record_fallback(name)) {
    TORCH_WARN("neuron: ", name,
               " on sparse tensors has no native kernel and runs on the host (CPU fallback); "
               "counted in openneuron.get_fallback_ops(). Set OPENNEURON_STRICT=1 to make this "
               "an error.");
  }
  const auto& arguments = op.schema().arguments();
  const size_t first = stack->size() - arguments.size();
  std::optional<c10::Device> device;
  const auto note_device = [&](const at::Tensor& tensor) {
    if (!on_device(tensor)) return;
    TORCH_CHECK(!device || *device == tensor.device(),
                "Expected all tensors to be on the same device, but found at least two devices, ",
                *device, " and ", tensor.device(), "! (in ", name, ")");
    device = tensor.device();
  };
  std::vector<std::pair<at::Tensor, at::Tensor>> mutated;  // (device tensor, host copy)
  std::vector<at::Tensor> host_arguments;  // CPU tensors passed in (an out= the op returns)
  bool host_results = false;               // a factory's device= names the CPU
  bool host_tensor = false;                // a CPU tensor of one or more dims was passed
  for (size_t i = 0; i < arguments.size(); ++i) {
    c10::IValue& value = (*stack)[first + i];
    if (value.isTensor()) {
      const at::Tensor original = value.toTensor();
      note_device(original);
      if (original.defined() && original.is_cpu()) {
        host_arguments.push_back(original);
        if (original.dim() > 0) host_tensor = true;
      }
      at::Tensor host = to_host(original);
      const c10::AliasInfo* alias = arguments[i].alias_info();
      if (on_device(original) && alias != nullptr && alias->isWrite()) {
        mutated.emplace_back(original, host);
      }
      value = c10::IValue(std::move(host));
    } else if (value.isTensorList()) {
      std::vector<at::Tensor> hosts;
      for (const at::Tensor& tensor : value.toTensorList().vec()) {
        note_device(tensor);
        hosts.push_back(to_host(tensor));
      }
      value = c10::IValue(c10::List<at::Tensor>(hosts));
    } else if (value.isOptionalTensorList()) {
      c10::List<std::optional<at::Tensor>> hosts;
      for (const auto& tensor : value.toOptionalTensorList().vec()) {
        if (tensor.has_value()) note_device(*tensor);
        hosts.push_back(tensor.has_value() ? std::optional<at::Tensor>(to_host(*tensor))
                                           : std::nullopt);
      }
      value = c10::IValue(hosts);
    } else if (value.isDevice()) {
      if (value.toDevice().is_privateuseone()) {
        device = value.toDevice();
        value = c10::IValue(c10::Device(c10::kCPU));
      } else if (value.toDevice().is_cpu()) {
        host_results = true;  // the caller asked for the CPU
      }
    }
  }
  // As on CUDA, a neuron tensor and a CPU tensor (other than a 0-dim one) do not mix.
  TORCH_CHECK(!(device && host_tensor),
              "Expected all tensors to be on the same device, but found at least two devices, ",
              *device, " and cpu! (in ", name, ")");
  op.callBoxed(stack);
  for (auto& [device_tensor, host] : mutated) write_back(device_tensor, host);
  const c10::Device target = device.value_or(c10::Device(c10::DeviceType::PrivateUse1, 0));
  const size_t returns = op.schema().returns().size();
  for (size_t i = stack->size() - returns; i < stack->size(); ++i) {
    c10::IValue& value = (*stack)[i];
    if (!value.isTensor()) continue;
    const at::Tensor result = value.toTensor();
    // An in-place op returns its mutated argument: the caller's device tensor.
    bool returned_argument = false;
    for (const auto& [device_tensor, host] : mutated) {
      if (result.is_same(host)) {
        value = c10::IValue(device_tensor);
        returned_argument = true;
        break;
      }
    }
    for (const at::Tensor& argument : host_arguments) {
      returned_argument = returned_argument || result.is_same(argument);
    }
    if (!returned_argument && !host_results) value = c10::IValue(to_device(result, target));
  }
}

void register_sparse_host_kernels() {
  static std::once_flag once;
  std::call_once(once, [] {
    // Kept for the life of the process (never deregistered, so no teardown-order question).
    auto* handles = new std::vector<c10::RegistrationHandleRAII>();
    auto& dispatcher = c10::Dispatcher::singleton();
    for (const c10::OperatorName& name : dispatcher.getAllOpNames()) {
      const std::optional<c10::OperatorHandle> op = dispatcher.findOp(name);
      if (!op || !op->hasKernelForDispatchKey(c10::DispatchKey::SparseCPU) ||
          op->hasKernelForDispatchKey(c10::DispatchKey::SparsePrivateUse1)) {
        continue;
      }
      handles->push_back(dispatcher.registerImpl(
          name, c10::DispatchKey::SparsePrivateUse1,
          c10::KernelFunction::makeFromBoxedFunction<&sparse_host_fallback>(), std::nullopt,
          nullptr, "openneuron sparse_host_fallback (the CPU's sparse kernel on host copies)"));
    }
  });
}

}  // namespace openneuron::bridge
