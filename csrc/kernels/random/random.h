// Counter-based random numbers (Philox-4x32-10): the same seed and offset give the same
// values on every machine and thread count.
#pragma once

#include <cstdint>

#include "kernels/core/tensor_view.h"

namespace openneuron::kernels {

// Number of counter positions a fill of `numel` elements consumes; the caller advances
// its generator's offset by this much so that successive fills draw fresh numbers.
uint64_t random_offset_increment(int64_t numel);

// dst ~ U[low, high), element i (row-major order over dst's shape) drawn from counter
// offset + i/4, lane i%4, key seed. Floating dtypes only.
void uniform(const TensorView& dst, uint64_t seed, uint64_t offset, double low, double high);

// dst ~ N(mean, std^2) by Box-Muller on the same counter stream. Floating dtypes only.
void normal(const TensorView& dst, uint64_t seed, uint64_t offset, double mean, double std);

}  // namespace openneuron::kernels
