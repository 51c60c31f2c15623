// Random fills drawn from the device generator (Philox), independent of the CPU generator.
#include <ATen/ops/empty.h>
#include <ATen/ops/normal.h>
#include <ATen/ops/uniform.h>
#include <c10/core/DeviceGuard.h>

#include "aten/core/generator.h"
#include "aten/core/op_helpers.h"
#include "aten/core/op_tracking.h"
#include "aten/core/tensor_views.h"
#include "aten/fallback/fallback.h"
#include "aten/ops/ops.h"
#include "kernels/random/random.h"

namespace openneuron::bridge {

namespace {

bool is_random_dtype(at::ScalarType type) {
  return type == at::kFloat || type == at::kBFloat16 || type == at::kHalf;
}

}  // namespace

at::Tensor& uniform_(at::Tensor& self, double from, double to,
                     std::optional<at::Generator> generator) {
  if (!is_random_dtype(self.scalar_type())) {
    return OPENNEURON_FALLBACK(uniform_, self, from, to, generator);
  }
  OPENNEURON_NATIVE_OP("aten::uniform_");
  // PyTorch's own range checks (from <= to, to - from within the dtype): the CPU op on an
  // empty tensor of self's dtype validates and draws nothing.
  at::empty({0}, self.options().device(at::kCPU)).uniform_(from, to);
  if (self.numel() == 0) return self;
  const c10::DeviceGuard guard(self.device());
  auto [seed, offset] = resolve_generator(generator, self.device().index())
                            ->reserve(kernels::random_offset_increment(self.numel()));
  const kernels::TensorView view = elementwise_view_of(self);
  stream_for(self).enqueue("aten::uniform_", [=, seed = seed, offset = offset] {
    kernels::uniform(view, seed, offset, from, to);
  });
  return self;
}

at::Tensor& normal_(at::Tensor& self, double mean, double std,
                    std::optional<at::Generator> generator) {
  if (!is_random_dtype(self.scalar_type())) {
    return OPENNEURON_FALLBACK(normal_, self, mean, std, generator);
  }
  OPENNEURON_NATIVE_OP("aten::normal_");
  TORCH_CHECK(std >= 0.0, "normal expects std >= 0.0, but found std ", std);
  if (self.numel() == 0) return self;
  const c10::DeviceGuard guard(self.device());
  auto [seed, offset] = resolve_generator(generator, self.device().index())
                            ->reserve(kernels::random_offset_increment(self.numel()));
  const kernels::TensorView view = elementwise_view_of(self);
  stream_for(self).enqueue("aten::normal_", [=, seed = seed, offset = offset] {
    kernels::normal(view, seed, offset, mean, std);
  });
  return self;
}

}  // namespace openneuron::bridge
