// Random number generators of neuron devices: Philox seed and counter offset.
#pragma once

#include <ATen/core/Generator.h>
#include <c10/core/GeneratorImpl.h>

#include <mutex>
#include <utility>

namespace openneuron::bridge {

class NeuronGeneratorImpl final : public c10::GeneratorImpl {
 public:
  explicit NeuronGeneratorImpl(c10::DeviceIndex device, uint64_t seed = c10::default_rng_seed_val);

  void set_current_seed(uint64_t seed) override;
  uint64_t current_seed() const override;
  uint64_t seed() override;  // picks a nondeterministic seed
  void set_offset(uint64_t offset) override;
  uint64_t get_offset() const override;
  // State: 16 bytes (uint8 CPU tensor) holding seed then offset, little-endian.
  void set_state(const c10::TensorImpl& state) override;
  c10::intrusive_ptr<c10::TensorImpl> get_state() const override;
  static c10::DeviceType device_type() { return c10::DeviceType::PrivateUse1; }

  // Reserves `increment` counter positions; returns the (seed, offset) a fill draws from.
  std::pair<uint64_t, uint64_t> reserve(uint64_t increment);

 private:
  NeuronGeneratorImpl* clone_impl() const override;
  uint64_t seed_;
  uint64_t offset_ = 0;
};

// The default generator of a device (index -1: the current device).
const at::Generator& default_generator(c10::DeviceIndex device);

// A fresh generator for torch.Generator(device="neuron:i").
at::Generator new_generator(c10::DeviceIndex device);

// The generator an op should use: `generator` if given (it must be a neuron generator),
// else the default generator of `device`.
NeuronGeneratorImpl* resolve_generator(const std::optional<at::Generator>& generator,
                                       c10::DeviceIndex device);

}  // namespace openneuron::bridge
