// Conversions between a padded batch [B, T, E] on the device and a strided-layout nested
// tensor of B sequences [length_b, E], for kernels that compute on the padded form.
#pragma once

#include <ATen/core/Tensor.h>

#include <vector>

namespace openneuron::bridge::nested {

// The first lengths[b] rows of padded[b], for each b, as one nested tensor on padded's device.
at::Tensor nested_from_padded_rows(const at::Tensor& padded, const std::vector<int64_t>& lengths);

// The sequence lengths (first size of each component) of a nested tensor of 2-D components.
std::vector<int64_t> sequence_lengths(const at::Tensor& nested);

// [B, T] booleans on `device`, true past each sequence's end (a key padding mask).
at::Tensor padding_mask(const std::vector<int64_t>& lengths, int64_t padded_length,
                        c10::Device device);

}  // namespace openneuron::bridge::nested
