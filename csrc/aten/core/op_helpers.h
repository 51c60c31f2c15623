// Shared checks and argument plumbing for native kernels.
#pragma once

#include <ATen/core/DimVector.h>
#include <ATen/core/Tensor.h>
#include <c10/util/ArrayRef.h>

#include <cstring>
#include <initializer_list>
#include <vector>

#include "kernels/core/scalar.h"
#include "kernels/core/tensor_view.h"

namespace openneuron::bridge {

// Fails like PyTorch ("Expected all tensors to be on the same device ...") unless every
// defined tensor is on one neuron device or is a 0-dim CPU tensor (a wrapped scalar).
// Returns the neuron device.
c10::Device check_same_device(const char* op, std::initializer_list<const at::Tensor*> tensors);

// Writes a computed result into a caller's out= (resized as resize_output does), refusing an
// out= on another device as CUDA's structured kernels do ("Expected out tensor to have device
// ...") instead of copying across devices.
at::Tensor& assign_out(at::Tensor& out, const at::Tensor& result);

// What a kernel that writes `outputs` while it reads `input` should read: input itself, or a
// copy of it when an output shares its memory (sort(y, out=(y, i)) sorts a copy).
at::Tensor unaliased_input(const at::Tensor& input,
                           std::initializer_list<const at::Tensor*> outputs);

// A Python number as PyTorch passes it to a Tensor overload: a wrapped 0-dim CPU tensor, which
// promotes as a scalar (an int tensor against 2.5 compares in float; a half tensor in half).
at::Tensor wrapped_number(const at::Scalar& value);

// True when every tensor's dtype is one the kernels compute with natively. 0-dim CPU
// tensors (wrapped scalars) are exempt: Operand converts them to the compute dtype.
bool all_native_dtypes(std::initializer_list<const at::Tensor*> tensors);

kernels::Scalar kernel_scalar(const at::Scalar& value);

// The strides PyTorch's TensorIterator (and so every meta kernel built on it) gives a new
// output of an elementwise op over operands broadcast to shape: dimensions ordered as the
// operands' strides order them (the first operand that tells two dimensions apart decides),
// so a transposed or channels-last input gives an output laid out the same way. Operands are
// pointers: copying a tensor the interpreter owns would take the GIL twice per op.
at::DimVector elementwise_output_strides(at::IntArrayRef shape,
                                         c10::ArrayRef<const at::Tensor*> operands);

// A new neuron tensor, as empty.memory_format / empty_strided make one (row-major without
// strides), without a trip through the dispatcher: ops make their outputs with it, as the
// CPU's kernels make theirs. Honours deterministic filling of new memory.
at::Tensor empty_device_tensor(at::IntArrayRef shape, at::OptionalIntArrayRef strides,
                               at::ScalarType dtype, c10::Device device);

// A new tensor of shape with those strides.
at::Tensor empty_elementwise_output(at::IntArrayRef shape,
                                    c10::ArrayRef<const at::Tensor*> operands,
                                    const at::TensorOptions& options);

// Resizes an out= to an elementwise result's shape; one that had to be resized takes the
// strides a new result would (TensorIterator's rule), one of the right shape keeps its own.
void resize_elementwise_out(at::Tensor& out, at::IntArrayRef shape,
                            c10::ArrayRef<const at::Tensor*> operands);

// An operand broadcast to an output shape. A 0-dim CPU tensor is captured by value, converted
// to `host_dtype` (the op's compute dtype), so the queued kernel never reads host memory the
// caller may free; bind() points the view at it.
struct Operand {
  kernels::TensorView view;
  alignas(8) unsigned char host_value[16] = {};
  bool on_host = false;

  Operand(const at::Tensor& tensor, at::IntArrayRef shape, at::ScalarType host_dtype);
  // Call inside the queued work, on the copy the work owns.
  const kernels::TensorView& bind() {
    if (on_host) view.data = host_value;
    return view;
  }
};

}  // namespace openneuron::bridge
