// Backend metadata of neuron tensors: named flags a program attaches to a tensor with
// torch._utils.set_tensor_metadata and reads back with get_tensor_metadata. torch.save writes them
// with the tensor and torch.load restores them when the tensor is loaded onto neuron (PyTorch's
// per-device BackendMeta serialization registry); a tensor loaded onto another device drops them.
#include <c10/core/TensorImpl.h>
#include <torch/csrc/jit/serialization/pickler_helper.h>

#include <map>
#include <string>
#include <unordered_map>

namespace openneuron::bridge {

namespace {

// The flags live on the tensor (TensorImpl), not its storage: detach() and other shallow copies
// get their own copy; an op's result starts with none, as on every device.
struct NeuronBackendMeta final : c10::BackendMeta {
  std::map<std::string, bool> flags;

  c10::intrusive_ptr<c10::BackendMeta> clone(
      const c10::intrusive_ptr<c10::BackendMeta>&) const override {
    return c10::make_intrusive<NeuronBackendMeta>(*this);
  }
};

NeuronBackendMeta* flags_of(const at::Tensor& tensor) {
  return dynamic_cast<NeuronBackendMeta*>(tensor.unsafeGetTensorImpl()->get_backend_meta());
}

// Adds the tensor's flags to `metadata` (which already holds PyTorch's own conj/neg bits).
void write_flags(const at::Tensor& tensor, std::unordered_map<std::string, bool>& metadata) {
  if (const auto* meta = flags_of(tensor)) {
    for (const auto& [name, value] : meta->flags) metadata[name] = value;
  }
}

// Sets each flag in `metadata` (PyTorch has taken out conj/neg); flags not named keep their value.
void read_flags(const at::Tensor& tensor, std::unordered_map<std::string, bool>& metadata) {
  if (metadata.empty()) return;
  auto* impl = tensor.unsafeGetTensorImpl();
  auto* meta = flags_of(tensor);
  if (meta == nullptr) {
    auto fresh = c10::make_intrusive<NeuronBackendMeta>();
    meta = fresh.get();
    impl->set_backend_meta(std::move(fresh));
  }
  for (const auto& [name, value] : metadata) meta->flags[name] = value;
}

const bool g_backend_meta_registered = [] {
  torch::jit::TensorBackendMetaRegistry(c10::DeviceType::PrivateUse1, &write_flags, &read_flags);
  return true;
}();

}  // namespace

}  // namespace openneuron::bridge
