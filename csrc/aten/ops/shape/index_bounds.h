// Index range checks made at the indexing call, before any work is queued, so an out-of-range
// index raises where the CPU would raise instead of at a later synchronize.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <optional>

namespace openneuron::bridge {

// The first value of `index` (int64 or int32, any device), in row-major order, outside
// [lo, hi) and not equal to `skip`; nullopt when all are in range. A neuron index is read from
// device memory after its stream has run the work queued before (its values may come from
// that work); an error that work left raises here, as the next synchronize would raise it.
// With deferred checks (OPENNEURON_DEFERRED_INDEX_CHECKS=1 or set_deferred_index_checks(true))
// a neuron index is not read here: the queued kernel still refuses an out-of-range value, and
// the error surfaces at the next synchronize, as a CUDA device-side assert does.
std::optional<int64_t> first_index_outside(const at::Tensor& index, int64_t lo, int64_t hi,
                                           std::optional<int64_t> skip = std::nullopt);

// Turns deferred checks on or off for the process; returns the previous setting.
bool set_deferred_index_checks(bool deferred);

}  // namespace openneuron::bridge
