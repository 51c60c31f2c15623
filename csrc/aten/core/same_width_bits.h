// Storage-only formats seen as plain bits, so the device moves and fills them itself.
#pragma once

#include <ATen/core/Tensor.h>

namespace openneuron::bridge {

// The tensor's elements as unsigned bits of the same width (uint8/int16/int32/int64 by element
// size), for moving or filling formats the kernels do not compute in (packed fp4, e8m0 scales,
// the fnuz float8s, wide unsigned integers, complex); undefined for quantized tensors and for
// elements wider than 8 bytes.
at::Tensor same_width_bits(const at::Tensor& tensor);

}  // namespace openneuron::bridge
