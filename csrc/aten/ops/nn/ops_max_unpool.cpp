// max_unpool2d / max_unpool3d: each input value is scattered to the flat position its index
// names in a zeroed output plane (the last of duplicate indices wins, as in the CPU's loop).
#include <ATen/Functions.h>
#include <c10/core/DeviceGuard.h>

#include "aten/core/op_tracking.h"
#include "aten/core/tensor_views.h"
#include "aten/fallback/fallback.h"
#include "aten/ops/ops_reduce_index.h"
#include "aten/ops/shape/index_bounds.h"

namespace openneuron::bridge {

namespace {

// True when the device computes the call: anything the CPU refuses (dtypes, ranks, shapes,
// an index outside the output plane) is left to the CPU's kernel, which raises its error.
bool max_unpool_is_native(const at::Tensor& self, const at::Tensor& indices,
                          at::IntArrayRef output_size, int64_t spatial_dims) {
  if (!is_native_compute_dtype(self.scalar_type()) || self.scalar_type() == at::kBool ||
      indices.scalar_type() != at::kLong || indices.device() != self.device() ||
      static_cast<int64_t>(output_size.size()) != spatial_dims ||
      (self.dim() != spatial_dims + 1 && self.dim() != spatial_dims + 2) ||
      !self.sizes().equals(indices.sizes()) || self.numel() == 0) {
    return false;
  }
  int64_t plane = 1;
  for (int64_t size : output_size) {
    if (size <= 0) return false;
    plane *= size;
  }
  return !first_index_outside(indices, 0, plane).has_value();
}

at::Tensor unpool(const at::Tensor& self, const at::Tensor& indices, at::IntArrayRef output_size,
                  int64_t spatial_dims) {
  const c10::DeviceGuard guard(self.device());
  const int64_t lead = self.dim() - spatial_dims;
  std::vector<int64_t> flat_shape(self.sizes().begin(), self.sizes().begin() + lead);
  std::vector<int64_t> out_shape = flat_shape;
  int64_t plane = 1;
  for (int64_t size : output_size) {
    out_shape.push_back(size);
    plane *= size;
  }
  std::vector<int64_t> in_flat = flat_shape;
  in_flat.push_back(-1);
  flat_shape.push_back(plane);
  at::Tensor out = at::zeros(flat_shape, self.options());
  out.scatter_(-1, indices.reshape(in_flat), self.reshape(in_flat));
  // The CPU lays the result out in the input's suggested memory format.
  return out.view(out_shape).contiguous(self.suggest_memory_format());
}

}  // namespace

at::Tensor max_unpool2d(const at::Tensor& self, const at::Tensor& indices,
                        at::IntArrayRef output_size) {
  if (!max_unpool_is_native(self, indices, output_size, 2)) {
    return OPENNEURON_FALLBACK(max_unpool2d, self, indices, output_size);
  }
  OPENNEURON_NATIVE_OP("aten::max_unpool2d");
  return unpool(self, indices, output_size, 2);
}

at::Tensor max_unpool3d(const at::Tensor& self, const at::Tensor& indices,
                        at::IntArrayRef output_size, at::IntArrayRef stride,
                        at::IntArrayRef padding) {
  // The CPU also checks stride and padding (three positive strides, three paddings).
  const bool window_ok =
      stride.size() == 3 && padding.size() == 3 && stride[0] > 0 && stride[1] > 0 && stride[2] > 0;
  if (!window_ok || !max_unpool_is_native(self, indices, output_size, 3)) {
    return OPENNEURON_FALLBACK(max_unpool3d, self, indices, output_size, stride, padding);
  }
  OPENNEURON_NATIVE_OP("aten::max_unpool3d");
  return unpool(self, indices, output_size, 3);
}

}  // namespace openneuron::bridge
