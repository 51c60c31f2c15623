// Reading and writing device memory from the host, for the few ops whose CPU kernel runs on it
// directly (the simulated device's memory is host memory).
#pragma once

#include <ATen/core/Tensor.h>

namespace openneuron::bridge {

// A CPU tensor over the tensor's device memory, with the same conjugate and negative bits; a
// CPU tensor is returned as it is. The caller has synchronised the tensor's stream.
at::Tensor host_alias(const at::Tensor& tensor);

// The tensor as the host may read it through view_of now: a neuron tensor's stream has run the
// work queued before (its values may come from that work), and past kMaxDims dims it is a
// flat row-major copy, since kernel views hold at most kMaxDims dims.
at::Tensor readable_on_host(const at::Tensor& tensor);

}  // namespace openneuron::bridge
