// Indexing on the device: index_select, gather, scatter family, advanced indexing
// (index.Tensor, index_put_), index_add, masked_select, nonzero, embedding backward.
#include <ATen/ExpandUtils.h>
#include <ATen/Functions.h>
#include <ATen/MemoryOverlap.h>
#include <ATen/WrapDimUtils.h>
#include <ATen/native/Resize.h>
#include <c10/core/DeviceGuard.h>

#include <sstream>

#include "aten/core/op_helpers.h"
#include "aten/core/op_tracking.h"
#include "aten/core/runtime_errors.h"
#include "aten/core/tensor_views.h"
#include "aten/fallback/fallback.h"
#include "aten/ops/ops_reduce_index.h"
#include "aten/ops/shape/index_bounds.h"
#include "kernels/pointwise/cast.h"
#include "kernels/shape/indexing.h"

namespace openneuron::bridge {

namespace {

bool is_index_dtype(at::ScalarType type) { return type == at::kLong || type == at::kInt; }

// How an op treats index values, and which error the CPU raises for one out of range.
enum class IndexRule {
  kAdvanced,  // negative values count from the end; IndexError
  kSelect,    // [0, size) only; IndexError "index out of range in self" (index_select, embedding)
  kAdd,       // [0, size) only; RuntimeError (index_add, gather, scatter)
};

// Raises, before anything is queued, if an index value is out of range for a dim of dim_size.
void check_index_range(const at::Tensor& index, int64_t dim_size, int64_t dim, IndexRule rule) {
  // Advanced indexing names no value for a non-empty index into a size-0 dim, as the CPU.
  TORCH_CHECK_INDEX(rule != IndexRule::kAdvanced || dim_size != 0 || index.numel() == 0,
                    "index is out of bounds for dimension with size 0");
  const int64_t lo = rule == IndexRule::kAdvanced ? -dim_size : 0;
  const std::optional<int64_t> bad = first_index_outside(index, lo, dim_size);
  if (!bad.has_value()) return;
  // The CPU's index_select raises IndexError along dim 0 and RuntimeError along others.
  if (rule == IndexRule::kAdd || (rule == IndexRule::kSelect && dim != 0)) {
    TORCH_CHECK(false, rule == IndexRule::kSelect ? "INDICES element is out of DATA bounds: " : "",
                "index ", *bad, " is out of bounds for dimension ", dim, " with size ", dim_size);
  }
  TORCH_CHECK_INDEX(false, rule == IndexRule::kSelect ? "index out of range in self: " : "",
                    "index ", *bad, " is out of bounds for dimension ", dim, " with size ",
                    dim_size);
}

// An index tensor on self's device, its values checked against dim_size first.
at::Tensor device_index(const at::Tensor& index, const at::Tensor& self, int64_t dim_size,
                        int64_t dim, IndexRule rule) {
  if (is_index_dtype(index.scalar_type())) check_index_range(index, dim_size, dim, rule);
  return index.is_privateuseone() ? index : index.to(self.device());
}

// A 0-dim index viewed as 1-D (kernels index along real dims only).
kernels::TensorView as_1d_view(const at::Tensor& index) {
  kernels::TensorView view = view_of(index);
  if (view.ndim == 0) {
    view.ndim = 1;
    view.sizes[0] = 1;
    view.strides[0] = 1;
  }
  return view;
}

void enqueue_copy(const at::Tensor& dst, const at::Tensor& src) {
  if (dst.numel() == 0 || dst.is_same(src)) return;
  const kernels::TensorView dst_view = view_of(dst);
  const kernels::TensorView src_view = broadcast_view(src, dst.sizes());
  stream_for(dst).enqueue("aten::copy_", [=] { kernels::copy(dst_view, src_view); });
}

void enqueue_zero(const at::Tensor& dst) {
  if (dst.numel() == 0) return;
  const kernels::TensorView view = view_of(dst);
  stream_for(dst).enqueue("aten::zero_",
                          [=] { kernels::fill(view, kernels::Scalar::from_int(0)); });
}

void synchronize(const at::Tensor& t) { OPENNEURON_RUNTIME_CALL(stream_for(t).synchronize()); }

}  // namespace

// ---- index_select ----------------------------------------------------------------------

at::Tensor& index_select_out(const at::Tensor& self, int64_t dim, const at::Tensor& index,
                             at::Tensor& out) {
  if (!is_native_compute_dtype(self.scalar_type()) || !is_index_dtype(index.scalar_type()) ||
      index.dim() > 1) {
    return OPENNEURON_FALLBACK(index_select_out, self, dim, index, out);
  }
  OPENNEURON_NATIVE_OP("aten::index_select.out");
  const c10::DeviceGuard guard(self.device());
  check_same_device("index_select.out", {&self, &out});
  TORCH_CHECK(out.scalar_type() == self.scalar_type(),
              "index_select(): self and out must share a dtype");
  const int64_t wrapped = at::maybe_wrap_dim(dim, self.dim());
  if (self.dim() == 0) {  // a scalar: its one index must be 0, and the result is the scalar
    TORCH_CHECK(index.numel() == 1, "index_select(): Index to scalar can have only 1 value, got ",
                index.numel(), " value(s)");
    TORCH_CHECK_INDEX(!first_index_outside(index, 0, 1).has_value(), "index out of range in self");
    at::native::resize_output(out, {});
    enqueue_copy(out, self);
    return out;
  }
  const at::Tensor idx = device_index(index, self, self.size(wrapped), wrapped, IndexRule::kSelect);
  std::vector<int64_t> shape(self.sizes().begin(), self.sizes().end());
  shape[wrapped] = idx.numel();
  at::native::resize_output(out, shape);
  if (out.numel() == 0 && idx.numel() == 0) return out;
  const kernels::TensorView out_view = view_of(out);
  const kernels::TensorView in_view = view_of(self);
  const kernels::TensorView index_view = as_1d_view(idx);
  const int first = static_cast<int>(wrapped);
  stream_for(out).enqueue("aten::index_select",
                          [=] { kernels::index_gather(out_view, in_view, first, &index_view, 1); });
  return out;
}

at::Tensor index_select(const at::Tensor& self, int64_t dim, const at::Tensor& index) {
  if (!is_native_compute_dtype(self.scalar_type()) || !is_index_dtype(index.scalar_type()) ||
      index.dim() > 1) {
    return OPENNEURON_FALLBACK(index_select, self, dim, index);
  }
  OPENNEURON_NATIVE_OP("aten::index_select");
  const c10::DeviceGuard guard(self.device());
  at::Tensor out = at::empty({0}, self.options());
  return index_select_out(self, dim, index, out);
}

// ---- gather ----------------------------------------------------------------------------

namespace {

void check_gather_shapes(const char* name, const at::Tensor& self, int64_t dim,
                         const at::Tensor& index, const at::Tensor* src) {
  // As the CPU: an empty index of any dtype and shape is accepted.
  if (index.numel() == 0) return;
  TORCH_CHECK(is_index_dtype(index.scalar_type()), name,
              "(): Expected dtype int32/int64 for index");
  TORCH_CHECK(std::max<int64_t>(index.dim(), 1) == std::max<int64_t>(self.dim(), 1), name,
              "(): Index tensor must have the same number of dimensions as input tensor");
  for (int64_t d = 0; d < index.dim(); ++d) {
    if (d == dim) continue;
    TORCH_CHECK(index.size(d) <= self.size(d), "Size does not match at dimension ", d,
                " expected index ", index.sizes(), " to be no larger than self ", self.sizes(),
                " apart from dimension ", dim);
    if (src != nullptr) {
      TORCH_CHECK(index.size(d) <= src->size(d), "Expected index ", index.sizes(),
                  " to be no larger than src ", src->sizes());
    }
  }
}

}  // namespace

at::Tensor& gather_out(const at::Tensor& self, int64_t dim, const at::Tensor& index,
                       bool sparse_grad, at::Tensor& out) {
  if (!is_native_compute_dtype(self.scalar_type()) ||
      !(is_index_dtype(index.scalar_type()) || index.numel() == 0)) {
    return OPENNEURON_FALLBACK(gather_out, self, dim, index, sparse_grad, out);
  }
  OPENNEURON_NATIVE_OP("aten::gather.out");
  const c10::DeviceGuard guard(self.device());
  check_same_device("gather.out", {&self, &index, &out});
  const int64_t wrapped = at::maybe_wrap_dim(dim, self.dim());
  check_gather_shapes("gather", self, wrapped, index, nullptr);
  TORCH_CHECK(out.scalar_type() == self.scalar_type(), "gather(): self and out must share a dtype");
  if (index.numel() > 0)
    check_index_range(index, self.dim() == 0 ? 1 : self.size(wrapped), wrapped, IndexRule::kAdd);
  at::native::resize_output(out, index.sizes());
  if (out.numel() == 0) return out;
  const kernels::TensorView out_view = view_of(out);
  const kernels::TensorView in_view = view_of(self);
  const kernels::TensorView index_view = view_of(index);
  const int d = static_cast<int>(wrapped);
  stream_for(out).enqueue("aten::gather",
                          [=] { kernels::gather(out_view, in_view, d, index_view); });
  return out;
}

at::Tensor gather(const at::Tensor& self, int64_t dim, const at::Tensor& index, bool sparse_grad) {
  if (!is_native_compute_dtype(self.scalar_type()) ||
      !(is_index_dtype(index.scalar_type()) || index.numel() == 0)) {
    return OPENNEURON_FALLBACK(gather, self, dim, index, sparse_grad);
  }
  OPENNEURON_NATIVE_OP("aten::gather");
  const c10::DeviceGuard guard(self.device());
  at::Tensor out = at::empty({0}, self.options());
  return gather_out(self, dim, index, sparse_grad, out);
}

// ---- scatter family --------------------------------------------------------------------

namespace {

// Scatters into `target` (already holding self's values) in stream order.
void launch_scatter(const char* name, kernels::ScatterReduce op, bool include_self,
                    const at::Tensor& target, int64_t dim, const at::Tensor& index,
                    const at::Tensor* src, const at::Scalar* value) {
  const int64_t wrapped = at::maybe_wrap_dim(dim, target.dim());
  check_gather_shapes(name, target, wrapped, index, src);
  if (src != nullptr) {
    TORCH_CHECK(src->scalar_type() == target.scalar_type(), name,
                "(): Expected self.dtype to be equal to src.dtype");
  }
  if (index.numel() == 0) return;
  check_index_range(index, target.dim() == 0 ? 1 : target.size(wrapped), wrapped, IndexRule::kAdd);
  const kernels::TensorView self_view = view_of(target);
  const kernels::TensorView index_view = view_of(index);
  kernels::TensorView src_view;
  if (src != nullptr) src_view = view_of(*src);
  const kernels::Scalar scalar = value != nullptr ? kernel_scalar(*value) : kernels::Scalar{};
  const int d = static_cast<int>(wrapped);
  stream_for(target).enqueue(name, [=] {
    kernels::scatter(op, include_self, self_view, d, index_view, src_view, scalar);
  });
}

bool scatter_is_native(const at::Tensor& self, const at::Tensor& index, const at::Tensor* src) {
  return is_native_compute_dtype(self.scalar_type()) &&
         (is_index_dtype(index.scalar_type()) || index.numel() == 0) && index.is_privateuseone() &&
         (src == nullptr || src->is_privateuseone());
}

at::Tensor scatter_functional(const char* name, kernels::ScatterReduce op, bool include_self,
                              const at::Tensor& self, int64_t dim, const at::Tensor& index,
                              const at::Tensor* src, const at::Scalar* value) {
  const c10::DeviceGuard guard(self.device());
  at::Tensor out = at::empty_like(self, at::MemoryFormat::Contiguous);
  enqueue_copy(out, self);
  launch_scatter(name, op, include_self, out, dim, index, src, value);
  return out;
}

at::Tensor& scatter_into(const char* name, kernels::ScatterReduce op, bool include_self,
                         const at::Tensor& self, int64_t dim, const at::Tensor& index,
                         const at::Tensor* src, const at::Scalar* value, at::Tensor& out) {
  const c10::DeviceGuard guard(self.device());
  check_same_device(name, {&self, &index, &out});
  TORCH_CHECK(out.scalar_type() == self.scalar_type(), name, "(): self and out must share a dtype");
  // As the CPU's and CUDA's scatter: the written tensor shares no memory with what it reads.
  at::assert_no_internal_overlap(out);
  at::assert_no_overlap(out, index);
  if (src != nullptr) at::assert_no_overlap(out, *src);
  if (!out.is_same(self)) {
    at::native::resize_output(out, self.sizes());
    enqueue_copy(out, self);
  }
  launch_scatter(name, op, include_self, out, dim, index, src, value);
  return out;
}

kernels::ScatterReduce reduce_of(c10::string_view reduce) {
  if (reduce == "sum") return kernels::ScatterReduce::Add;
  if (reduce == "prod") return kernels::ScatterReduce::Prod;
  if (reduce == "mean") return kernels::ScatterReduce::Mean;
  if (reduce == "amax") return kernels::ScatterReduce::Max;
  if (reduce == "amin") return kernels::ScatterReduce::Min;
  TORCH_CHECK(false, "reduce argument must be either sum, prod, mean, amax or amin, got ", reduce);
}

}  // namespace

at::Tensor scatter_src(const at::Tensor& self, int64_t dim, const at::Tensor& index,
                       const at::Tensor& src) {
  if (!scatter_is_native(self, index, &src))
    return OPENNEURON_FALLBACK(scatter_src, self, dim, index, src);
  OPENNEURON_NATIVE_OP("aten::scatter.src");
  return scatter_functional("scatter", kernels::ScatterReduce::Assign, true, self, dim, index, &src,
                            nullptr);
}

at::Tensor& scatter_src_(at::Tensor& self, int64_t dim, const at::Tensor& index,
                         const at::Tensor& src) {
  if (!scatter_is_native(self, index, &src))
    return OPENNEURON_FALLBACK(scatter__src, self, dim, index, src);
  OPENNEURON_NATIVE_OP("aten::scatter_.src");
  return scatter_into("scatter_", kernels::ScatterReduce::Assign, true, self, dim, index, &src,
                      nullptr, self);
}

at::Tensor& scatter_src_out(const at::Tensor& self, int64_t dim, const at::Tensor& index,
                            const at::Tensor& src, at::Tensor& out) {
  if (!scatter_is_native(self, index, &src)) {
    return OPENNEURON_FALLBACK(scatter_src_out, self, dim, index, src, out);
  }
  OPENNEURON_NATIVE_OP("aten::scatter.src_out");
  return scatter_into("scatter", kernels::ScatterReduce::Assign, true, self, dim, index, &src,
                      nullptr, out);
}

at::Tensor scatter_value(const at::Tensor& self, int64_t dim, const at::Tensor& index,
                         const at::Scalar& value) {
  if (!scatter_is_native(self, index, nullptr))
    return OPENNEURON_FALLBACK(scatter_value, self, dim, index, value);
  OPENNEURON_NATIVE_OP("aten::scatter.value");
  return scatter_functional("scatter", kernels::ScatterReduce::Assign, true, self, dim, index,
                            nullptr, &value);
}

at::Tensor& scatter_value_(at::Tensor& self, int64_t dim, const at::Tensor& index,
                           const at::Scalar& value) {
  if (!scatter_is_native(self, index, nullptr))
    return OPENNEURON_FALLBACK(scatter__value, self, dim, index, value);
  OPENNEURON_NATIVE_OP("aten::scatter_.value");
  return scatter_into("scatter_", kernels::ScatterReduce::Assign, true, self, dim, index, nullptr,
                      &value, self);
}

at::Tensor& scatter_value_out(const at::Tensor& self, int64_t dim, const at::Tensor& index,
                              const at::Scalar& value, at::Tensor& out) {
  if (!scatter_is_native(self, index, nullptr)) {
    return OPENNEURON_FALLBACK(scatter_value_out, self, dim, index, value, out);
  }
  OPENNEURON_NATIVE_OP("aten::scatter.value_out");
  return scatter_into("scatter", kernels::ScatterReduce::Assign, true, self, dim, index, nullptr,
                      &value, out);
}

at::Tensor scatter_add(const at::Tensor& self, int64_t dim, const at::Tensor& index,
                       const at::Tensor& src) {
  if (!scatter_is_native(self, index, &src))
    return OPENNEURON_FALLBACK(scatter_add, self, dim, index, src);
  OPENNEURON_NATIVE_OP("aten::scatter_add");
  return scatter_functional("scatter_add", kernels::ScatterReduce::Add, true, self, dim, index,
                            &src, nullptr);
}

at::Tensor& scatter_add_(at::Tensor& self, int64_t dim, const at::Tensor& index,
                         const at::Tensor& src) {
  if (!scatter_is_native(self, index, &src))
    return OPENNEURON_FALLBACK(scatter_add_, self, dim, index, src);
  OPENNEURON_NATIVE_OP("aten::scatter_add_");
  return scatter_into("scatter_add_", kernels::ScatterReduce::Add, true, self, dim, index, &src,
                      nullptr, self);
}

at::Tensor& scatter_add_out(const at::Tensor& self, int64_t dim, const at::Tensor& index,
                            const at::Tensor& src, at::Tensor& out) {
  if (!scatter_is_native(self, index, &src)) {
    return OPENNEURON_FALLBACK(scatter_add_out, self, dim, index, src, out);
  }
  OPENNEURON_NATIVE_OP("aten::scatter_add.out");
  return scatter_into("scatter_add", kernels::ScatterReduce::Add, true, self, dim, index, &src,
                      nullptr, out);
}

at::Tensor scatter_reduce_two(const at::Tensor& self, int64_t dim, const at::Tensor& index,
                              const at::Tensor& src, c10::string_view reduce, bool include_self) {
  if (!scatter_is_native(self, index, &src)) {
    return OPENNEURON_FALLBACK(scatter_reduce_two, self, dim, index, src, reduce, include_self);
  }
  OPENNEURON_NATIVE_OP("aten::scatter_reduce.two");
  return scatter_functional("scatter_reduce", reduce_of(reduce), include_self, self, dim, index,
                            &src, nullptr);
}

at::Tensor& scatter_reduce_two_(at::Tensor& self, int64_t dim, const at::Tensor& index,
                                const at::Tensor& src, c10::string_view reduce, bool include_self) {
  if (!scatter_is_native(self, index, &src)) {
    return OPENNEURON_FALLBACK(scatter_reduce__two, self, dim, index, src, reduce, include_self);
  }
  OPENNEURON_NATIVE_OP("aten::scatter_reduce_.two");
  return scatter_into("scatter_reduce_", reduce_of(reduce), include_self, self, dim, index, &src,
                      nullptr, self);
}

at::Tensor& scatter_reduce_two_out(const at::Tensor& self, int64_t dim, const at::Tensor& index,
                                   const at::Tensor& src, c10::string_view reduce,
                                   bool include_self, at::Tensor& out) {
  if (!scatter_is_native(self, index, &src)) {
    return OPENNEURON_FALLBACK(scatter_reduce_two_out, self, dim, index, src, reduce, include_self,
                               out);
  }
  OPENNEURON_NATIVE_OP("aten::scatter_reduce.two_out");
  return scatter_into("scatter_reduce", reduce_of(reduce), include_self, self, dim, index, &src,
                      nullptr, out);
}

// ---- scatter with the older reduce= argument ("add" or "multiply", self included) -------

namespace {

std::optional<kernels::ScatterReduce> legacy_reduce_of(c10::string_view reduce) {
  if (reduce == "add") return kernels::ScatterReduce::Add;
  if (reduce == "multiply") return kernels::ScatterReduce::Prod;
  return std::nullopt;  // the CPU's kernel raises its own error
}

}  // namespace

at::Tensor scatter_reduce_legacy(const at::Tensor& self, int64_t dim, const at::Tensor& index,
                                 const at::Tensor& src, c10::string_view reduce) {
  const auto op = legacy_reduce_of(reduce);
  if (!op || !scatter_is_native(self, index, &src))
    return OPENNEURON_FALLBACK(scatter_reduce, self, dim, index, src, reduce);
  OPENNEURON_NATIVE_OP("aten::scatter.reduce");
  return scatter_functional("scatter", *op, true, self, dim, index, &src, nullptr);
}

at::Tensor& scatter_reduce_legacy_(at::Tensor& self, int64_t dim, const at::Tensor& index,
                                   const at::Tensor& src, c10::string_view reduce) {
  const auto op = legacy_reduce_of(reduce);
  if (!op || !scatter_is_native(self, index, &src))
    return OPENNEURON_FALLBACK(scatter__reduce, self, dim, index, src, reduce);
  OPENNEURON_NATIVE_OP("aten::scatter_.reduce");
  return scatter_into("scatter_", *op, true, self, dim, index, &src, nullptr, self);
}

at::Tensor& scatter_reduce_legacy_out(const at::Tensor& self, int64_t dim, const at::Tensor& index,
                                      const at::Tensor& src, c10::string_view reduce,
                                      at::Tensor& out) {
  const auto op = legacy_reduce_of(reduce);
  if (!op || !scatter_is_native(self, index, &src))
    return OPENNEURON_FALLBACK(scatter_reduce_out, self, dim, index, src, reduce, out);
  OPENNEURON_NATIVE_OP("aten::scatter.reduce_out");
  return scatter_into("scatter", *op, true, self, dim, index, &src, nullptr, out);
}

at::Tensor scatter_value_reduce(const at::Tensor& self, int64_t dim, const at::Tensor& index,
                                const at::Scalar& value, c10::string_view reduce) {
  const auto op = legacy_reduce_of(reduce);
  if (!op || !scatter_is_native(self, index, nullptr))
    return OPENNEURON_FALLBACK(scatter_value_reduce, self, dim, index, value, reduce);
  OPENNEURON_NATIVE_OP("aten::scatter.value_reduce");
  return scatter_functional("scatter", *op, true, self, dim, index, nullptr, &value);
}

at::Tensor& scatter_value_reduce_(at::Tensor& self, int64_t dim, const at::Tensor& index,
                                  const at::Scalar& value, c10::string_view reduce) {
  const auto op = legacy_reduce_of(reduce);
  if (!op || !scatter_is_native(self, index, nullptr))
    return OPENNEURON_FALLBACK(scatter__value_reduce, self, dim, index, value, reduce);
  OPENNEURON_NATIVE_OP("aten::scatter_.value_reduce");
  return scatter_into("scatter_", *op, true, self, dim, index, nullptr, &value, self);
}

at::Tensor& scatter_value_reduce_out(const at::Tensor& self, int64_t dim, const at::Tensor& index,
                                     const at::Scalar& value, c10::string_view reduce,
                                     at::Tensor& out) {
  const auto op = legacy_reduce_of(reduce);
  if (!op || !scatter_is_native(self, index, nullptr))
    return OPENNEURON_FALLBACK(scatter_value_reduce_out, self, dim, index, value, reduce, out);
  OPENNEURON_NATIVE_OP("aten::scatter.value_reduce_out");
  return scatter_into("scatter", *op, true, self, dim, index, nullptr, &value, out);
}

// ---- nonzero / masked_select -----------------------------------------------------------

at::Tensor& nonzero_out(const at::Tensor& self, at::Tensor& out) {
  // Checked first, for the host fallback too: check_same_device lets a 0-dim CPU tensor pass
  // (a wrapped scalar input), but an out= is written and must be on the device.
  TORCH_CHECK(out.device() == self.device(),
              "Expected all tensors to be on the same device, but found at least two devices, ",
              self.device(), " and ", out.device(), "! (in nonzero.out)");
  if (!is_native_compute_dtype(self.scalar_type()) || self.dim() > kernels::kMaxDims) {
    return OPENNEURON_FALLBACK(nonzero_out, self, out);
  }
  OPENNEURON_NATIVE_OP("aten::nonzero.out");
  const c10::DeviceGuard guard(self.device());
  check_same_device("nonzero.out", {&self, &out});
  TORCH_CHECK(out.scalar_type() == at::kLong,
              "nonzero(): Expected out tensor to have scalar type Long");
  // The output size depends on the data: wait for every queued write to self first.
  synchronize(self);
  const int64_t count = self.numel() == 0 ? 0 : kernels::count_nonzero(view_of(self));
  at::native::resize_output(out, {count, self.dim()});
  if (count == 0 || self.dim() == 0) return out;
  const kernels::TensorView out_view = view_of(out);
  const kernels::TensorView in_view = view_of(self);
  stream_for(out).enqueue("aten::nonzero", [=] { kernels::nonzero(out_view, in_view); });
  return out;
}

at::Tensor nonzero(const at::Tensor& self) {
  if (!is_native_compute_dtype(self.scalar_type()) || self.dim() > kernels::kMaxDims) {
    return OPENNEURON_FALLBACK(nonzero, self);
  }
  OPENNEURON_NATIVE_OP("aten::nonzero");
  const c10::DeviceGuard guard(self.device());
  at::Tensor out = at::empty({0}, self.options().dtype(at::kLong));
  return nonzero_out(self, out);
}

at::Tensor& masked_select_out(const at::Tensor& self, const at::Tensor& mask, at::Tensor& out) {
  if (!is_native_compute_dtype(self.scalar_type()) || mask.scalar_type() != at::kBool ||
      !mask.is_privateuseone()) {
    return OPENNEURON_FALLBACK(masked_select_out, self, mask, out);
  }
  OPENNEURON_NATIVE_OP("aten::masked_select.out");
  const c10::DeviceGuard guard(self.device());
  check_same_device("masked_select.out", {&self, &mask, &out});
  TORCH_CHECK(out.scalar_type() == self.scalar_type(),
              "masked_select(): self and out must share a dtype");
  const auto shape = at::infer_size(self.sizes(), mask.sizes());
  const kernels::TensorView mask_view = broadcast_view(mask, shape);
  // The output size depends on the mask's values: synchronize before reading them.
  synchronize(mask);
  const int64_t count = c10::multiply_integers(shape) == 0 ? 0 : kernels::count_nonzero(mask_view);
  at::native::resize_output(out, {count});
  if (count == 0) return out;
  const kernels::TensorView out_view = view_of(out);
  const kernels::TensorView in_view = broadcast_view(self, shape);
  stream_for(out).enqueue("aten::masked_select",
                          [=] { kernels::masked_select(out_view, in_view, mask_view); });
  return out;
}

at::Tensor masked_select(const at::Tensor& self, const at::Tensor& mask) {
  if (!is_native_compute_dtype(self.scalar_type()) || mask.scalar_type() != at::kBool ||
      !mask.is_privateuseone()) {
    return OPENNEURON_FALLBACK(masked_select, self, mask);
  }
  OPENNEURON_NATIVE_OP("aten::masked_select");
  const c10::DeviceGuard guard(self.device());
  at::Tensor out = at::empty({0}, self.options());
  return masked_select_out(self, mask, out);
}

// ---- advanced indexing -----------------------------------------------------------------

namespace {

// The indices of an advanced-indexing call, normalised: boolean masks replaced by the
// coordinates of their true elements, all on the device, broadcast to one shape, and the
// indexed dims made adjacent (moved to the front when PyTorch would do so).
struct AdvancedIndex {
  at::Tensor self;                  // possibly permuted so the indexed dims are adjacent
  int first = 0;                    // first indexed dim of `self`
  std::vector<at::Tensor> indices;  // one per indexed dim, broadcast to a common shape
  std::vector<int64_t> result_shape;
  bool moved_to_front = false;
  std::vector<int64_t> permutation;
};

AdvancedIndex make_advanced_index(const at::Tensor& self,
                                  const c10::List<std::optional<at::Tensor>>& index_list) {
  std::vector<at::Tensor> per_dim;  // undefined where a dim is not indexed
  for (const std::optional<at::Tensor>& entry : index_list) {
    if (!entry.has_value() || !entry->defined()) {
      per_dim.emplace_back();
      continue;
    }
    const at::Tensor& index = *entry;
    if (index.scalar_type() == at::kBool || index.scalar_type() == at::kByte) {
      if (index.scalar_type() == at::kByte) {  // PyTorch's own deprecation warning, word for word
        TORCH_WARN(
            "indexing with dtype torch.uint8 is now deprecated, please use a dtype torch.bool "
            "instead.");
      }
      const int64_t start = static_cast<int64_t>(per_dim.size());
      TORCH_CHECK_INDEX(start + index.dim() <= self.dim(),
                        "too many indices for tensor of dimension ", self.dim());
      for (int64_t d = 0; d < index.dim(); ++d) {
        TORCH_CHECK_INDEX(index.size(d) == self.size(start + d), "The shape of the mask ",
                          index.sizes(), " at index ", d,
                          " does not match the shape of the indexed tensor ", self.sizes(),
                          " at index ", start + d);
      }
      // The coordinates of the true elements become one index per mask dim.
      const at::Tensor mask = index.is_privateuseone() ? index : index.to(self.device());
      const at::Tensor coords = at::nonzero(mask);
      for (int64_t d = 0; d < index.dim(); ++d) per_dim.push_back(coords.select(1, d));
      continue;
    }
    TORCH_CHECK_INDEX(is_index_dtype(index.scalar_type()),
                      "tensors used as indices must be long, int, byte or bool tensors");
    const int64_t dim = static_cast<int64_t>(per_dim.size());
    TORCH_CHECK_INDEX(dim < self.dim(), "too many indices for tensor of dimension ", self.dim());
    per_dim.push_back(device_index(index, self, self.size(dim), dim, IndexRule::kAdvanced));
  }
  TORCH_CHECK_INDEX(static_cast<int64_t>(per_dim.size()) <= self.dim(),
                    "too many indices for tensor of dimension ", self.dim());
  while (static_cast<int64_t>(per_dim.size()) < self.dim()) per_dim.emplace_back();

  std::vector<at::Tensor> defined;
  std::vector<int64_t> indexed_dims;
  for (size_t d = 0; d < per_dim.size(); ++d) {
    if (per_dim[d].defined()) {
      defined.push_back(per_dim[d]);
      indexed_dims.push_back(static_cast<int64_t>(d));
    }
  }
  TORCH_CHECK(!defined.empty(), "index: at least one index tensor is needed");
  std::vector<at::Tensor> broadcast = defined;
  {
    std::vector<int64_t> shape = defined[0].sizes().vec();
    bool broadcastable = true;
    for (const at::Tensor& t : defined) {
      try {
        shape = at::infer_size(shape, t.sizes());
      } catch (const c10::Error&) {
        broadcastable = false;
        break;
      }
    }
    if (!broadcastable) {
      // An IndexError with PyTorch's message, as the CPU's indexing raises.
      std::ostringstream shapes;
      for (size_t i = 0; i < defined.size(); ++i) shapes << (i ? ", " : "") << defined[i].sizes();
      TORCH_CHECK_INDEX(false, "shape mismatch: indexing tensors could not be broadcast together ",
                        "with shapes ", shapes.str());
    }
    for (at::Tensor& t : broadcast) t = t.expand(shape);
  }
  bool adjacent = true;
  for (size_t i = 1; i < indexed_dims.size(); ++i) {
    if (indexed_dims[i] != indexed_dims[i - 1] + 1) adjacent = false;
  }
  AdvancedIndex result;
  result.indices = broadcast;
  const auto index_shape = broadcast[0].sizes();
  if (adjacent) {
    result.self = self;
    result.first = static_cast<int>(indexed_dims[0]);
  } else {
    // Non-adjacent indexed dims go first, as PyTorch orders the result.
    std::vector<int64_t> order = indexed_dims;
    for (int64_t d = 0; d < self.dim(); ++d) {
      if (!per_dim[d].defined()) order.push_back(d);
    }
    result.self = self.permute(order);
    result.first = 0;
    result.moved_to_front = true;
    result.permutation = order;
  }
  const int k = static_cast<int>(broadcast.size());
  for (int d = 0; d < result.first; ++d) result.result_shape.push_back(result.self.size(d));
  for (int64_t s : index_shape) result.result_shape.push_back(s);
  for (int64_t d = result.first + k; d < result.self.dim(); ++d)
    result.result_shape.push_back(result.self.size(d));
  return result;
}

bool index_list_is_native(const at::Tensor& self,
                          const c10::List<std::optional<at::Tensor>>& indices) {
  if (!is_native_compute_dtype(self.scalar_type()) || self.dim() == 0 ||
      self.dim() > kernels::kMaxDims)
    return false;
  for (const std::optional<at::Tensor>& entry : indices) {
    if (entry.has_value() && entry->defined() && entry->dim() > kernels::kMaxDims) return false;
  }
  return true;
}

std::vector<kernels::TensorView> index_views(const AdvancedIndex& advanced) {
  std::vector<kernels::TensorView> views;
  for (const at::Tensor& index : advanced.indices) views.push_back(view_of(index));
  return views;
}

}  // namespace

at::Tensor& index_tensor_out(const at::Tensor& self,
                             const c10::List<std::optional<at::Tensor>>& indices, at::Tensor& out) {
  if (!index_list_is_native(self, indices))
    return OPENNEURON_FALLBACK(index_Tensor_out, self, indices, out);
  OPENNEURON_NATIVE_OP("aten::index.Tensor_out");
  const c10::DeviceGuard guard(self.device());
  check_same_device("index.Tensor_out", {&self, &out});
  TORCH_CHECK(out.scalar_type() == self.scalar_type(), "index(): self and out must share a dtype");
  const AdvancedIndex advanced = make_advanced_index(self, indices);
  at::native::resize_output(out, advanced.result_shape);
  if (out.numel() == 0) return out;
  const kernels::TensorView out_view = view_of(out);
  const kernels::TensorView in_view = view_of(advanced.self);
  const std::vector<kernels::TensorView> views = index_views(advanced);
  const int first = advanced.first;
  stream_for(out).enqueue("aten::index", [=] {
    kernels::index_gather(out_view, in_view, first, views.data(), static_cast<int>(views.size()));
  });
  return out;
}

at::Tensor index_tensor(const at::Tensor& self,
                        const c10::List<std::optional<at::Tensor>>& indices) {
  if (!index_list_is_native(self, indices)) return OPENNEURON_FALLBACK(index_Tensor, self, indices);
  OPENNEURON_NATIVE_OP("aten::index.Tensor");
  const c10::DeviceGuard guard(self.device());
  at::Tensor out = at::empty({0}, self.options());
  return index_tensor_out(self, indices, out);
}

namespace {

// index_put_'s checks of the CPU and CUDA: an expanded self is written with a deprecation
// warning; the values and indices may not share memory with self.
void check_index_put_overlap(const at::Tensor& self,
                             const c10::List<std::optional<at::Tensor>>& indices,
                             const at::Tensor& values) {
  if (at::has_internal_overlap(self) == at::MemOverlap::Yes) {
    TORCH_WARN(
        "Use of index_put_ on expanded tensors is deprecated. Please clone() the tensor before "
        "performing this operation. This also applies to advanced indexing e.g. tensor[indices] "
        "= tensor");
  }
  at::assert_no_overlap(self, values);
  for (const std::optional<at::Tensor>& index : indices) {
    if (index.has_value() && index->defined()) at::assert_no_overlap(self, *index);
  }
}

}  // namespace

at::Tensor& index_put_impl_(at::Tensor& self, const c10::List<std::optional<at::Tensor>>& indices,
                            const at::Tensor& values, bool accumulate, bool unsafe) {
  check_index_put_overlap(self, indices, values);
  if (!index_list_is_native(self, indices) || values.scalar_type() != self.scalar_type()) {
    return OPENNEURON_FALLBACK(_index_put_impl_, self, indices, values, accumulate, unsafe);
  }
  OPENNEURON_NATIVE_OP("aten::_index_put_impl_");
  const c10::DeviceGuard guard(self.device());
  check_same_device("index_put_", {&self, &values});
  const at::Tensor device_values = values.is_privateuseone() ? values : values.to(self.device());
  const AdvancedIndex advanced = make_advanced_index(self, indices);
  TORCH_CHECK(at::is_expandable_to(device_values.sizes(), advanced.result_shape),
              "shape mismatch: value tensor of shape ", device_values.sizes(),
              " cannot be broadcast to indexing result of shape ",
              c10::IntArrayRef(advanced.result_shape));
  if (self.numel() == 0 || c10::multiply_integers(advanced.result_shape) == 0) return self;
  const kernels::TensorView self_view = view_of(advanced.self);
  const kernels::TensorView values_view = broadcast_view(device_values, advanced.result_shape);
  const std::vector<kernels::TensorView> views = index_views(advanced);
  const int first = advanced.first;
  const auto mode = accumulate ? kernels::IndexScatterMode::Add : kernels::IndexScatterMode::Assign;
  stream_for(self).enqueue("aten::_index_put_impl_", [=] {
    kernels::index_scatter(mode, self_view, values_view, first, views.data(),
                           static_cast<int>(views.size()), kernels::Scalar::from_int(1));
  });
  return self;
}

// ---- index_add -------------------------------------------------------------------------

namespace {

// index_add's checks of the CPU and CUDA: the written tensor holds each location once and
// shares no memory with the index or the source.
void check_index_add_overlap(const at::Tensor& out, const at::Tensor& index,
                             const at::Tensor& source) {
  at::assert_no_internal_overlap(out);
  at::assert_no_overlap(out, index);
  at::assert_no_overlap(out, source);
}

}  // namespace

at::Tensor& index_add_out(const at::Tensor& self, int64_t dim, const at::Tensor& index,
                          const at::Tensor& source, const at::Scalar& alpha, at::Tensor& out) {
  check_index_add_overlap(out, index, source);
  if (!is_native_compute_dtype(self.scalar_type()) || !is_index_dtype(index.scalar_type()) ||
      index.dim() > 1 || source.scalar_type() != self.scalar_type()) {
    return OPENNEURON_FALLBACK(index_add_out, self, dim, index, source, alpha, out);
  }
  OPENNEURON_NATIVE_OP("aten::index_add.out");
  const c10::DeviceGuard guard(self.device());
  check_same_device("index_add", {&self, &source, &out});
  const int64_t wrapped = at::maybe_wrap_dim(dim, self.dim());
  if (self.dim() == 0) {  // a scalar: one index, 0, and a one-element source (the CPU's errors)
    TORCH_CHECK_INDEX(!first_index_outside(index, 0, 1).has_value(), "index out of range in self");
    TORCH_CHECK(source.numel() == 1,
                "source tensor shape must match self tensor shape, excluding the specified "
                "dimension. Got self.shape = ",
                self.sizes(), " source.shape = ", source.sizes());
  }
  const int64_t dim_size = self.dim() == 0 ? 1 : self.size(wrapped);
  const at::Tensor idx = device_index(index, self, dim_size, wrapped, IndexRule::kAdd);
  TORCH_CHECK(
      source.dim() == self.dim() || (source.dim() <= 1 && self.dim() <= 1),
      "index_add_(): Source and destination tensors must have the same number of dimensions");
  TORCH_CHECK(idx.numel() == (source.dim() == 0 ? 1 : source.size(wrapped)),
              "index_add_(): Number of indices (", idx.numel(),
              ") should be equal to source.size(dim) (",
              source.dim() == 0 ? 1 : source.size(wrapped), ")");
  TORCH_CHECK(out.is_same(self) || out.scalar_type() == self.scalar_type(),
              "index_add(): self and out must share a dtype");
  if (self.scalar_type() == at::kHalf || self.scalar_type() == at::kBFloat16) {
    // Repeated indices add several values into one element: they are summed in fp32 and
    // rounded once (the design's rule; PyTorch's CPU kernel gives the same along the last
    // dimension), not rounded to the 16-bit type after every addition.
    at::Tensor wide = self.to(at::kFloat);
    index_add_out(wide, dim, idx, source.to(at::kFloat), alpha, wide);
    if (!out.is_same(self)) at::native::resize_output(out, self.sizes());
    out.copy_(wide);
    return out;
  }
  if (!out.is_same(self)) {
    at::native::resize_output(out, self.sizes());
    enqueue_copy(out, self);
  }
  if (idx.numel() == 0 || out.numel() == 0) return out;
  const kernels::TensorView self_view = as_1d_view(out);
  const kernels::TensorView values_view = as_1d_view(source);
  const kernels::TensorView index_view = as_1d_view(idx);
  const int first = static_cast<int>(wrapped);
  const kernels::Scalar alpha_value = kernel_scalar(alpha);
  stream_for(out).enqueue("aten::index_add", [=] {
    kernels::index_scatter(kernels::IndexScatterMode::Add, self_view, values_view, first,
                           &index_view, 1, alpha_value);
  });
  return out;
}

at::Tensor& index_add_(at::Tensor& self, int64_t dim, const at::Tensor& index,
                       const at::Tensor& source, const at::Scalar& alpha) {
  check_index_add_overlap(self, index, source);
  if (!is_native_compute_dtype(self.scalar_type()) || !is_index_dtype(index.scalar_type()) ||
      index.dim() > 1 || source.scalar_type() != self.scalar_type()) {
    return OPENNEURON_FALLBACK(index_add_, self, dim, index, source, alpha);
  }
  OPENNEURON_NATIVE_OP("aten::index_add_");
  return index_add_out(self, dim, index, source, alpha, self);
}

at::Tensor index_add(const at::Tensor& self, int64_t dim, const at::Tensor& index,
                     const at::Tensor& source, const at::Scalar& alpha) {
  if (!is_native_compute_dtype(self.scalar_type()) || !is_index_dtype(index.scalar_type()) ||
      index.dim() > 1 || source.scalar_type() != self.scalar_type()) {
    return OPENNEURON_FALLBACK(index_add, self, dim, index, source, alpha);
  }
  OPENNEURON_NATIVE_OP("aten::index_add");
  const c10::DeviceGuard guard(self.device());
  at::Tensor out = at::empty({0}, self.options());
  return index_add_out(self, dim, index, source, alpha, out);
}

// ---- index_copy ------------------------------------------------------------------------

// out = self with out[..., index[i], ...] = source[..., i, ...] along dim (a static KV cache
// writes each step's keys this way); checks as the CPU's index_copy_, with its messages.
at::Tensor& index_copy_out(const at::Tensor& self, int64_t dim, const at::Tensor& index,
                           const at::Tensor& source, at::Tensor& out) {
  if (!is_native_compute_dtype(self.scalar_type()) || self.dim() > kernels::kMaxDims) {
    return OPENNEURON_FALLBACK(index_copy_out, self, dim, index, source, out);
  }
  OPENNEURON_NATIVE_OP("aten::index_copy.out");
  const c10::DeviceGuard guard(self.device());
  check_same_device("index_copy", {&self, &source, &out});
  const int64_t wrapped = at::maybe_wrap_dim(dim, self.dim());
  TORCH_CHECK_INDEX(index.dim() < 2, "index_copy_(): Index should have dimension 1 or 0 (got ",
                    index.dim(), ")");
  TORCH_CHECK(index.scalar_type() == at::kLong,
              "index_copy_(): Expected a long tensor for index, but got ", index.scalar_type());
  TORCH_CHECK(self.scalar_type() == source.scalar_type(),
              "index_copy_(): self and source expected to have the same dtype, but got (self) ",
              self.scalar_type(), " and (source) ", source.scalar_type());
  const int64_t source_size = source.dim() == 0 ? 1 : source.size(wrapped);
  TORCH_CHECK_INDEX(index.numel() == source_size, "index_copy_(): Number of indices (",
                    index.numel(), ") should be equal to source.size(dim) (", source_size, ")");
  TORCH_CHECK(source.dim() == self.dim() || (source.dim() == 0 && self.dim() <= 1) ||
                  (self.dim() == 0 && source.dim() <= 1),
              "index_copy_(): When source and destination are not scalars, their "
              "dimensionality must match. Source dimensionality (",
              source.dim(), "), destination dimensionality (", self.dim(), ")");
  for (int64_t d = 0; d < self.dim() && source.dim() == self.dim(); ++d) {
    TORCH_CHECK(d == wrapped || self.size(d) == source.size(d),
                "index_copy_(): Source/destination tensor must have same slice shapes. "
                "Destination slice shape: ",
                self.size(d), " at dimension ", d, " and source slice shape: ", source.size(d),
                " at dimension ", d, ".");
  }
  const int64_t dim_size = self.dim() == 0 ? 1 : self.size(wrapped);
  if (const auto bad = first_index_outside(index, 0, dim_size)) {
    TORCH_CHECK_INDEX(false, "index_copy_(): index ", *bad, " is out of bounds for dimension ",
                      wrapped, " with size ", dim_size);
  }
  const at::Tensor idx = index.is_privateuseone() ? index : index.to(self.device());
  if (!out.is_same(self)) {
    TORCH_CHECK(out.scalar_type() == self.scalar_type(),
                "index_copy(): self and out must share a dtype");
    at::native::resize_output(out, self.sizes());
    enqueue_copy(out, self);
  }
  if (idx.numel() == 0 || out.numel() == 0) return out;
  const kernels::TensorView self_view = self.dim() == 0 ? as_1d_view(out) : view_of(out);
  const kernels::TensorView values_view = source.dim() == 0 ? as_1d_view(source) : view_of(source);
  const kernels::TensorView index_view = as_1d_view(idx);
  const int first = static_cast<int>(self.dim() == 0 ? 0 : wrapped);
  stream_for(out).enqueue("aten::index_copy", [=] {
    kernels::index_scatter(kernels::IndexScatterMode::Assign, self_view, values_view, first,
                           &index_view, 1, kernels::Scalar::from_int(1));
  });
  return out;
}

// ---- embedding backward ----------------------------------------------------------------

at::Tensor embedding_dense_backward(const at::Tensor& grad_output, const at::Tensor& indices,
                                    int64_t num_weights, int64_t padding_idx,
                                    bool scale_grad_by_freq) {
  if (scale_grad_by_freq || !is_native_compute_dtype(grad_output.scalar_type()) ||
      !is_index_dtype(indices.scalar_type()) || !indices.is_privateuseone()) {
    return OPENNEURON_FALLBACK(embedding_dense_backward, grad_output, indices, num_weights,
                               padding_idx, scale_grad_by_freq);
  }
  OPENNEURON_NATIVE_OP("aten::embedding_dense_backward");
  const c10::DeviceGuard guard(grad_output.device());
  check_same_device("embedding_dense_backward", {&grad_output, &indices});
  const int64_t width = grad_output.size(-1);
  const at::Tensor flat_indices = indices.reshape({-1});
  const at::Tensor flat_grad = grad_output.reshape({flat_indices.numel(), width});
  at::Tensor grad_weight = at::empty({num_weights, width}, grad_output.options());
  enqueue_zero(grad_weight);
  if (flat_indices.numel() > 0 && grad_weight.numel() > 0) {
    const kernels::TensorView weight_view = view_of(grad_weight);
    const kernels::TensorView grad_view = view_of(flat_grad);
    const kernels::TensorView index_view = as_1d_view(flat_indices);
    stream_for(grad_weight).enqueue("aten::embedding_dense_backward", [=] {
      kernels::index_scatter(kernels::IndexScatterMode::Add, weight_view, grad_view, 0, &index_view,
                             1, kernels::Scalar::from_int(1));
    });
  }
  // The padding row receives no gradient.
  if (padding_idx >= 0 && padding_idx < num_weights)
    enqueue_zero(grad_weight.select(0, padding_idx));
  return grad_weight;
}

}  // namespace openneuron::bridge
