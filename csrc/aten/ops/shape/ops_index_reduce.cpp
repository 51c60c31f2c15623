// index_reduce (prod, mean, amax, amin) on the device's scatter kernel: the 1-D index along
// `dim` is broadcast over source's other dims, which makes it a scatter_reduce.
#include <ATen/Functions.h>
#include <ATen/MemoryOverlap.h>
#include <ATen/WrapDimUtils.h>
#include <ATen/native/Resize.h>
#include <c10/core/DeviceGuard.h>

#include "aten/core/op_helpers.h"
#include "aten/core/op_tracking.h"
#include "aten/core/tensor_views.h"
#include "aten/fallback/fallback.h"
#include "aten/ops/ops_reduce_index.h"
#include "aten/ops/shape/index_bounds.h"
#include "kernels/pointwise/cast.h"
#include "kernels/shape/indexing.h"

namespace openneuron::bridge {

namespace {

std::optional<kernels::ScatterReduce> index_reduction(c10::string_view reduce) {
  if (reduce == "prod") return kernels::ScatterReduce::Prod;
  if (reduce == "mean") return kernels::ScatterReduce::Mean;
  if (reduce == "amax") return kernels::ScatterReduce::Max;
  if (reduce == "amin") return kernels::ScatterReduce::Min;
  return std::nullopt;
}

// True when the device computes the call; every argument the CPU would refuse (shapes,
// dtypes, an index out of [0, size), an unknown reduction, overlaps) leaves it to the CPU's
// kernel, which raises its own error.
bool index_reduce_is_native(const at::Tensor& self, int64_t dim, const at::Tensor& index,
                            const at::Tensor& source, c10::string_view reduce,
                            const at::Tensor& out, bool writes_into_out) {
  if (!is_native_compute_dtype(self.scalar_type()) || source.scalar_type() != self.scalar_type() ||
      out.scalar_type() != self.scalar_type() || index.scalar_type() != at::kLong ||
      index.dim() > 1 || self.dim() > kernels::kMaxDims || !index_reduction(reduce).has_value() ||
      source.device() != self.device() || out.device() != self.device()) {
    return false;
  }
  if (self.dim() == 0) {  // a scalar: one index, 0, and a one-element source
    return (dim == 0 || dim == -1) && source.dim() <= 1 && source.numel() == 1 &&
           index.numel() == 1 && !first_index_outside(index, 0, 1).has_value();
  }
  if (source.dim() != self.dim()) return false;
  if (dim < -self.dim() || dim >= self.dim()) return false;
  const int64_t wrapped = at::maybe_wrap_dim(dim, self.dim());
  if (index.numel() != source.size(wrapped)) return false;
  for (int64_t d = 0; d < self.dim(); ++d) {
    if (d != wrapped && self.size(d) != source.size(d)) return false;
  }
  // As assert_no_overlap: only overlaps that can be proven count (strided views are "too hard").
  const auto overlaps = [&](const at::Tensor& other) {
    const at::MemOverlapStatus status = at::get_overlap_status(out, other);
    return status == at::MemOverlapStatus::Full || status == at::MemOverlapStatus::Partial;
  };
  if (writes_into_out && (at::has_internal_overlap(out) == at::MemOverlap::Yes || overlaps(index) ||
                          overlaps(source))) {
    return false;
  }
  return !first_index_outside(index, 0, self.size(wrapped)).has_value();
}

at::Tensor& index_reduce_into(const at::Tensor& self, int64_t dim, const at::Tensor& index,
                              const at::Tensor& source, c10::string_view reduce, bool include_self,
                              at::Tensor& out) {
  const c10::DeviceGuard guard(self.device());
  const int64_t wrapped = at::maybe_wrap_dim(dim, self.dim());
  if (!out.is_same(self)) {
    at::native::resize_output(out, self.sizes());
    out.copy_(self);
  }
  if (index.numel() == 0 || out.numel() == 0) return out;
  const at::Tensor idx = index.device() == self.device() ? index : index.to(self.device());
  // A scalar self is reduced as one element of 1-D views.
  const at::Tensor target = out.dim() == 0 ? out.view({1}) : out;
  const at::Tensor values = out.dim() == 0 ? source.reshape({1}) : source;
  // The index along `dim`, stride 0 along every other dim of source.
  kernels::TensorView index_view = view_of(idx);
  const int64_t index_stride = idx.dim() == 0 ? 1 : idx.stride(0);
  index_view.ndim = static_cast<int>(values.dim());
  for (int64_t d = 0; d < values.dim(); ++d) {
    index_view.sizes[d] = values.size(d);
    index_view.strides[d] = d == wrapped ? index_stride : 0;
  }
  const kernels::TensorView self_view = view_of(target);
  const kernels::TensorView source_view = view_of(values);
  const kernels::ScatterReduce op = *index_reduction(reduce);
  const int d = static_cast<int>(wrapped);
  // The CPU's index_reduce rounds a 16-bit result after every contribution.
  stream_for(out).enqueue("aten::index_reduce", [=] {
    kernels::scatter_rounding_each_step(op, include_self, self_view, d, index_view, source_view,
                                        kernels::Scalar{});
  });
  return out;
}

}  // namespace

at::Tensor& index_reduce_out(const at::Tensor& self, int64_t dim, const at::Tensor& index,
                             const at::Tensor& source, c10::string_view reduce, bool include_self,
                             at::Tensor& out) {
  if (!index_reduce_is_native(self, dim, index, source, reduce, out, true)) {
    return OPENNEURON_FALLBACK(index_reduce_out, self, dim, index, source, reduce, include_self,
                               out);
  }
  OPENNEURON_NATIVE_OP("aten::index_reduce.out");
  return index_reduce_into(self, dim, index, source, reduce, include_self, out);
}

at::Tensor& index_reduce_(at::Tensor& self, int64_t dim, const at::Tensor& index,
                          const at::Tensor& source, c10::string_view reduce, bool include_self) {
  if (!index_reduce_is_native(self, dim, index, source, reduce, self, true)) {
    return OPENNEURON_FALLBACK(index_reduce_, self, dim, index, source, reduce, include_self);
  }
  OPENNEURON_NATIVE_OP("aten::index_reduce_");
  return index_reduce_into(self, dim, index, source, reduce, include_self, self);
}

at::Tensor index_reduce(const at::Tensor& self, int64_t dim, const at::Tensor& index,
                        const at::Tensor& source, c10::string_view reduce, bool include_self) {
  if (!index_reduce_is_native(self, dim, index, source, reduce, self, false)) {
    return OPENNEURON_FALLBACK(index_reduce, self, dim, index, source, reduce, include_self);
  }
  OPENNEURON_NATIVE_OP("aten::index_reduce");
  at::Tensor out = at::empty_like(self, at::MemoryFormat::Contiguous);
  return index_reduce_into(self, dim, index, source, reduce, include_self, out);
}

}  // namespace openneuron::bridge
