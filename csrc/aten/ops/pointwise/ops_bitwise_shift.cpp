// Python's << and >> on device tensors (`__lshift__` and kin): the same ops as
// bitwise_left_shift / bitwise_right_shift, whose native kernels are registered with the
// elementwise family. Their names end in '_', so they cannot go through the boxed pointwise
// kernel, which reads a trailing '_' as "in place".
#include <ATen/ATen.h>
#include <torch/library.h>

namespace openneuron::bridge {

namespace {

at::Tensor shift_left_by_scalar(const at::Tensor& self, const at::Scalar& other) {
  return at::bitwise_left_shift(self, other);
}
at::Tensor shift_left_by_tensor(const at::Tensor& self, const at::Tensor& other) {
  return at::bitwise_left_shift(self, other);
}
at::Tensor& shift_left_in_place_by_scalar(at::Tensor& self, const at::Scalar& other) {
  return self.bitwise_left_shift_(other);
}
at::Tensor& shift_left_in_place_by_tensor(at::Tensor& self, const at::Tensor& other) {
  return self.bitwise_left_shift_(other);
}
at::Tensor shift_right_by_scalar(const at::Tensor& self, const at::Scalar& other) {
  return at::bitwise_right_shift(self, other);
}
at::Tensor shift_right_by_tensor(const at::Tensor& self, const at::Tensor& other) {
  return at::bitwise_right_shift(self, other);
}
at::Tensor& shift_right_in_place_by_scalar(at::Tensor& self, const at::Scalar& other) {
  return self.bitwise_right_shift_(other);
}
at::Tensor& shift_right_in_place_by_tensor(at::Tensor& self, const at::Tensor& other) {
  return self.bitwise_right_shift_(other);
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("__lshift__.Scalar", TORCH_FN(shift_left_by_scalar));
  m.impl("__lshift__.Tensor", TORCH_FN(shift_left_by_tensor));
  m.impl("__ilshift__.Scalar", TORCH_FN(shift_left_in_place_by_scalar));
  m.impl("__ilshift__.Tensor", TORCH_FN(shift_left_in_place_by_tensor));
  m.impl("__rshift__.Scalar", TORCH_FN(shift_right_by_scalar));
  m.impl("__rshift__.Tensor", TORCH_FN(shift_right_by_tensor));
  m.impl("__irshift__.Scalar", TORCH_FN(shift_right_in_place_by_scalar));
  m.impl("__irshift__.Tensor", TORCH_FN(shift_right_in_place_by_tensor));
}

}  // namespace openneuron::bridge
