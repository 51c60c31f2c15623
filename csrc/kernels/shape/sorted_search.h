// Insertion points in sorted rows (torch.searchsorted, torch.bucketize).
#pragma once

#include <cstdint>

#include "kernels/core/tensor_view.h"

namespace openneuron::kernels {

// For each row r of `values` ([rows, n], contiguous), the index at which each value would be
// inserted into row r of `boundaries` ([rows, b] contiguous, or [1, b]: one row for all) to keep
// it sorted: the first position whose element is >= the value (`right`: > the value). The
// binary search takes the comparisons PyTorch's CPU kernel takes, so a NaN value goes after
// every number and rows holding NaN give the CPU's placements.
// `sorter` (nullable, int64 [rows or 1, b]) gives each row's sorted order of an unsorted row;
// an entry outside [0, b) throws std::out_of_range before anything is written.
// values and boundaries share one dtype; out ([rows, n], contiguous) is int32 or int64.
void sorted_search(const TensorView& out, const TensorView& boundaries, const TensorView& values,
                   const TensorView* sorter, bool right);

}  // namespace openneuron::kernels
