// The FFT primitives torch.fft lowers to (_fft_c2c, _fft_r2c, _fft_c2r, and their out= forms) at
// float32 / complex64 on the device: one kernels::fft_* pass per transformed dim, the last pass
// applying the normalization. complex128 (not a NeuronCore type) runs on the host fallback.
#include <ATen/WrapDimUtils.h>
#include <ATen/native/Resize.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/empty_strided.h>
#include <ATen/ops/view_as_real.h>
#include <c10/core/DeviceGuard.h>
#include <torch/library.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "aten/core/op_tracking.h"
#include "aten/core/tensor_views.h"
#include "aten/fallback/fallback.h"
#include "kernels/fft/fft.h"

namespace openneuron::bridge {
namespace {

// ATen's fft_norm_mode: 0 leaves the sum unscaled, 1 divides by sqrt(n), 2 by n, where n is
// the number of points of the signal: the product of `signal_sizes` over the transformed dims
// (the input's for c2c and r2c, the output's for c2r).
double norm_scale(int64_t normalization, at::IntArrayRef signal_sizes,
                  const std::vector<int64_t>& dims) {
  double points = 1;
  for (const int64_t d : dims) points *= static_cast<double>(signal_sizes[d]);
  if (normalization == 1) return 1 / std::sqrt(points);
  if (normalization == 2) return 1 / points;
  return 1;
}

// The transformed dims, wrapped and checked against the tensor's rank.
std::vector<int64_t> wrapped_dims(at::IntArrayRef dims, int64_t ndim) {
  std::vector<int64_t> result;
  for (const int64_t d : dims) result.push_back(at::maybe_wrap_dim(d, ndim));
  return result;
}

// The input's sizes with the last transformed dim resized to `size` (the one-sided length of
// r2c, the real length of c2r).
std::vector<int64_t> sizes_with_last_dim(const at::Tensor& self, const std::vector<int64_t>& dims,
                                         int64_t size) {
  std::vector<int64_t> sizes(self.sizes().begin(), self.sizes().end());
  sizes[dims.back()] = size;
  return sizes;
}

// The one-sided length of a real transform's last dim, or the whole length.
int64_t r2c_last_size(const at::Tensor& self, const std::vector<int64_t>& dims, bool onesided) {
  const int64_t n = self.size(dims.back());
  return onesided ? n / 2 + 1 : n;
}

// Result strides as PyTorch lays out the CPU's (and, for this device, its meta kernel's) FFT
// results: the untransformed dims outermost, ordered by the input's strides (largest first),
// then the transformed dims in the order given, the whole dense in that order.
std::vector<int64_t> host_fft_strides(at::IntArrayRef in_strides, at::IntArrayRef out_sizes,
                                      const std::vector<int64_t>& dims) {
  const int64_t ndim = static_cast<int64_t>(out_sizes.size());
  std::vector<bool> transformed(ndim, false);
  for (const int64_t d : dims) transformed[d] = true;
  std::vector<int64_t> batch;
  for (int64_t d = 0; d < ndim; ++d) {
    if (!transformed[d]) batch.push_back(d);
  }
  std::stable_sort(batch.begin(), batch.end(),
                   [&](int64_t x, int64_t y) { return in_strides[x] > in_strides[y]; });
  std::vector<int64_t> strides(ndim, 1);
  int64_t inner = 1;  // the dense block of transformed dims
  for (auto d = dims.rbegin(); d != dims.rend(); ++d) {
    strides[*d] = inner;
    inner *= std::max<int64_t>(out_sizes[*d], 1);
  }
  int64_t batch_numel = 1;
  for (auto d = batch.rbegin(); d != batch.rend(); ++d) {
    strides[*d] = batch_numel * inner;
    batch_numel *= out_sizes[*d];
  }
  return strides;
}

// `dims` ordered by the input's strides, largest first (all of them, or all but the last).
std::vector<int64_t> sorted_by_stride(at::IntArrayRef in_strides, std::vector<int64_t> dims,
                                      bool keep_last) {
  const auto end = keep_last ? dims.end() - 1 : dims.end();
  std::stable_sort(dims.begin(), end,
                   [&](int64_t x, int64_t y) { return in_strides[x] > in_strides[y]; });
  return dims;
}

at::Tensor empty_with_strides(at::IntArrayRef sizes, const std::vector<int64_t>& strides,
                              const at::Tensor& self, at::ScalarType dtype) {
  return at::empty_strided(sizes, strides, self.options().dtype(dtype));
}

bool fits_kernel(const at::Tensor& tensor) { return tensor.dim() + 1 <= kernels::kMaxDims; }

kernels::TensorView pairs_of(const at::Tensor& complex) {
  return view_of(at::view_as_real(complex));
}

// Complex-to-complex passes over `dims` from `in` into `out` (same shape; may be the same
// tensor), the scale applied by the last pass.
void complex_passes(const at::Tensor& in, const at::Tensor& out, const std::vector<int64_t>& dims,
                    bool forward, double scale) {
  at::Tensor source = in;
  for (size_t k = 0; k < dims.size(); ++k) {
    const kernels::TensorView from = pairs_of(source), to = pairs_of(out);
    const int dim = static_cast<int>(dims[k]);
    const double pass_scale = k + 1 == dims.size() ? scale : 1.0;
    stream_for(out).enqueue("aten::_fft_c2c",
                            [=] { kernels::fft_complex(from, to, dim, forward, pass_scale); });
    source = out;
  }
}

at::Tensor& fft_c2c_out(const at::Tensor& self, at::IntArrayRef dim, int64_t normalization,
                        bool forward, at::Tensor& out) {
  if (self.scalar_type() != at::kComplexFloat || out.scalar_type() != at::kComplexFloat ||
      self.is_conj() || !fits_kernel(self)) {
    return OPENNEURON_FALLBACK(_fft_c2c_out, self, dim, normalization, forward, out);
  }
  OPENNEURON_NATIVE_OP("aten::_fft_c2c.out");
  const c10::DeviceGuard guard(self.device());
  const std::vector<int64_t> dims = wrapped_dims(dim, self.dim());
  at::native::resize_output(out, self.sizes());
  if (out.numel() == 0) return out;
  if (dims.empty()) return out.copy_(self);
  complex_passes(self, out, dims, forward, norm_scale(normalization, self.sizes(), dims));
  return out;
}

at::Tensor fft_c2c(const at::Tensor& self, at::IntArrayRef dim, int64_t normalization,
                   bool forward) {
  if (self.scalar_type() != at::kComplexFloat || self.is_conj() || !fits_kernel(self)) {
    return OPENNEURON_FALLBACK(_fft_c2c, self, dim, normalization, forward);
  }
  const std::vector<int64_t> dims = wrapped_dims(dim, self.dim());
  at::Tensor out = empty_with_strides(
      self.sizes(),
      host_fft_strides(self.strides(), self.sizes(), sorted_by_stride(self.strides(), dims, false)),
      self, at::kComplexFloat);
  return fft_c2c_out(self, dim, normalization, forward, out);
}

at::Tensor& fft_r2c_out(const at::Tensor& self, at::IntArrayRef dim, int64_t normalization,
                        bool onesided, at::Tensor& out) {
  if (self.scalar_type() != at::kFloat || out.scalar_type() != at::kComplexFloat || dim.empty() ||
      !fits_kernel(self)) {
    return OPENNEURON_FALLBACK(_fft_r2c_out, self, dim, normalization, onesided, out);
  }
  OPENNEURON_NATIVE_OP("aten::_fft_r2c.out");
  const c10::DeviceGuard guard(self.device());
  const std::vector<int64_t> dims = wrapped_dims(dim, self.dim());
  // The last listed dim is the real one (halved when one-sided); the others are complex passes.
  at::native::resize_output(out,
                            sizes_with_last_dim(self, dims, r2c_last_size(self, dims, onesided)));
  if (out.numel() == 0) return out;
  const double scale = norm_scale(normalization, self.sizes(), dims);
  const kernels::TensorView in_view = view_of(self), out_view = pairs_of(out);
  const int real = static_cast<int>(dims.back());
  const double first_scale = dims.size() == 1 ? scale : 1.0;
  stream_for(out).enqueue("aten::_fft_r2c", [=] {
    kernels::fft_real_to_complex(in_view, out_view, real, first_scale);
  });
  const std::vector<int64_t> rest(dims.begin(), dims.end() - 1);
  if (!rest.empty()) complex_passes(out, out, rest, /*forward=*/true, scale);
  return out;
}

at::Tensor fft_r2c(const at::Tensor& self, at::IntArrayRef dim, int64_t normalization,
                   bool onesided) {
  if (self.scalar_type() != at::kFloat || dim.empty() || !fits_kernel(self)) {
    return OPENNEURON_FALLBACK(_fft_r2c, self, dim, normalization, onesided);
  }
  const std::vector<int64_t> dims = wrapped_dims(dim, self.dim());
  const std::vector<int64_t> sizes =
      sizes_with_last_dim(self, dims, r2c_last_size(self, dims, onesided));
  at::Tensor out = empty_with_strides(
      sizes, host_fft_strides(self.strides(), sizes, sorted_by_stride(self.strides(), dims, true)),
      self, at::kComplexFloat);
  return fft_r2c_out(self, dim, normalization, onesided, out);
}

at::Tensor& fft_c2r_out(const at::Tensor& self, at::IntArrayRef dim, int64_t normalization,
                        int64_t last_dim_size, at::Tensor& out) {
  if (self.scalar_type() != at::kComplexFloat || out.scalar_type() != at::kFloat || dim.empty() ||
      self.is_conj() || !fits_kernel(self)) {
    return OPENNEURON_FALLBACK(_fft_c2r_out, self, dim, normalization, last_dim_size, out);
  }
  OPENNEURON_NATIVE_OP("aten::_fft_c2r.out");
  const c10::DeviceGuard guard(self.device());
  const std::vector<int64_t> dims = wrapped_dims(dim, self.dim());
  const std::vector<int64_t> sizes = sizes_with_last_dim(self, dims, last_dim_size);
  at::native::resize_output(out, sizes);
  if (out.numel() == 0) return out;
  // Inverse complex passes over the other dims first (into a scratch copy), then the
  // Hermitian-to-real pass along the last dim.
  const double scale = norm_scale(normalization, sizes, dims);
  at::Tensor spectrum = self;
  const std::vector<int64_t> rest(dims.begin(), dims.end() - 1);
  if (!rest.empty()) {
    spectrum = at::empty(self.sizes(), self.options());
    complex_passes(self, spectrum, rest, /*forward=*/false, 1.0);
  }
  const kernels::TensorView in_view = pairs_of(spectrum), out_view = view_of(out);
  const int real = static_cast<int>(dims.back());
  stream_for(out).enqueue("aten::_fft_c2r",
                          [=] { kernels::fft_complex_to_real(in_view, out_view, real, scale); });
  return out;
}

at::Tensor fft_c2r(const at::Tensor& self, at::IntArrayRef dim, int64_t normalization,
                   int64_t last_dim_size) {
  if (self.scalar_type() != at::kComplexFloat || dim.empty() || self.is_conj() ||
      !fits_kernel(self)) {
    return OPENNEURON_FALLBACK(_fft_c2r, self, dim, normalization, last_dim_size);
  }
  // As the CPU: the complex passes' layout first, then the last dim's laid out from it.
  const std::vector<int64_t> dims = wrapped_dims(dim, self.dim());
  std::vector<int64_t> staged(self.strides().begin(), self.strides().end());
  if (dims.size() > 1) {
    const std::vector<int64_t> rest(dims.begin(), dims.end() - 1);
    staged = host_fft_strides(self.strides(), self.sizes(),
                              sorted_by_stride(self.strides(), rest, false));
  }
  const std::vector<int64_t> sizes = sizes_with_last_dim(self, dims, last_dim_size);
  at::Tensor out =
      empty_with_strides(sizes, host_fft_strides(staged, sizes, {dims.back()}), self, at::kFloat);
  return fft_c2r_out(self, dim, normalization, last_dim_size, out);
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("_fft_c2c", TORCH_FN(fft_c2c));
  m.impl("_fft_c2c.out", TORCH_FN(fft_c2c_out));
  m.impl("_fft_r2c", TORCH_FN(fft_r2c));
  m.impl("_fft_r2c.out", TORCH_FN(fft_r2c_out));
  m.impl("_fft_c2r", TORCH_FN(fft_c2r));
  m.impl("_fft_c2r.out", TORCH_FN(fft_c2r_out));
}

}  // namespace openneuron::bridge
