// trace: the sum of a matrix's diagonal, as a strided view summed by the native reduction, so
// it takes every dtype the sum does (bool and integers sum to int64, as CUDA's trace does).
#include <ATen/ATen.h>
#include <torch/library.h>

namespace openneuron::bridge {

namespace {

at::Tensor trace_of_matrix(const at::Tensor& self) {
  TORCH_CHECK(self.dim() == 2, "trace: expected a matrix, but got tensor with dim ", self.dim());
  return at::sum(self.diagonal());
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) { m.impl("trace", TORCH_FN(trace_of_matrix)); }

}  // namespace openneuron::bridge
