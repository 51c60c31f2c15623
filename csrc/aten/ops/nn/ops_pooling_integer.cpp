// 2-D pooling of integer images, as the CPU pools them. Max: windows gathered with the padding
// at the dtype's minimum, the maximum of each, and its index the first real (unpadded)
// position holding that maximum in the window's row-major scan. Average (int64): each window's
// sum truncated by its divisor (the window's cells inside the padded image, or only the real
// ones, or the override).
#include <ATen/Dispatch.h>
#include <ATen/ops/arange.h>
#include <ATen/ops/argmax.h>
#include <ATen/ops/constant_pad_nd.h>
#include <ATen/ops/div.h>
#include <ATen/ops/full_like.h>
#include <ATen/ops/gather.h>
#include <ATen/ops/where.h>
#include <ATen/ops/zeros.h>
#include <c10/core/DeviceGuard.h>

#include <limits>

#include "aten/core/op_tracking.h"
#include "aten/ops/nn/ops_nn.h"
#include "aten/ops/nn/sliding_windows.h"

namespace openneuron::bridge {

std::tuple<at::Tensor, at::Tensor> integer_max_pool2d(const at::Tensor& self, const Window& w,
                                                      int64_t out_h, int64_t out_w) {
  OPENNEURON_NATIVE_OP("aten::max_pool2d_with_indices");
  const c10::DeviceGuard guard(self.device());
  const bool batched = self.dim() == 4;
  const at::Tensor x = batched ? self : self.unsqueeze(0);
  const int64_t n = x.size(0), channels = x.size(1), height = x.size(2), width = x.size(3);
  const int64_t taps = w.kernel[0] * w.kernel[1], cells = out_h * out_w;
  at::Scalar lowest;
  AT_DISPATCH_INTEGRAL_TYPES(x.scalar_type(), "max_pool2d",
                             [&] { lowest = std::numeric_limits<scalar_t>::lowest(); });
  const at::Tensor values =
      gather_windows(x, w, out_h, out_w, lowest).view({n, channels, taps, cells});
  // Each window's input positions, -1 where it covers padding.
  const at::Tensor plane = at::arange(height * width, x.options().dtype(at::kLong));
  const at::Tensor positions =
      gather_windows(plane.view({1, 1, height, width}), w, out_h, out_w, -1)
          .view({1, 1, taps, cells});
  const at::Tensor best = values.amax({2}, /*keepdim=*/true);
  const at::Tensor first =
      values.eq(best).logical_and(positions.ge(0)).to(at::kByte).argmax(2, /*keepdim=*/true);
  at::Tensor out = best.view({n, channels, out_h, out_w});
  at::Tensor indices = positions.expand({n, channels, taps, cells})
                           .gather(2, first)
                           .view({n, channels, out_h, out_w});
  if (batched) {
    // Laid out as the input suggests (channels_last stays so), as the CPU's result.
    const at::MemoryFormat format = self.suggest_memory_format();
    return {out.contiguous(format), indices.contiguous(format)};
  }
  return {out.squeeze(0), indices.squeeze(0)};
}

at::Tensor integer_avg_pool2d(const at::Tensor& self, const Window& w, int64_t out_h, int64_t out_w,
                              bool count_include_pad, std::optional<int64_t> divisor_override) {
  OPENNEURON_NATIVE_OP("aten::avg_pool2d");
  const c10::DeviceGuard guard(self.device());
  const bool batched = self.dim() == 4;
  const at::Tensor x = batched ? self : self.unsqueeze(0);
  const int64_t n = x.size(0), channels = x.size(1), height = x.size(2), width = x.size(3);
  const int64_t taps = w.kernel[0] * w.kernel[1], cells = out_h * out_w;
  const at::Tensor sums = gather_windows(x, w, out_h, out_w, 0)
                              .view({n, channels, taps, cells})
                              .sum({2}, /*keepdim=*/false, at::kLong);
  // Cells of each window: >= 0 on the image, -1 on its padding, -2 past it (ceil mode).
  at::Tensor marks = at::zeros({1, 1, height, width}, x.options().dtype(at::kLong));
  marks = at::constant_pad_nd(marks, {w.padding[1], w.padding[1], w.padding[0], w.padding[0]}, -1);
  Window unpadded = w;
  unpadded.padding[0] = unpadded.padding[1] = 0;
  const at::Tensor cells_of = gather_windows(marks, unpadded, out_h, out_w, -2).view({taps, cells});
  const at::Tensor real = cells_of.ge(0).sum({0});
  // The override as given (negative ones too); a window with no real cell gives 0, as on the
  // CPU, so its count divides nothing.
  const at::Tensor divisor =
      divisor_override.has_value()
          ? at::full_like(real, *divisor_override)
          : (count_include_pad ? cells_of.ge(-1).sum({0}) : real).clamp_min(1);
  at::Tensor out = at::where(real.gt(0), at::div(sums, divisor, "trunc"), 0)
                       .to(self.scalar_type())
                       .view({n, channels, out_h, out_w});
  if (batched) return out.contiguous(self.suggest_memory_format());
  return out.squeeze(0);
}

}  // namespace openneuron::bridge
