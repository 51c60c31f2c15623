#include "aten/core/generator.h"

#include <ATen/core/GeneratorForPrivateuseone.h>
#include <ATen/ops/empty.h>
#include <c10/util/CallOnce.h>

#include <cstring>
#include <deque>

#include "aten/core/runtime_errors.h"
#include "runtime/runtime.h"

namespace openneuron::bridge {

NeuronGeneratorImpl::NeuronGeneratorImpl(c10::DeviceIndex device, uint64_t seed)
    : c10::GeneratorImpl(c10::Device(c10::DeviceType::PrivateUse1, device),
                         c10::DispatchKeySet(c10::DispatchKey::PrivateUse1)),
      seed_(seed) {}

void NeuronGeneratorImpl::set_current_seed(uint64_t seed) {
  seed_ = seed;
  offset_ = 0;
}

uint64_t NeuronGeneratorImpl::current_seed() const { return seed_; }

uint64_t NeuronGeneratorImpl::seed() {
  set_current_seed(c10::detail::getNonDeterministicRandom(/*is_cuda=*/false));
  return seed_;
}

void NeuronGeneratorImpl::set_offset(uint64_t offset) { offset_ = offset; }

uint64_t NeuronGeneratorImpl::get_offset() const { return offset_; }

void NeuronGeneratorImpl::set_state(const c10::TensorImpl& state) {
  TORCH_CHECK(state.dtype() == caffe2::TypeMeta::Make<uint8_t>() && state.numel() == 16 &&
                  state.device().is_cpu(),
              "a neuron RNG state is a CPU uint8 tensor of 16 bytes (seed, offset); got ",
              state.numel(), " elements of ", state.dtype().name(), " on ", state.device());
  const auto* bytes = static_cast<const uint8_t*>(state.data());
  std::memcpy(&seed_, bytes, 8);
  std::memcpy(&offset_, bytes + 8, 8);
}

c10::intrusive_ptr<c10::TensorImpl> NeuronGeneratorImpl::get_state() const {
  at::Tensor state = at::empty({16}, at::TensorOptions().dtype(at::kByte).device(at::kCPU));
  std::memcpy(state.data_ptr(), &seed_, 8);
  std::memcpy(static_cast<uint8_t*>(state.data_ptr()) + 8, &offset_, 8);
  return state.getIntrusivePtr();
}

std::pair<uint64_t, uint64_t> NeuronGeneratorImpl::reserve(uint64_t increment) {
  std::lock_guard<std::mutex> lock(mutex_);
  const uint64_t offset = offset_;
  offset_ += increment;
  return {seed_, offset};
}

NeuronGeneratorImpl* NeuronGeneratorImpl::clone_impl() const {
  auto* copy = new NeuronGeneratorImpl(device().index(), seed_);
  copy->offset_ = offset_;
  return copy;
}

const at::Generator& default_generator(c10::DeviceIndex device) {
  static std::once_flag created;
  static std::deque<at::Generator> generators;  // one per device, stable addresses
  runtime::Runtime* rt = nullptr;
  OPENNEURON_RUNTIME_CALL(rt = &runtime::Runtime::get());
  std::call_once(created, [&] {
    for (int i = 0; i < rt->device_count(); ++i) {
      generators.push_back(
          at::make_generator<NeuronGeneratorImpl>(static_cast<c10::DeviceIndex>(i)));
    }
  });
  if (device < 0) device = static_cast<c10::DeviceIndex>(runtime::current_device());
  OPENNEURON_RUNTIME_CALL(runtime::check_device_index(device));
  return generators[device];
}

at::Generator new_generator(c10::DeviceIndex device) {
  if (device < 0) device = static_cast<c10::DeviceIndex>(runtime::current_device());
  OPENNEURON_RUNTIME_CALL(runtime::check_device_index(device));
  return at::make_generator<NeuronGeneratorImpl>(device);
}

NeuronGeneratorImpl* resolve_generator(const std::optional<at::Generator>& generator,
                                       c10::DeviceIndex device) {
  if (generator.has_value() && generator->defined()) {
    TORCH_CHECK(generator->device().type() == c10::DeviceType::PrivateUse1,
                "expected a neuron generator for an op on a neuron tensor, got a generator on ",
                generator->device());
    return generator->get<NeuronGeneratorImpl>();
  }
  return default_generator(device).get<NeuronGeneratorImpl>();
}

}  // namespace openneuron::bridge
