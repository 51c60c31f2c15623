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

// The kernel dtype of a ScalarType the device can store; throws for others.
kernels::DType kernel_dtype(at::ScalarType dtype);

// The tensor's data as a strided view (storage offset applied).
kernels::TensorView view_of(const at::Tensor& tensor);

// The tensor broadcast to `shape` (leading dims added, stride 0 where expanded).
kernels::TensorView broadcast_view(const at::Tensor& tensor, at::IntArrayRef shape);

// The calling thread's current stream on the tensor's device.
runtime::Stream& stream_for(const at::Tensor& tensor);

// Ops on at most this many elements take about as long as handing them to the stream's worker.
constexpr int64_t kSmallWorkElements = 2048;

// Queues `work` on `stream`, or, when it touches at most kSmallWorkElements elements and the
// stream is idle, runs it at once on the calling thread (same outcome, no hand-off).
template <typename Work>
void enqueue_sized(runtime::Stream& stream, const char* name, int64_t elements, Work&& work) {
  if (elements <= kSmallWorkElements) {
    stream.enqueue_small(name, std::forward<Work>(work));
  } else {
    stream.enqueue(name, std::forward<Work>(work));
  }
}

}  // namespace openneuron::bridge
