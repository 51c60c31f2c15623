#include "kernels/pointwise/cross_product.h"

#include <stdexcept>
#include <type_traits>
#include <vector>

#include "kernels/core/element_types.h"
#include "kernels/runtime/parallel.h"

namespace openneuron::kernels {
namespace {

// The type a component is computed in: fp32 for every float up to 32 bits, double for double,
// and unsigned 64-bit for integers, whose wrap-around is then the element type's.
template <typename T>
using ComputeType = std::conditional_t<std::is_same_v<T, double>, double,
                                       std::conditional_t<std::is_integral_v<T>, uint64_t, float>>;

template <typename T>
void cross_rows(const TensorView& out, const TensorView& a, const TensorView& b, int dim) {
  using C = ComputeType<T>;
  // The dims other than `dim`, walked in row-major order; each position holds one triple.
  std::vector<int> outer;
  int64_t positions = 1;
  for (int d = 0; d < out.ndim; ++d) {
    if (d == dim) continue;
    outer.push_back(d);
    positions *= out.sizes[d];
  }
  if (positions == 0) return;
  const int64_t step_out = out.strides[dim], step_a = a.strides[dim], step_b = b.strides[dim];
  parallel_for(0, positions, 8192, [&](int64_t begin, int64_t end) {
    std::vector<int64_t> coordinate(outer.size(), 0);
    int64_t offset_out = 0, offset_a = 0, offset_b = 0;
    int64_t rest = begin;
    for (int k = static_cast<int>(outer.size()) - 1; k >= 0; --k) {
      const int d = outer[k];
      coordinate[k] = rest % out.sizes[d];
      rest /= out.sizes[d];
      offset_out += coordinate[k] * out.strides[d];
      offset_a += coordinate[k] * a.strides[d];
      offset_b += coordinate[k] * b.strides[d];
    }
    auto* out_data = static_cast<T*>(out.data);
    const auto* a_data = static_cast<const T*>(a.data);
    const auto* b_data = static_cast<const T*>(b.data);
    for (int64_t p = begin; p < end; ++p) {
      const C a0 = cast_value<C>(a_data[offset_a]);
      const C a1 = cast_value<C>(a_data[offset_a + step_a]);
      const C a2 = cast_value<C>(a_data[offset_a + 2 * step_a]);
      const C b0 = cast_value<C>(b_data[offset_b]);
      const C b1 = cast_value<C>(b_data[offset_b + step_b]);
      const C b2 = cast_value<C>(b_data[offset_b + 2 * step_b]);
      const C c0 = a1 * b2 - a2 * b1;
      const C c1 = a2 * b0 - a0 * b2;
      const C c2 = a0 * b1 - a1 * b0;
      if constexpr (std::is_integral_v<T>) {
        out_data[offset_out] = static_cast<T>(c0);
        out_data[offset_out + step_out] = static_cast<T>(c1);
        out_data[offset_out + 2 * step_out] = static_cast<T>(c2);
      } else {
        out_data[offset_out] = cast_value<T>(c0);
        out_data[offset_out + step_out] = cast_value<T>(c1);
        out_data[offset_out + 2 * step_out] = cast_value<T>(c2);
      }
      for (int k = static_cast<int>(outer.size()) - 1; k >= 0; --k) {
        const int d = outer[k];
        offset_out += out.strides[d];
        offset_a += a.strides[d];
        offset_b += b.strides[d];
        if (++coordinate[k] < out.sizes[d]) break;
        offset_out -= out.strides[d] * out.sizes[d];
        offset_a -= a.strides[d] * out.sizes[d];
        offset_b -= b.strides[d] * out.sizes[d];
        coordinate[k] = 0;
      }
    }
  });
}

}  // namespace

void cross_product(const TensorView& out, const TensorView& a, const TensorView& b, int dim) {
  visit_dtype(out.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_same_v<T, bool>) {
      throw std::invalid_argument("cross_product: bool is not a numeric dtype");
    } else {
      cross_rows<T>(out, a, b, dim);
    }
  });
}

}  // namespace openneuron::kernels
