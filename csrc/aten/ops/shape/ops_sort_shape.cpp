// Sorting, top-k, concatenation, flip/roll, and creation ops (arange, linspace, eye,
// tril/triu) on the device.
#include <ATen/Dispatch.h>
#include <ATen/Functions.h>
#include <ATen/MemoryOverlap.h>
#include <ATen/WrapDimUtils.h>
#include <ATen/WrapDimUtilsMulti.h>
#include <ATen/native/Resize.h>
#include <c10/core/DeviceGuard.h>

#include <cmath>

#include "aten/core/op_helpers.h"
#include "aten/core/op_tracking.h"
#include "aten/core/tensor_views.h"
#include "aten/fallback/fallback.h"
#include "aten/ops/ops_reduce_index.h"
#include "kernels/pointwise/cast.h"
#include "kernels/shape/shape.h"
#include "kernels/shape/sort.h"

namespace openneuron::bridge {

namespace {

void enqueue_copy_view(const at::Tensor& dst, const kernels::TensorView& src_view) {
  if (dst.numel() == 0) return;
  const kernels::TensorView dst_view = view_of(dst);
  stream_for(dst).enqueue("aten::copy_", [=] { kernels::copy(dst_view, src_view); });
}

void enqueue_copy(const at::Tensor& dst, const at::Tensor& src) {
  if (dst.numel() == 0) return;
  enqueue_copy_view(dst, broadcast_view(src, dst.sizes()));
}

}  // namespace

// ---- sort / topk -----------------------------------------------------------------------

std::tuple<at::Tensor&, at::Tensor&> sort_stable_out(const at::Tensor& self,
                                                     std::optional<bool> stable, int64_t dim,
                                                     bool descending, at::Tensor& values,
                                                     at::Tensor& indices) {
  if (!is_native_compute_dtype(self.scalar_type())) {
    return OPENNEURON_FALLBACK(sort_values_stable, self, stable, dim, descending, values, indices);
  }
  OPENNEURON_NATIVE_OP("aten::sort.values_stable");
  const c10::DeviceGuard guard(self.device());
  check_same_device("sort", {&self, &values, &indices});
  const int64_t wrapped = at::maybe_wrap_dim(dim, self.dim());
  TORCH_CHECK(values.scalar_type() == self.scalar_type() && indices.scalar_type() == at::kLong,
              "sort(): values must have self's dtype and indices int64");
  at::native::resize_output(values, self.sizes());
  at::native::resize_output(indices, self.sizes());
  if (self.numel() == 0) return {values, indices};
  // The kernel writes values while it reads self: sort(y, out=(y, i)) sorts a copy.
  const at::Tensor source = unaliased_input(self, {&values, &indices});
  const kernels::TensorView values_view = view_of(values);
  const kernels::TensorView indices_view = view_of(indices);
  const kernels::TensorView in_view = view_of(source);
  const int d = static_cast<int>(wrapped);
  // stable=False leaves ties where the CPU's sort leaves them (see kernels::sort).
  const bool is_stable = stable.value_or(false);
  stream_for(values).enqueue("aten::sort", [=] {
    kernels::sort(values_view, indices_view, in_view, d, descending, is_stable);
  });
  return {values, indices};
}

std::tuple<at::Tensor, at::Tensor> sort_stable(const at::Tensor& self, std::optional<bool> stable,
                                               int64_t dim, bool descending) {
  if (!is_native_compute_dtype(self.scalar_type())) {
    return OPENNEURON_FALLBACK(sort_stable, self, stable, dim, descending);
  }
  OPENNEURON_NATIVE_OP("aten::sort.stable");
  const c10::DeviceGuard guard(self.device());
  // Laid out like self, as the meta kernel (and CPU) do.
  at::Tensor values = empty_elementwise_output(self.sizes(), {&self}, self.options());
  at::Tensor indices =
      empty_elementwise_output(self.sizes(), {&self}, self.options().dtype(at::kLong));
  sort_stable_out(self, stable, dim, descending, values, indices);
  return {values, indices};
}

std::tuple<at::Tensor&, at::Tensor&> topk_out(const at::Tensor& self, int64_t k, int64_t dim,
                                              bool largest, bool sorted, at::Tensor& values,
                                              at::Tensor& indices) {
  if (!is_native_compute_dtype(self.scalar_type())) {
    return OPENNEURON_FALLBACK(topk_values, self, k, dim, largest, sorted, values, indices);
  }
  OPENNEURON_NATIVE_OP("aten::topk.values");
  const c10::DeviceGuard guard(self.device());
  check_same_device("topk", {&self, &values, &indices});
  const int64_t wrapped = at::maybe_wrap_dim(dim, self.dim(), /*wrap_scalar=*/true);
  const int64_t length = self.dim() == 0 ? 1 : self.size(wrapped);
  TORCH_CHECK(k >= 0 && k <= length, "selected index k out of range");
  TORCH_CHECK(values.scalar_type() == self.scalar_type() && indices.scalar_type() == at::kLong,
              "topk(): values must have self's dtype and indices int64");
  std::vector<int64_t> shape = self.sizes().vec();
  if (self.dim() > 0) shape[wrapped] = k;
  at::native::resize_output(values, shape);
  at::native::resize_output(indices, shape);
  if (values.numel() == 0) return {values, indices};
  const at::Tensor source = unaliased_input(self, {&values, &indices});
  const kernels::TensorView values_view = view_of(values);
  const kernels::TensorView indices_view = view_of(indices);
  const kernels::TensorView in_view = view_of(source);
  const int d = static_cast<int>(wrapped);
  stream_for(values).enqueue("aten::topk", [=] {
    kernels::topk(values_view, indices_view, in_view, d, k, largest, sorted);
  });
  return {values, indices};
}

std::tuple<at::Tensor, at::Tensor> topk(const at::Tensor& self, int64_t k, int64_t dim,
                                        bool largest, bool sorted) {
  if (!is_native_compute_dtype(self.scalar_type())) {
    return OPENNEURON_FALLBACK(topk, self, k, dim, largest, sorted);
  }
  OPENNEURON_NATIVE_OP("aten::topk");
  const c10::DeviceGuard guard(self.device());
  at::Tensor values = at::empty({0}, self.options());
  at::Tensor indices = at::empty({0}, self.options().dtype(at::kLong));
  topk_out(self, k, dim, largest, sorted, values, indices);
  return {values, indices};
}

// ---- cat -------------------------------------------------------------------------------

namespace {

// Concatenation only moves and converts elements, which the kernels do for float64 too (a
// storage format for them, computed in by no kernel), so float64 pieces stay on the device.
bool cat_dtype_ok(at::ScalarType dtype) {
  return is_native_compute_dtype(dtype) || dtype == at::kDouble;
}

bool cat_is_native(const at::ITensorListRef& tensors, const at::Tensor* out) {
  for (const at::Tensor& t : tensors) {
    if (!cat_dtype_ok(t.scalar_type()) || !t.is_privateuseone()) return false;
  }
  return out == nullptr || cat_dtype_ok(out->scalar_type());
}

// Sizes the output and queues one copy per non-empty input into its slice.
at::Tensor& cat_into(const at::ITensorListRef& tensors, int64_t dim, at::Tensor& out,
                     bool allocate) {
  const auto inputs = tensors.materialize();
  TORCH_CHECK(!inputs.empty(), "torch.cat(): expected a non-empty list of Tensors");
  at::ScalarType dtype = inputs[0].get().scalar_type();
  for (const at::Tensor& t : inputs) dtype = c10::promoteTypes(dtype, t.scalar_type());
  // Legacy rule: 1-D empty tensors are skipped whatever their shape.
  const at::Tensor* reference = nullptr;
  for (const at::Tensor& t : inputs) {
    if (!(t.dim() == 1 && t.numel() == 0)) {
      reference = &t;
      break;
    }
  }
  const c10::Device device = inputs[0].get().device();
  for (const at::Tensor& t : inputs) {
    TORCH_CHECK(t.device() == device,
                "Expected all tensors to be on the same device, but found at least two devices, ",
                device, " and ", t.device(), "! (in aten::cat)");
  }
  if (allocate) {
    out = at::empty({0}, inputs[0].get().options().dtype(dtype));
  } else {
    TORCH_CHECK(out.device() == device,
                "Expected all tensors to be on the same device, but found at least two devices, ",
                device, " and ", out.device(), "! (in aten::cat.out)");
    // A TypeError, as the CPU's cat raises it (not the RuntimeError of elementwise ops).
    TORCH_CHECK_TYPE(at::canCast(dtype, out.scalar_type()),
                     "torch.cat(): input types can't be cast to the desired output type ",
                     out.scalar_type());
  }
  if (reference == nullptr) {
    at::native::resize_output(out, inputs[0].get().sizes());
    return out;
  }
  TORCH_CHECK(reference->dim() > 0,
              "zero-dimensional tensor (at position 0) cannot be concatenated");
  const int64_t wrapped = at::maybe_wrap_dim(dim, reference->dim());
  std::vector<int64_t> shape = reference->sizes().vec();
  int64_t total = 0;
  int64_t position = 0;
  for (const at::Tensor& t : inputs) {
    if (t.dim() == 1 && t.numel() == 0) {
      ++position;
      continue;
    }
    TORCH_CHECK(t.dim() == reference->dim(), "Tensors must have same number of dimensions: got ",
                reference->dim(), " and ", t.dim());
    for (int64_t d = 0; d < t.dim(); ++d) {
      if (d == wrapped) continue;
      TORCH_CHECK(t.size(d) == shape[d], "Sizes of tensors must match except in dimension ",
                  wrapped, ". Expected size ", shape[d], " but got size ", t.size(d),
                  " for tensor number ", position, " in the list.");
    }
    total += t.size(wrapped);
    ++position;
  }
  shape[wrapped] = total;
  if (allocate) {
    // As the meta kernel: the inputs' common suggested memory format (channels-last inputs
    // give a channels-last result), else contiguous.
    std::optional<at::MemoryFormat> format;
    for (const at::Tensor& t : inputs) {
      const at::MemoryFormat f = t.suggest_memory_format();
      if (f == at::MemoryFormat::Contiguous || (format && *format != f)) {
        format = at::MemoryFormat::Contiguous;
        break;
      }
      format = f;
    }
    out = at::empty(shape, out.options().memory_format(format));
  } else {
    at::native::resize_output(out, shape);
  }
  int64_t offset = 0;
  for (const at::Tensor& t : inputs) {
    if (t.dim() == 1 && t.numel() == 0) continue;
    const int64_t length = t.size(wrapped);
    if (length > 0) enqueue_copy(out.narrow(wrapped, offset, length), t);
    offset += length;
  }
  return out;
}

}  // namespace

at::Tensor cat(const at::ITensorListRef& tensors, int64_t dim) {
  if (!cat_is_native(tensors, nullptr)) return OPENNEURON_FALLBACK(cat, tensors, dim);
  OPENNEURON_NATIVE_OP("aten::cat");
  at::Tensor out;
  const c10::DeviceGuard guard(tensors.front().device());
  return cat_into(tensors, dim, out, /*allocate=*/true);
}

at::Tensor& cat_out(const at::ITensorListRef& tensors, int64_t dim, at::Tensor& out) {
  if (!cat_is_native(tensors, &out)) return OPENNEURON_FALLBACK(cat_out, tensors, dim, out);
  OPENNEURON_NATIVE_OP("aten::cat.out");
  const c10::DeviceGuard guard(out.device());
  // As the CPU: out may not write one location twice, nor overlap an input.
  at::assert_no_internal_overlap(out);
  for (const at::Tensor& t : tensors) at::assert_no_overlap(out, t);
  return cat_into(tensors, dim, out, /*allocate=*/false);
}

// ---- flip / roll -----------------------------------------------------------------------

at::Tensor flip(const at::Tensor& self, at::IntArrayRef dims) {
  if (!is_native_compute_dtype(self.scalar_type()) || self.dim() > 31) {
    return OPENNEURON_FALLBACK(flip, self, dims);
  }
  OPENNEURON_NATIVE_OP("aten::flip");
  const c10::DeviceGuard guard(self.device());
  const auto flipped = at::dim_list_to_bitset(dims, self.dim());
  at::Tensor out = at::empty(self.sizes(), self.options());
  if (out.numel() == 0) return out;
  // A view walking the flipped dims backwards: start at their last element, negate strides.
  kernels::TensorView source = view_of(self);
  for (int d = 0; d < source.ndim; ++d) {
    if (!flipped[d]) continue;
    source.data = static_cast<char*>(source.data) + (source.sizes[d] - 1) * source.strides[d] *
                                                        static_cast<int64_t>(self.element_size());
    source.strides[d] = -source.strides[d];
  }
  enqueue_copy_view(out, source);
  return out;
}

at::Tensor roll(const at::Tensor& self, at::IntArrayRef shifts, at::IntArrayRef dims) {
  if (!is_native_compute_dtype(self.scalar_type()))
    return OPENNEURON_FALLBACK(roll, self, shifts, dims);
  OPENNEURON_NATIVE_OP("aten::roll");
  const c10::DeviceGuard guard(self.device());
  TORCH_CHECK(!shifts.empty(), "`shifts` required");
  if (dims.empty()) {
    TORCH_CHECK(shifts.size() == 1, "shifts and dimensions must align. shifts: ", shifts.size(),
                ", dims:", dims.size());
    const int64_t first_dim = 0;
    return bridge::roll(self.reshape({-1}), shifts, at::IntArrayRef(&first_dim, 1))
        .view(self.sizes());
  }
  TORCH_CHECK(shifts.size() == dims.size(),
              "shifts and dimensions must align. shifts: ", shifts.size(), ", dims:", dims.size());
  at::Tensor current = self;
  for (size_t i = 0; i < dims.size(); ++i) {
    const int64_t d = at::maybe_wrap_dim(dims[i], self.dim());
    at::Tensor out = at::empty(self.sizes(), self.options());
    const int64_t n = self.size(d);
    if (out.numel() == 0) return out;
    const int64_t shift = ((shifts[i] % n) + n) % n;
    // out[shift:] = in[:n-shift], out[:shift] = in[n-shift:]
    if (n - shift > 0)
      enqueue_copy(out.narrow(d, shift, n - shift), current.narrow(d, 0, n - shift));
    if (shift > 0) enqueue_copy(out.narrow(d, 0, shift), current.narrow(d, n - shift, shift));
    current = out;
  }
  return current;
}

// ---- repeat ----------------------------------------------------------------------------

at::Tensor repeat(const at::Tensor& self, at::IntArrayRef repeats) {
  if (!is_native_compute_dtype(self.scalar_type()) || repeats.size() > 8) {
    return OPENNEURON_FALLBACK(repeat, self, repeats);
  }
  OPENNEURON_NATIVE_OP("aten::repeat");
  const c10::DeviceGuard guard(self.device());
  TORCH_CHECK(
      repeats.size() >= static_cast<size_t>(self.dim()),
      "Number of dimensions of repeat dims can not be smaller than number of dimensions of tensor");
  const int64_t pad = static_cast<int64_t>(repeats.size()) - self.dim();
  std::vector<int64_t> shape;
  for (size_t d = 0; d < repeats.size(); ++d) {
    TORCH_CHECK(repeats[d] >= 0, "Trying to create tensor with negative dimension ", repeats[d]);
    const int64_t size =
        static_cast<int64_t>(d) < pad ? 1 : self.size(static_cast<int64_t>(d) - pad);
    shape.push_back(size * repeats[d]);
  }
  at::Tensor out = at::empty(shape, self.options());
  if (out.numel() == 0) return out;
  // out seen as [r0, s0, r1, s1, ...]; the source repeats along every r dim with stride 0.
  kernels::TensorView dst = view_of(out);
  kernels::TensorView src = view_of(self);
  kernels::TensorView dst_split, src_split;
  dst_split.data = dst.data;
  dst_split.dtype = dst.dtype;
  src_split.data = src.data;
  src_split.dtype = src.dtype;
  for (size_t d = 0; d < repeats.size(); ++d) {
    const int64_t size =
        static_cast<int64_t>(d) < pad ? 1 : self.size(static_cast<int64_t>(d) - pad);
    const int64_t src_stride = static_cast<int64_t>(d) < pad ? 0 : src.strides[d - pad];
    const int k = dst_split.ndim;
    dst_split.sizes[k] = repeats[d];
    dst_split.strides[k] = dst.strides[d] * size;
    dst_split.sizes[k + 1] = size;
    dst_split.strides[k + 1] = dst.strides[d];
    src_split.sizes[k] = repeats[d];
    src_split.strides[k] = 0;
    src_split.sizes[k + 1] = size;
    src_split.strides[k + 1] = src_stride;
    dst_split.ndim = src_split.ndim = k + 2;
  }
  stream_for(out).enqueue("aten::repeat", [=] { kernels::copy(dst_split, src_split); });
  return out;
}

// ---- arange / linspace / eye -----------------------------------------------------------

at::Tensor& arange_start_out(const at::Scalar& start, const at::Scalar& end, const at::Scalar& step,
                             at::Tensor& out) {
  if (!is_native_compute_dtype(out.scalar_type()) || out.scalar_type() == at::kBool) {
    return OPENNEURON_FALLBACK(arange_start_out, start, end, step, out);
  }
  OPENNEURON_NATIVE_OP("aten::arange.start_out");
  const c10::DeviceGuard guard(out.device());
  const bool integral = at::isIntegralType(out.scalar_type(), /*includeBool=*/false);
  // As PyTorch's CPU arange: integer results take start and step truncated to int64 (the
  // accumulation type); only an int64 result also counts its length in integers (arange(3.1)
  // has 3 int64 elements but 4 int32 ones).
  const double xstart = integral ? static_cast<double>(start.toLong()) : start.toDouble();
  const double xend = integral ? static_cast<double>(end.toLong()) : end.toDouble();
  const double xstep = integral ? static_cast<double>(step.toLong()) : step.toDouble();
  TORCH_CHECK(xstep > 0 || xstep < 0, "step must be nonzero");
  TORCH_CHECK(std::isfinite(xstart) && std::isfinite(xend), "unsupported range: ", xstart, " -> ",
              xend);
  TORCH_CHECK(((xstep > 0) && (xend >= xstart)) || ((xstep < 0) && (xend <= xstart)),
              "upper bound and larger bound inconsistent with step sign");
  int64_t size;
  if (out.scalar_type() == at::kLong) {
    const int64_t s = start.toLong(), e = end.toLong(), st = step.toLong();
    size = (e - s + st - (st > 0 ? 1 : -1)) / st;
  } else {
    size = static_cast<int64_t>(std::ceil((end.toDouble() - start.toDouble()) / step.toDouble()));
  }
  TORCH_CHECK(size >= 0, "invalid size, possible overflow?");
  if (out.numel() != size) {
    // As the CPU: a non-empty out of another length (rounding can cause it) warns first.
    if (out.numel() > 0) {
      TORCH_WARN("arange: the out tensor of shape ", out.sizes(), " has ", out.numel(),
                 " elements, not the computed ", size,
                 " (rounding error can cause this). The out tensor will be resized to a tensor "
                 "of shape (",
                 size, ",).");
    }
    out.resize_({size});
  }
  if (size == 0) return out;
  at::assert_no_internal_overlap(out);
  // The kernel writes one dim; an out of the right size but another shape (kept, as on the
  // CPU) takes the values in its row-major order.
  if (out.dim() != 1) {
    at::Tensor flat = at::empty({size}, out.options());
    arange_start_out(start, end, step, flat);
    out.copy_(flat.view(out.sizes()));
    return out;
  }
  const kernels::TensorView view = view_of(out);
  kernels::Scalar kstart = kernel_scalar(start), kstep = kernel_scalar(step);
  if (integral) {
    kstart = kernels::Scalar::from_int(start.toLong());
    kstep = kernels::Scalar::from_int(step.toLong());
  }
  stream_for(out).enqueue("aten::arange", [=] { kernels::arange(view, kstart, kstep); });
  return out;
}

at::Tensor& linspace_out(const at::Scalar& start, const at::Scalar& end, int64_t steps,
                         at::Tensor& out) {
  if (!is_native_compute_dtype(out.scalar_type()) || out.scalar_type() == at::kBool) {
    return OPENNEURON_FALLBACK(linspace_out, start, end, steps, out);
  }
  OPENNEURON_NATIVE_OP("aten::linspace.out");
  const c10::DeviceGuard guard(out.device());
  TORCH_CHECK(steps >= 0, "number of steps must be non-negative");
  if (out.numel() != steps) out.resize_({steps});
  if (steps == 0) return out;
  at::assert_no_internal_overlap(out);
  if (out.dim() != 1) {  // as arange: a 1-D result in out's row-major order
    at::Tensor flat = at::empty({steps}, out.options());
    linspace_out(start, end, steps, flat);
    out.copy_(flat.view(out.sizes()));
    return out;
  }
  const kernels::TensorView view = view_of(out);
  const kernels::Scalar kstart = kernel_scalar(start), kend = kernel_scalar(end);
  stream_for(out).enqueue("aten::linspace", [=] { kernels::linspace(view, kstart, kend); });
  return out;
}

at::Tensor& logspace_out(const at::Scalar& start, const at::Scalar& end, int64_t steps, double base,
                         at::Tensor& out) {
  TORCH_CHECK(steps >= 0, "number of steps must be non-negative");
  if (!is_native_compute_dtype(out.scalar_type()) || out.scalar_type() == at::kBool) {
    // The host fallback fills a host copy of out and copies it back, so an out= that writes
    // one location twice is refused here, as the CPU's copy does.
    if (out.numel() != steps) out.resize_({steps});
    if (steps > 0) at::assert_no_internal_overlap(out);
    return OPENNEURON_FALLBACK(logspace_out, start, end, steps, base, out);
  }
  OPENNEURON_NATIVE_OP("aten::logspace.out");
  const c10::DeviceGuard guard(out.device());
  if (steps > 1) {
    // The CPU converts start and end to out's dtype first, refusing values that overflow it.
    AT_DISPATCH_ALL_TYPES_AND2(at::kHalf, at::kBFloat16, out.scalar_type(), "logspace", [&] {
      (void)start.to<scalar_t>();
      (void)end.to<scalar_t>();
    });
  }
  if (out.numel() != steps) out.resize_({steps});
  if (steps == 0) return out;
  at::assert_no_internal_overlap(out);
  if (out.dim() != 1) {  // as arange: a 1-D result in out's row-major order
    at::Tensor flat = at::empty({steps}, out.options());
    logspace_out(start, end, steps, base, flat);
    out.copy_(flat.view(out.sizes()));
    return out;
  }
  const kernels::TensorView view = view_of(out);
  const kernels::Scalar kstart = kernel_scalar(start), kend = kernel_scalar(end);
  stream_for(out).enqueue("aten::logspace", [=] { kernels::logspace(view, kstart, kend, base); });
  return out;
}

namespace {

bool is_float8(at::ScalarType dtype) {
  return dtype == at::kFloat8_e4m3fn || dtype == at::kFloat8_e5m2 ||
         dtype == at::kFloat8_e4m3fnuz || dtype == at::kFloat8_e5m2fnuz;
}

}  // namespace

at::Tensor& eye_m_out(int64_t n, int64_t m, at::Tensor& out) {
  const bool float8 = is_float8(out.scalar_type());
  if (!is_native_compute_dtype(out.scalar_type()) && !float8) {
    return OPENNEURON_FALLBACK(eye_m_out, n, m, out);
  }
  OPENNEURON_NATIVE_OP("aten::eye.m_out");
  const c10::DeviceGuard guard(out.device());
  TORCH_CHECK(n >= 0, "n must be greater or equal to 0, got ", n);
  TORCH_CHECK(m >= 0, "m must be greater or equal to 0, got ", m);
  out.resize_({n, m});
  if (out.numel() == 0) return out;
  if (float8) {
    // Storage formats: zeros, then ones on the diagonal, both written as the format's bits.
    out.zero_();
    out.diagonal().fill_(1);
    return out;
  }
  const kernels::TensorView view = view_of(out);
  stream_for(out).enqueue("aten::eye", [=] { kernels::eye(view); });
  return out;
}

at::Tensor& eye_out(int64_t n, at::Tensor& out) {
  if (!is_native_compute_dtype(out.scalar_type()) && !is_float8(out.scalar_type())) {
    return OPENNEURON_FALLBACK(eye_out, n, out);
  }
  OPENNEURON_NATIVE_OP("aten::eye.out");
  return eye_m_out(n, n, out);
}

// ---- tril_indices / triu_indices --------------------------------------------------------

namespace {

// The triangle's coordinates, counted on the host (they depend on the sizes only) and written
// by the device. int32/int64 only, as the CPU and CUDA; other dtypes raise on the host.
at::Tensor triangle_indices(const char* name, int64_t row, int64_t col, int64_t offset, bool upper,
                            std::optional<at::ScalarType> dtype, std::optional<at::Layout> layout,
                            std::optional<at::Device> device, std::optional<bool> pin_memory) {
  TORCH_CHECK(row >= 0, "row must be non-negative, got", row);
  TORCH_CHECK(col >= 0, "col must be non-negative, got", col);
  int64_t count = 0;
  for (int64_t i = 0; i < row; ++i) {
    count += upper ? std::max<int64_t>(0, col - std::max<int64_t>(0, i + offset))
                   : std::max<int64_t>(0, std::min<int64_t>(col, i + offset + 1));
  }
  at::Tensor out = at::empty(
      {2, count},
      at::TensorOptions().dtype(dtype).layout(layout).device(device).pinned_memory(pin_memory));
  if (count == 0) return out;
  const c10::DeviceGuard guard(out.device());
  const kernels::TensorView view = view_of(out);
  stream_for(out).enqueue(name, [=] { kernels::triangle_indices(view, row, col, offset, upper); });
  return out;
}

bool triangle_indices_native(std::optional<at::ScalarType> dtype) {
  const at::ScalarType type = dtype.value_or(at::kLong);
  return type == at::kLong || type == at::kInt;
}

}  // namespace

at::Tensor tril_indices(int64_t row, int64_t col, int64_t offset,
                        std::optional<at::ScalarType> dtype, std::optional<at::Layout> layout,
                        std::optional<at::Device> device, std::optional<bool> pin_memory) {
  if (!triangle_indices_native(dtype)) {
    return OPENNEURON_FALLBACK(tril_indices, row, col, offset, dtype, layout, device, pin_memory);
  }
  OPENNEURON_NATIVE_OP("aten::tril_indices");
  return triangle_indices("aten::tril_indices", row, col, offset, false, dtype.value_or(at::kLong),
                          layout, device, pin_memory);
}

at::Tensor triu_indices(int64_t row, int64_t col, int64_t offset,
                        std::optional<at::ScalarType> dtype, std::optional<at::Layout> layout,
                        std::optional<at::Device> device, std::optional<bool> pin_memory) {
  if (!triangle_indices_native(dtype)) {
    return OPENNEURON_FALLBACK(triu_indices, row, col, offset, dtype, layout, device, pin_memory);
  }
  OPENNEURON_NATIVE_OP("aten::triu_indices");
  return triangle_indices("aten::triu_indices", row, col, offset, true, dtype.value_or(at::kLong),
                          layout, device, pin_memory);
}

// ---- tril / triu -----------------------------------------------------------------------

namespace {

void launch_triangle(const at::Tensor& out, const at::Tensor& self, int64_t diagonal, bool upper) {
  TORCH_CHECK(self.dim() >= 2, upper ? "triu" : "tril",
              ": input tensor must have at least 2 dimensions");
  if (out.numel() == 0) return;
  const kernels::TensorView out_view = view_of(out);
  const kernels::TensorView in_view = view_of(self);
  stream_for(out).enqueue(upper ? "aten::triu" : "aten::tril",
                          [=] { kernels::triangle(out_view, in_view, diagonal, upper); });
}

}  // namespace

#define OPENNEURON_TRIANGLE(NAME, UPPER)                                                        \
  at::Tensor NAME(const at::Tensor& self, int64_t diagonal) {                                   \
    if (!is_native_compute_dtype(self.scalar_type()))                                           \
      return OPENNEURON_FALLBACK(NAME, self, diagonal);                                         \
    OPENNEURON_NATIVE_OP("aten::" #NAME);                                                       \
    const c10::DeviceGuard guard(self.device());                                                \
    at::Tensor out = at::empty(self.sizes(), self.options());                                   \
    launch_triangle(out, self, diagonal, UPPER);                                                \
    return out;                                                                                 \
  }                                                                                             \
  at::Tensor& NAME##_(at::Tensor& self, int64_t diagonal) {                                     \
    if (!is_native_compute_dtype(self.scalar_type()))                                           \
      return OPENNEURON_FALLBACK(NAME##_, self, diagonal);                                      \
    OPENNEURON_NATIVE_OP("aten::" #NAME "_");                                                   \
    const c10::DeviceGuard guard(self.device());                                                \
    launch_triangle(self, self, diagonal, UPPER);                                               \
    return self;                                                                                \
  }                                                                                             \
  at::Tensor& NAME##_out(const at::Tensor& self, int64_t diagonal, at::Tensor& out) {           \
    if (!is_native_compute_dtype(self.scalar_type()) ||                                         \
        !is_native_compute_dtype(out.scalar_type())) {                                          \
      return OPENNEURON_FALLBACK(NAME##_out, self, diagonal, out);                              \
    }                                                                                           \
    OPENNEURON_NATIVE_OP("aten::" #NAME ".out");                                                \
    const c10::DeviceGuard guard(self.device());                                                \
    check_same_device(#NAME ".out", {&self, &out});                                             \
    TORCH_CHECK(out.scalar_type() == self.scalar_type(), #NAME ": out must have self's dtype"); \
    at::native::resize_output(out, self.sizes());                                               \
    launch_triangle(out, self, diagonal, UPPER);                                                \
    return out;                                                                                 \
  }

OPENNEURON_TRIANGLE(tril, false)
OPENNEURON_TRIANGLE(triu, true)
#undef OPENNEURON_TRIANGLE

}  // namespace openneuron::bridge
