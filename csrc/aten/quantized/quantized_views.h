// Plain (non-quantized) tensors over a quantized tensor's storage, so that the device's dense
// ops and copies can read and write its integers.
#pragma once

#include <ATen/core/Tensor.h>

namespace openneuron::bridge::quantized {

// The integer dtype a quantized dtype stores (qint8 -> int8, quint8 -> uint8, qint32 -> int32,
// quint4x2/quint2x4 -> uint8 holding several values per byte).
c10::ScalarType stored_integer_type(c10::ScalarType quantized_type);

// True for the bit-packed dtypes (quint4x2, quint2x4).
bool is_sub_byte(c10::ScalarType quantized_type);

// The smallest and largest integer a quantized dtype holds (quint4x2: 0..15).
std::pair<int64_t, int64_t> integer_range(c10::ScalarType quantized_type);

// A plain tensor aliasing `qtensor`'s elements: same storage, offset, sizes and strides, with
// the stored integer dtype. Writes through it change the quantized tensor. Not for sub-byte
// dtypes (their elements are not addressable).
at::Tensor integer_view(const at::Tensor& qtensor);

// The bytes of a contiguous quantized tensor as a 1-D uint8 tensor aliasing its storage (for
// sub-byte dtypes: the packed bytes, ceil(numel * bits / 8) of them).
at::Tensor packed_bytes_view(const at::Tensor& qtensor);

}  // namespace openneuron::bridge::quantized
