// torch.histc on the device: MoE routers count tokens per expert with it, at the integer
// dtypes CUDA accepts and the CPU does not.
#include <ATen/native/Resize.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/histc.h>
#include <ATen/ops/linspace.h>
#include <c10/core/DeviceGuard.h>

#include <cmath>

#include "aten/fallback.h"
#include "aten/op_helpers.h"
#include "aten/op_tracking.h"
#include "aten/ops_reduce_index.h"
#include "aten/runtime_errors.h"
#include "aten/tensor_views.h"
#include "kernels/reduce/histogram.h"

namespace openneuron::bridge {

namespace {

// Bool has no histc kernel on CUDA or the CPU; float64 runs on the host.
bool histc_is_native(at::ScalarType dtype) {
  return is_native_compute_dtype(dtype) && dtype != at::kBool;
}

// The range histc counts over, as the CPU and CUDA choose it: [min, max] as given, the data's
// own extremes when they are equal (which reads the data: the call waits for its stream), and
// one either side of a single value.
std::pair<double, double> histc_range(const at::Tensor& self, const at::Scalar& min,
                                      const at::Scalar& max) {
  double low = min.to<double>();
  double high = max.to<double>();
  if (low == high && self.numel() > 0) {
    OPENNEURON_RUNTIME_CALL(stream_for(self).synchronize());
    kernels::min_max(view_of(self), &low, &high);
  }
  if (low == high) {
    low -= 1;
    high += 1;
  }
  TORCH_CHECK(!(std::isinf(low) || std::isinf(high) || std::isnan(low) || std::isnan(high)),
              "torch.histc: range of [", low, ", ", high, "] is not finite");
  TORCH_CHECK(low < high, "torch.histc: max must be larger than min");
  return {low, high};
}

}  // namespace

at::Tensor& histc_out(const at::Tensor& self, int64_t bins, const at::Scalar& min,
                      const at::Scalar& max, at::Tensor& out) {
  if (!histc_is_native(self.scalar_type()) || self.dim() > kernels::kMaxDims) {
    return OPENNEURON_FALLBACK(histc_out, self, bins, min, max, out);
  }
  OPENNEURON_NATIVE_OP("aten::histc.out");
  const c10::DeviceGuard guard(self.device());
  check_same_device("histc", {&self, &out});
  TORCH_CHECK(bins > 0, "torch.histogram(): bins must be > 0, but got ", bins, " for dimension 0");
  TORCH_CHECK(out.scalar_type() == self.scalar_type(),
              "torch.histogram: input tensor and hist tensor should have the same dtype, but got "
              "input ",
              self.scalar_type(), " and hist ", out.scalar_type());
  const auto [low, high] = histc_range(self, min, max);
  at::native::resize_output(out, {bins});
  // Floating inputs are placed against the same edges the CPU computes (linspace in the
  // input's dtype); integer inputs need none.
  at::Tensor edges;
  if (at::isFloatingType(self.scalar_type())) {
    edges = at::linspace(low, high, bins + 1, self.options());
  }
  const kernels::TensorView out_view = view_of(out);
  const kernels::TensorView in_view = view_of(self);
  const kernels::TensorView edges_view = edges.defined() ? view_of(edges) : kernels::TensorView();
  const bool has_edges = edges.defined();
  stream_for(out).enqueue("aten::histc", [=] {
    kernels::histc(out_view, in_view, has_edges ? &edges_view : nullptr, low, high);
  });
  return out;
}

at::Tensor histc(const at::Tensor& self, int64_t bins, const at::Scalar& min,
                 const at::Scalar& max) {
  if (!histc_is_native(self.scalar_type()) || self.dim() > kernels::kMaxDims) {
    return OPENNEURON_FALLBACK(histc, self, bins, min, max);
  }
  OPENNEURON_NATIVE_OP("aten::histc");
  const c10::DeviceGuard guard(self.device());
  at::Tensor out = at::empty({0}, self.options());
  return histc_out(self, bins, min, max, out);
}

}  // namespace openneuron::bridge
