// The index list behind torch.repeat_interleave(repeats): position i repeated repeats[i] times.
#pragma once

#include <cstdint>

#include "kernels/core/tensor_view.h"

namespace openneuron::kernels {

// The sum of `repeats` (1-D, int32 or int64, any stride). Throws std::invalid_argument
// ("repeats can not be negative") when a count is negative.
int64_t repeat_interleave_total(const TensorView& repeats);

// out[j] = i for the repeats[i] positions j that follow the counts before i. repeats: 1-D int32
// or int64, any stride; out: 1-D of repeats' dtype, any stride. Throws std::invalid_argument on a
// negative count and std::length_error ("allocated size does not match required size") when
// the counts do not sum to out's length, in both cases before anything is written.
void repeat_interleave_indices(const TensorView& out, const TensorView& repeats);

}  // namespace openneuron::kernels
