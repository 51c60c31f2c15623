// One strided pass; 16-bit values split exactly through fp32.
#include "kernels/pointwise/frexp.h"

#include <cmath>
#include <stdexcept>
#include <utility>

#include "kernels/core/element_types.h"
#include "kernels/core/row_io.h"
#include "kernels/core/strided_loop.h"

namespace openneuron::kernels {

void frexp(const TensorView& mantissa, const TensorView& exponent, const TensorView& in) {
  if (mantissa.dtype != in.dtype || exponent.dtype != DType::Int32 || !is_floating(in.dtype)) {
    throw std::invalid_argument(
        "openneuron kernels: frexp needs float in/mantissa, int32 exponent");
  }
  if (in.numel() == 0) return;
  visit_floating_dtype(in.dtype, "frexp", [&](auto tag) {
    using T = typename decltype(tag)::type;
    using Wide = decltype(comparable(std::declval<T>()));
    for_each_row<3>(
        {&mantissa, &exponent, &in}, LoopOrder::kFirstOperandMemory,
        [](const RowPointers<3>& row, int64_t n) {
          for (int64_t j = 0; j < n; ++j) {
            const Wide value = comparable(
                load_value(reinterpret_cast<const T*>(row.ptrs[2] + j * row.strides[2])));
            int power = 0;
            const Wide fraction = std::isfinite(value) ? std::frexp(value, &power) : value;
            *reinterpret_cast<T*>(row.ptrs[0] + j * row.strides[0]) = cast_value<T>(fraction);
            *reinterpret_cast<int32_t*>(row.ptrs[1] + j * row.strides[1]) = power;
          }
        });
  });
}

}  // namespace openneuron::kernels
