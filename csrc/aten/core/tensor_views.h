// Describing ATen tensors to the torch-free kernel library.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <utility>

#include "kernels/core/tensor_view.h"
#include "runtime/stream.h"

namespace openneuron::bridge {

// True when the kernel library computes with this dtype natively (float64 and complex are
// not NeuronCore types and run on the host fallback).
bool is_native_compute_dtype(at::ScalarType dtype);

// uint16, uint32, uint64: the device stores and converts them but computes in none of them.
bool is_wide_unsigned(at::ScalarType dtype);

// The kernel dtype of a ScalarType the device can store; throws for others.
kernels::DType kernel_dtype(at::ScalarType dtype);

// The tensor's data as a strided view (storage offset applied).
kernels::TensorView view_of(const at::Tensor& tensor);

// As view_of, for kernels that treat every element alike (fills, random draws): beyond
// kMaxDims dims the size-1 dims are left out (they address no other element, and the row-major
// order stays), so a tensor of more dims with at most kMaxDims non-1 sizes still runs.
kernels::TensorView elementwise_view_of(const at::Tensor& tensor);

// The tensor broadcast to `shape` (leading dims added, stride 0 where expanded), for reading
// only: a copy-on-write tensor is not copied, so a kernel must never write through it.
kernels::TensorView broadcast_view(const at::Tensor& tensor, at::IntArrayRef shape);

// The calling thread's current stream on the tensor's device.
runtime::Stream& stream_for(const at::Tensor& tensor);

// Size-dependent queuing (inline on an idle stream for tiny work), shared with the runtime.
using runtime::enqueue_sized;
using runtime::kSmallWorkElements;

}  // namespace openneuron::bridge
