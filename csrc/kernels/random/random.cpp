// uniform() and normal(): element i of dst (row-major) reads lane i % 4 of the Philox block
// at counter offset + i / 4, so values depend only on (seed, offset, i).
#include "kernels/random/random.h"

#include <cmath>
#include <limits>
#include <type_traits>

#include "kernels/core/element_types.h"
#include "kernels/core/strided_loop.h"
#include "kernels/random/philox.h"

namespace openneuron::kernels {
namespace {

constexpr double kTwoPi = 6.283185307179586476925286766559;

// 24 random bits scaled into [0, 1): exactly representable in fp32.
template <typename C>
C unit_interval(uint32_t bits) {
  return static_cast<C>(bits >> 8) * static_cast<C>(1.0 / 16777216.0);
}

// Caches the Philox block of the most recent counter position.
class PhiloxLanes {
 public:
  PhiloxLanes(uint64_t seed, uint64_t offset) : seed_(seed), offset_(offset) {}

  const PhiloxBlock& block_of(uint64_t element) {
    const uint64_t position = element >> 2;
    if (!valid_ || position != cached_position_) {
      block_ = philox_block(seed_, offset_ + position);
      cached_position_ = position;
      valid_ = true;
    }
    return block_;
  }

 private:
  uint64_t seed_;
  uint64_t offset_;
  bool valid_ = false;
  uint64_t cached_position_ = 0;
  PhiloxBlock block_{};
};

// Calls store(T* element, uint64_t linear_index) for every element of dst in row-major order.
template <typename T, typename StoreFn>
void for_each_element_in_order(const TensorView& dst, StoreFn&& store) {
  uint64_t index = 0;
  for_each_row<1>({&dst}, LoopOrder::kRowMajor, [&](const RowPointers<1>& row, int64_t n) {
    for (int64_t j = 0; j < n; ++j) {
      store(reinterpret_cast<T*>(row.ptrs[0] + j * row.strides[0]), index++);
    }
  });
}

// The next representable T below value (toward -inf).
template <typename T>
T step_down(T value) {
  if constexpr (std::is_floating_point_v<T>) {
    return std::nextafter(value, -std::numeric_limits<T>::infinity());
  } else {
    using Bits = decltype(value.bits);
    constexpr Bits kSign = static_cast<Bits>(Bits{1} << (sizeof(Bits) * 8 - 1));
    if (value.bits & kSign) return T{static_cast<Bits>(value.bits + 1)};
    if (value.bits == 0) return T{static_cast<Bits>(kSign | 1)};
    return T{static_cast<Bits>(value.bits - 1)};
  }
}

// The largest T strictly below high (a few steps down from high's rounding at most).
template <typename T>
T largest_below(double high) {
  T candidate = cast_value<T>(high);
  for (int step = 0; step < 8 && cast_value<double>(candidate) >= high; ++step) {
    candidate = step_down(candidate);
  }
  return candidate;
}

template <typename T>
void fill_uniform(const TensorView& dst, uint64_t seed, uint64_t offset, double low, double high) {
  using C = std::conditional_t<std::is_same_v<T, double>, double, float>;
  const C low_c = static_cast<C>(low);
  const C range = static_cast<C>(high - low);
  // Rounding low + range * u to T can land on high itself; such values are clamped below.
  const T below_high = low < high ? largest_below<T>(high) : cast_value<T>(low);
  PhiloxLanes lanes(seed, offset);
  for_each_element_in_order<T>(dst, [&](T* element, uint64_t index) {
    const uint32_t bits = lanes.block_of(index)[index & 3];
    T value = cast_value<T>(low_c + range * unit_interval<C>(bits));
    if (!(cast_value<double>(value) < high)) value = below_high;
    *element = value;
  });
}

template <typename T>
void fill_normal(const TensorView& dst, uint64_t seed, uint64_t offset, double mean, double std) {
  using C = std::conditional_t<std::is_same_v<T, double>, double, float>;
  const C mean_c = static_cast<C>(mean);
  const C std_c = static_cast<C>(std);
  PhiloxLanes lanes(seed, offset);
  for_each_element_in_order<T>(dst, [&](T* element, uint64_t index) {
    // Elements 2j and 2j+1 share a lane pair: the cosine and sine halves of one Box-Muller.
    const PhiloxBlock& block = lanes.block_of(index);
    const unsigned pair = static_cast<unsigned>(index & 2);
    const C u1 = unit_interval<C>(block[pair]) + static_cast<C>(1.0 / 16777216.0);  // (0, 1]
    const C angle = static_cast<C>(kTwoPi) * unit_interval<C>(block[pair + 1]);
    const C radius = std::sqrt(C(-2) * std::log(u1));
    const C z = (index & 1) ? radius * std::sin(angle) : radius * std::cos(angle);
    *element = cast_value<T>(mean_c + std_c * z);
  });
}

}  // namespace

uint64_t random_offset_increment(int64_t numel) {
  return numel <= 0 ? 0 : (static_cast<uint64_t>(numel) + 3) / 4;
}

void uniform(const TensorView& dst, uint64_t seed, uint64_t offset, double low, double high) {
  visit_floating_dtype(dst.dtype, "uniform", [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_floating_point_v<T> || kIsNarrowFloat<T>) {
      fill_uniform<T>(dst, seed, offset, low, high);
    }
  });
}

void normal(const TensorView& dst, uint64_t seed, uint64_t offset, double mean, double std) {
  visit_floating_dtype(dst.dtype, "normal", [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_floating_point_v<T> || kIsNarrowFloat<T>) {
      fill_normal<T>(dst, seed, offset, mean, std);
    }
  });
}

}  // namespace openneuron::kernels
