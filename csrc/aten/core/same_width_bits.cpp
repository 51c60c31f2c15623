#include "aten/core/same_width_bits.h"

namespace openneuron::bridge {

at::Tensor same_width_bits(const at::Tensor& tensor) {
  if (at::isQIntType(tensor.scalar_type())) return at::Tensor();
  switch (tensor.element_size()) {
    case 1:
      return tensor.view(at::kByte);
    case 2:
      return tensor.view(at::kShort);
    case 4:
      return tensor.view(at::kInt);
    case 8:
      return tensor.view(at::kLong);
    default:
      return at::Tensor();
  }
}

}  // namespace openneuron::bridge
