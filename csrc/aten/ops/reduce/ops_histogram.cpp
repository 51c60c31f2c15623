// torch.histc and torch.bincount on the device: MoE routers count tokens per expert with
// them (histc at the integer dtypes CUDA accepts and the CPU does not).
#include <ATen/native/Resize.h>
#include <ATen/ops/bincount.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/histc.h>
#include <ATen/ops/linspace.h>
#include <ATen/ops/zeros.h>
#include <c10/core/DeviceGuard.h>

#include <algorithm>
#include <cmath>

#include "aten/core/op_helpers.h"
#include "aten/core/op_tracking.h"
#include "aten/core/runtime_errors.h"
#include "aten/core/tensor_views.h"
#include "aten/fallback/fallback.h"
#include "aten/ops/ops_reduce_index.h"
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

at::Tensor bincount(const at::Tensor& self, const std::optional<at::Tensor>& weights,
                    int64_t minlength) {
  const at::Tensor weight = weights.value_or(at::Tensor());
  // Float weights sum in float32; others give float64 sums, which the host computes.
  const bool native = at::isIntegralType(self.scalar_type(), /*includeBool=*/false) &&
                      (!weight.defined() || weight.scalar_type() == at::kFloat);
  if (!native) return OPENNEURON_FALLBACK(bincount, self, weights, minlength);
  OPENNEURON_NATIVE_OP("aten::bincount");
  const c10::Device device = check_same_device("bincount", {&self, &weight});
  const c10::DeviceGuard guard(device);
  TORCH_CHECK(minlength >= 0, "minlength should be >= 0");
  TORCH_CHECK(self.dim() == 1, "bincount only supports 1-d non-negative integral inputs.");
  TORCH_CHECK(!weight.defined() || (weight.dim() == 1 && weight.size(0) == self.size(0)),
              "weights should be 1-d and have the same length as input");
  // The output's length is the largest value + 1: the call waits for the input's stream.
  int64_t bins = minlength;
  if (self.numel() > 0) {
    OPENNEURON_RUNTIME_CALL(stream_for(self).synchronize());
    double low = 0;
    double high = 0;
    kernels::min_max(view_of(self), &low, &high);
    TORCH_CHECK(low >= 0, "bincount only supports 1-d non-negative integral inputs.");
    bins = std::max<int64_t>(bins, static_cast<int64_t>(high) + 1);
  }
  at::Tensor out =
      at::zeros({bins}, self.options().dtype(weight.defined() ? at::kFloat : at::kLong));
  if (self.numel() == 0) return out;
  const kernels::TensorView out_view = view_of(out);
  const kernels::TensorView in_view = view_of(self);
  const kernels::TensorView weight_view =
      weight.defined() ? view_of(weight) : kernels::TensorView();
  const bool weighted = weight.defined();
  stream_for(out).enqueue("aten::bincount", [=] {
    kernels::bincount(out_view, in_view, weighted ? &weight_view : nullptr);
  });
  return out;
}

}  // namespace openneuron::bridge
