// Indexing ops built on the device's gather/scatter kernels: index_fill_, take, put_,
// masked_scatter_ and equal, each with the CPU's checks and exception types at the call.
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
#include "kernels/shape/indexing.h"

namespace openneuron::bridge {

namespace {

// A 0-dim tensor viewed as 1-D of one element (the kernels index along real dims only).
kernels::TensorView as_1d(const at::Tensor& tensor) {
  kernels::TensorView view = view_of(tensor);
  if (view.ndim == 0) {
    view.ndim = 1;
    view.sizes[0] = 1;
    view.strides[0] = 1;
  }
  return view;
}

at::Tensor on_device_of(const at::Tensor& index, const at::Tensor& self) {
  return index.device() == self.device() ? index : index.to(self.device());
}

// take/put_'s range check: negative values count from the end; IndexError as the CPU.
void check_flat_index(const char* name, const at::Tensor& index, int64_t numel) {
  TORCH_CHECK_INDEX(numel != 0 || index.numel() == 0, name,
                    "(): tried to take from an empty tensor");
  if (const auto bad = first_index_outside(index, -numel, numel)) {
    TORCH_CHECK_INDEX(false, "out of range: tried to access index ", *bad, " on a tensor of ",
                      numel, " elements.");
  }
}

}  // namespace

// ---- index_fill_ -----------------------------------------------------------------------

at::Tensor& index_fill_int_scalar_(at::Tensor& self, int64_t dim, const at::Tensor& index,
                                   const at::Scalar& value) {
  // An expanded self (several elements in one location) stays with the CPU's kernel.
  if (!is_native_compute_dtype(self.scalar_type()) || self.dim() > kernels::kMaxDims ||
      at::has_internal_overlap(self) != at::MemOverlap::No) {
    return OPENNEURON_FALLBACK(index_fill__int_Scalar, self, dim, index, value);
  }
  OPENNEURON_NATIVE_OP("aten::index_fill_.int_Scalar");
  const c10::DeviceGuard guard(self.device());
  TORCH_CHECK_INDEX(index.scalar_type() == at::kLong,
                    "index_fill_(): Expected dtype int64 for index.");
  TORCH_CHECK(index.dim() <= 1, "Index has to be a vector/scalar");
  TORCH_CHECK(!value.isComplex() || at::isComplexType(self.scalar_type()),
              "index_fill_(): Converting complex Scalar to non-complex type is not supported");
  at::assert_no_overlap(self, index);
  const int64_t wrapped = at::maybe_wrap_dim(dim, self.dim());
  const int64_t dim_size = self.dim() == 0 ? 1 : self.size(wrapped);
  if (const auto bad = first_index_outside(index, -dim_size, dim_size)) {
    TORCH_CHECK_INDEX(false, "index ", *bad, " is out of bounds for dimension ", wrapped,
                      " with size ", dim_size);
  }
  if (index.numel() == 0 || self.numel() == 0) return self;
  const at::Tensor idx = on_device_of(index, self);
  // The value, rounded to self's dtype once, broadcast over the filled slices.
  const at::Tensor fill = at::full({}, value, self.options());
  std::vector<int64_t> slice_shape(self.sizes().begin(), self.sizes().end());
  if (slice_shape.empty()) slice_shape.push_back(1);
  slice_shape[wrapped] = idx.numel();
  const kernels::TensorView self_view = as_1d(self);
  const kernels::TensorView values_view = broadcast_view(fill, slice_shape);
  const kernels::TensorView index_view = as_1d(idx);
  const int first = static_cast<int>(wrapped);
  stream_for(self).enqueue("aten::index_fill_", [=] {
    kernels::index_scatter(kernels::IndexScatterMode::Assign, self_view, values_view, first,
                           &index_view, 1, kernels::Scalar::from_int(1));
  });
  return self;
}

at::Tensor& index_fill_int_tensor_(at::Tensor& self, int64_t dim, const at::Tensor& index,
                                   const at::Tensor& value) {
  if (!is_native_compute_dtype(self.scalar_type()) || self.dim() > kernels::kMaxDims ||
      at::has_internal_overlap(self) != at::MemOverlap::No) {
    return OPENNEURON_FALLBACK(index_fill__int_Tensor, self, dim, index, value);
  }
  OPENNEURON_NATIVE_OP("aten::index_fill_.int_Tensor");
  TORCH_CHECK(value.dim() == 0,
              "index_fill_ only supports a 0-dimensional value tensor, but got tensor with ",
              value.dim(), " dimension(s).");
  at::assert_no_overlap(self, value);
  return index_fill_int_scalar_(self, dim, index, value.item());
}

// ---- take / put_ -----------------------------------------------------------------------

at::Tensor& take_out(const at::Tensor& self, const at::Tensor& index, at::Tensor& out) {
  if (!is_native_compute_dtype(self.scalar_type()) || index.dim() > kernels::kMaxDims) {
    return OPENNEURON_FALLBACK(take_out, self, index, out);
  }
  OPENNEURON_NATIVE_OP("aten::take.out");
  const c10::DeviceGuard guard(self.device());
  TORCH_CHECK(index.scalar_type() == at::kLong,
              "take(): Expected a long tensor for index, but got ", index.scalar_type());
  TORCH_CHECK(self.scalar_type() == out.scalar_type(),
              "take(): self and result expected to have the same dtype, but got self.dtype = ",
              self.scalar_type(), " and result.dtype = ", out.scalar_type());
  check_same_device("take.out", {&self, &out});
  at::assert_no_internal_overlap(out);
  at::assert_no_overlap(out, index);
  at::assert_no_overlap(out, self);
  check_flat_index("take", index, self.numel());
  at::native::resize_output(out, index.sizes());
  if (out.numel() == 0) return out;
  const at::Tensor flat = self.reshape({-1});
  const at::Tensor idx = on_device_of(index, self);
  const kernels::TensorView out_view = as_1d(out);
  const kernels::TensorView in_view = view_of(flat);
  const kernels::TensorView index_view = as_1d(idx);
  stream_for(out).enqueue("aten::take",
                          [=] { kernels::index_gather(out_view, in_view, 0, &index_view, 1); });
  return out;
}

at::Tensor take(const at::Tensor& self, const at::Tensor& index) {
  if (!is_native_compute_dtype(self.scalar_type()) || index.dim() > kernels::kMaxDims) {
    return OPENNEURON_FALLBACK(take, self, index);
  }
  OPENNEURON_NATIVE_OP("aten::take");
  const c10::DeviceGuard guard(self.device());
  at::Tensor out = at::empty({0}, self.options());
  return take_out(self, index, out);
}

at::Tensor& put_(at::Tensor& self, const at::Tensor& index, const at::Tensor& source,
                 bool accumulate) {
  // A non-contiguous self has no flat view to write through: the CPU's kernel takes it.
  if (!is_native_compute_dtype(self.scalar_type()) || !self.is_contiguous()) {
    return OPENNEURON_FALLBACK(put_, self, index, source, accumulate);
  }
  OPENNEURON_NATIVE_OP("aten::put_");
  const c10::DeviceGuard guard(self.device());
  TORCH_CHECK(index.scalar_type() == at::kLong,
              "put_(): Expected a long tensor for index, but got ", index.scalar_type());
  TORCH_CHECK(self.scalar_type() == source.scalar_type(),
              "put_(): self and source expected to have the same dtype, but got self.dtype = ",
              self.scalar_type(), " and source.dtype = ", source.scalar_type());
  TORCH_CHECK_INDEX(source.numel() == index.numel(),
                    "put_(): Expected source and index to have the same number of elements, but "
                    "got source.numel() = ",
                    source.numel(), ", index.numel() = ", index.numel());
  check_same_device("put_", {&self, &source});
  at::assert_no_internal_overlap(self);
  at::assert_no_overlap(self, index);
  at::assert_no_overlap(self, source);
  check_flat_index("put_", index, self.numel());
  if (index.numel() == 0) return self;
  const at::Tensor flat_self = self.view({-1});
  const at::Tensor flat_source = source.reshape({-1});
  const at::Tensor flat_index = on_device_of(index, self).reshape({-1});
  const kernels::TensorView self_view = view_of(flat_self);
  const kernels::TensorView values_view = view_of(flat_source);
  const kernels::TensorView index_view = view_of(flat_index);
  const auto mode = accumulate ? kernels::IndexScatterMode::Add : kernels::IndexScatterMode::Assign;
  stream_for(self).enqueue("aten::put_", [=] {
    kernels::index_scatter(mode, self_view, values_view, 0, &index_view, 1,
                           kernels::Scalar::from_int(1));
  });
  return self;
}

// ---- masked_scatter_ -------------------------------------------------------------------

// self's elements where mask (broadcast to self) is true take source's leading elements in
// row-major order: the mask's true positions are found on the device and written through
// index_put_.
at::Tensor& masked_scatter_(at::Tensor& self, const at::Tensor& mask, const at::Tensor& source) {
  if (!is_native_compute_dtype(self.scalar_type()) || self.dim() > kernels::kMaxDims ||
      mask.device() != self.device() || source.device() != self.device()) {
    return OPENNEURON_FALLBACK(masked_scatter_, self, mask, source);
  }
  OPENNEURON_NATIVE_OP("aten::masked_scatter_");
  const c10::DeviceGuard guard(self.device());
  at::assert_no_internal_overlap(self);
  TORCH_CHECK(self.scalar_type() == source.scalar_type(),
              "masked_scatter: expected self and source to have same dtypes but got",
              self.scalar_type(), " and ", source.scalar_type());
  TORCH_CHECK(mask.scalar_type() == at::kBool,
              "masked_scatter_ only supports boolean masks, but got mask with dtype ",
              mask.scalar_type());
  const at::Tensor expanded_mask = mask.expand(self.sizes());
  if (self.numel() == 0) return self;
  // The number of true positions decides how much of source is read: wait for the mask.
  const int64_t count = expanded_mask.sum().item<int64_t>();
  TORCH_CHECK(source.numel() >= count, "Number of elements of source < number of ones in mask");
  if (count == 0) return self;
  const at::Tensor values = source.reshape({-1}).narrow(0, 0, count);
  if (self.dim() == 0) return self.copy_(values.reshape({}));
  c10::List<std::optional<at::Tensor>> indices;
  indices.push_back(std::optional<at::Tensor>(expanded_mask));
  return self.index_put_(indices, values);
}

// ---- narrow_copy.out and channel_shuffle -------------------------------------------------

at::Tensor& narrow_copy_out(const at::Tensor& self, int64_t dim, int64_t start, int64_t length,
                            at::Tensor& out) {
  if (!is_native_compute_dtype(self.scalar_type()) || out.scalar_type() != self.scalar_type() ||
      self.dim() == 0) {
    return OPENNEURON_FALLBACK(narrow_copy_out, self, dim, start, length, out);
  }
  OPENNEURON_NATIVE_OP("aten::narrow_copy.out");
  const c10::DeviceGuard guard(self.device());
  check_same_device("narrow_copy.out", {&self, &out});
  // narrow() makes the CPU's range checks, with its messages.
  const at::Tensor slice = self.narrow(dim, start, length);
  at::native::resize_output(out, slice.sizes());
  return out.copy_(slice);
}

at::Tensor channel_shuffle(const at::Tensor& self, int64_t groups) {
  if (!is_native_compute_dtype(self.scalar_type())) {
    return OPENNEURON_FALLBACK(channel_shuffle, self, groups);
  }
  OPENNEURON_NATIVE_OP("aten::channel_shuffle");
  const c10::DeviceGuard guard(self.device());
  TORCH_CHECK(self.dim() > 2,
              "channel_shuffle expects input to have at least 3 dimensions, but got input with "
              "sizes ",
              self.sizes());
  TORCH_CHECK(groups > 0, "Number of groups to divide channels in must be positive.",
              " Value of groups:", groups);
  const int64_t channels = self.size(1);
  TORCH_CHECK(channels % groups == 0, "Number of channels must be divisible by groups. Got ",
              channels, " channels and ", groups, " groups.");
  if (self.numel() == 0) return self.clone(self.suggest_memory_format());
  // Channel g * (C / groups) + k moves to k * groups + g: a transpose of the (groups, C / groups)
  // split of the channel dim, laid out in self's suggested memory format as the CPU does.
  const at::Tensor split = self.reshape({self.size(0), groups, channels / groups, -1});
  return split.transpose(1, 2)
      .contiguous()
      .view(self.sizes())
      .contiguous(self.suggest_memory_format());
}

// ---- equal -----------------------------------------------------------------------------

// True when both have one shape and equal values after type promotion (NaN is unequal), as
// the CPU's equal.
bool equal(const at::Tensor& self, const at::Tensor& other) {
  if (!is_native_compute_dtype(self.scalar_type()) ||
      !is_native_compute_dtype(other.scalar_type()) || self.device() != other.device() ||
      self.dim() > kernels::kMaxDims) {
    return OPENNEURON_FALLBACK(equal, self, other);
  }
  OPENNEURON_NATIVE_OP("aten::equal");
  const c10::DeviceGuard guard(self.device());
  if (!self.is_same_size(other)) return false;
  if (self.numel() == 0) return true;
  return at::eq(self, other).all().item<bool>();
}

}  // namespace openneuron::bridge
