#include "kernels/shape/repeat_interleave.h"

#include <stdexcept>
#include <vector>

#include "kernels/runtime/parallel.h"

namespace openneuron::kernels {
namespace {

template <typename Fn>
void visit_index_dtype(DType dtype, Fn&& fn) {
  if (dtype == DType::Int32) {
    fn(int32_t{});
  } else if (dtype == DType::Int64) {
    fn(int64_t{});
  } else {
    throw std::invalid_argument("repeats has to be Long or Int tensor");
  }
}

// Each position's first output slot (exclusive prefix sum); the last entry is the total.
std::vector<int64_t> starts_of(const TensorView& repeats) {
  const int64_t count = repeats.ndim == 0 ? 1 : repeats.sizes[0];
  const int64_t stride = repeats.ndim == 0 ? 0 : repeats.strides[0];
  std::vector<int64_t> starts(static_cast<size_t>(count) + 1, 0);
  visit_index_dtype(repeats.dtype, [&](auto zero) {
    const auto* counts = static_cast<const decltype(zero)*>(repeats.data);
    for (int64_t i = 0; i < count; ++i) {
      const int64_t n = counts[i * stride];
      if (n < 0) throw std::invalid_argument("repeats can not be negative");
      starts[i + 1] = starts[i] + n;
    }
  });
  return starts;
}

}  // namespace

int64_t repeat_interleave_total(const TensorView& repeats) { return starts_of(repeats).back(); }

void repeat_interleave_indices(const TensorView& out, const TensorView& repeats) {
  const std::vector<int64_t> starts = starts_of(repeats);
  const int64_t positions = static_cast<int64_t>(starts.size()) - 1;
  if (starts.back() != out.numel()) {
    throw std::length_error("allocated size does not match required size");
  }
  const int64_t out_stride = out.ndim == 0 ? 0 : out.strides[0];
  visit_index_dtype(out.dtype, [&](auto zero) {
    using Index = decltype(zero);
    auto* indices = static_cast<Index*>(out.data);
    // Chunks of positions that fill about 64k slots each.
    const int64_t slots_per_position = 1 + starts.back() / (positions + 1);
    parallel_for(0, positions, 1 + 65536 / slots_per_position, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) {
        for (int64_t j = starts[i]; j < starts[i + 1]; ++j) {
          indices[j * out_stride] = static_cast<Index>(i);
        }
      }
    });
  });
}

}  // namespace openneuron::kernels
