#include "aten/quantized/quantized_views.h"

#include <ATen/ops/empty.h>
#include <c10/core/ScalarType.h>

namespace openneuron::bridge::quantized {

c10::ScalarType stored_integer_type(c10::ScalarType quantized_type) {
  return c10::toUnderlying(quantized_type);
}

bool is_sub_byte(c10::ScalarType quantized_type) {
  return quantized_type == c10::kQUInt4x2 || quantized_type == c10::kQUInt2x4;
}

std::pair<int64_t, int64_t> integer_range(c10::ScalarType quantized_type) {
  switch (quantized_type) {
    case c10::kQInt8:
      return {-128, 127};
    case c10::kQUInt8:
      return {0, 255};
    case c10::kQInt32:
      return {std::numeric_limits<int32_t>::min(), std::numeric_limits<int32_t>::max()};
    case c10::kQUInt4x2:
      return {0, 15};
    case c10::kQUInt2x4:
      return {0, 3};
    default:
      TORCH_CHECK(false, "not a quantized dtype: ", quantized_type);
  }
}

at::Tensor integer_view(const at::Tensor& qtensor) {
  TORCH_CHECK(!is_sub_byte(qtensor.scalar_type()), "integer_view: the elements of a bit-packed ",
              qtensor.scalar_type(), " tensor are not addressable");
  auto plain = at::empty({0}, qtensor.options().dtype(stored_integer_type(qtensor.scalar_type())));
  plain.set_(qtensor.storage(), qtensor.storage_offset(), qtensor.sizes(), qtensor.strides());
  return plain;
}

at::Tensor packed_bytes_view(const at::Tensor& qtensor) {
  TORCH_CHECK(qtensor.is_contiguous(), "a bit-packed ", qtensor.scalar_type(),
              " tensor must be contiguous to be copied");
  const int64_t bits = qtensor.scalar_type() == c10::kQUInt4x2   ? 4
                       : qtensor.scalar_type() == c10::kQUInt2x4 ? 2
                                                                 : 8 * qtensor.element_size();
  const int64_t bytes = (qtensor.numel() * bits + 7) / 8;
  auto plain = at::empty({0}, qtensor.options().dtype(c10::kByte));
  plain.set_(qtensor.storage(), qtensor.storage_offset() * bits / 8, {bytes}, {1});
  return plain;
}

}  // namespace openneuron::bridge::quantized
