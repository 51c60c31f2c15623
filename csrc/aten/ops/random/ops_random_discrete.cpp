// Bernoulli, dropout, integer, permutation, exponential, tensor-moment normal and multinomial
// draws from the device generator (Philox), independent of the CPU generator.
#include <ATen/ExpandUtils.h>
#include <ATen/MemoryOverlap.h>
#include <ATen/native/Resize.h>
#include <ATen/ops/bernoulli.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/empty_like.h>
#include <ATen/ops/exponential.h>
#include <ATen/ops/geometric.h>
#include <ATen/ops/mul.h>
#include <ATen/ops/multinomial.h>
#include <ATen/ops/native_dropout.h>
#include <ATen/ops/native_dropout_backward.h>
#include <ATen/ops/normal.h>
#include <ATen/ops/ones_like.h>
#include <ATen/ops/random.h>
#include <ATen/ops/randperm.h>
#include <c10/core/DeviceGuard.h>

#include <algorithm>
#include <limits>

#include "aten/core/generator.h"
#include "aten/core/op_helpers.h"
#include "aten/core/op_tracking.h"
#include "aten/core/tensor_views.h"
#include "aten/fallback/fallback.h"
#include "aten/ops/random/ops_random.h"
#include "kernels/random/random.h"
#include "kernels/random/random_discrete.h"

namespace openneuron::bridge {

namespace {

bool is_native_floating(at::ScalarType type) {
  return type == at::kFloat || type == at::kBFloat16 || type == at::kHalf;
}

// Reserves `increment` counter positions of the generator the op draws from.
std::pair<uint64_t, uint64_t> reserve(const OptionalGenerator& generator, const at::Tensor& on,
                                      uint64_t increment) {
  return resolve_generator(generator, on.device().index())->reserve(increment);
}

// `tensor` as float32 on `device` (kernels read probabilities and moments as fp32).
at::Tensor as_device_float(const at::Tensor& tensor, const c10::Device& device) {
  return tensor.to(device, at::kFloat);
}

// The largest integer random_() produces for a dtype (floats: every integer up to
// 2^digits is exact).
int64_t random_inclusive_max(at::ScalarType type) {
  switch (type) {
    case at::kBool:
      return 1;
    case at::kByte:
      return std::numeric_limits<uint8_t>::max();
    case at::kChar:
      return std::numeric_limits<int8_t>::max();
    case at::kShort:
      return std::numeric_limits<int16_t>::max();
    case at::kInt:
      return std::numeric_limits<int32_t>::max();
    case at::kLong:
      return std::numeric_limits<int64_t>::max();
    case at::kHalf:
      return int64_t{1} << 11;
    case at::kBFloat16:
      return int64_t{1} << 8;
    case at::kFloat:
      return int64_t{1} << 24;
    default:
      TORCH_CHECK(false, "random_: unsupported dtype ", type);
  }
}

bool is_random_integer_dtype(at::ScalarType type) {
  return is_native_floating(type) || type == at::kBool || type == at::kByte || type == at::kChar ||
         type == at::kShort || type == at::kInt || type == at::kLong;
}

// Fills self with low + (64-bit draw mod range); range 0 is the full 2^64.
at::Tensor& launch_random_integers(at::Tensor& self, int64_t low, uint64_t range,
                                   const OptionalGenerator& generator) {
  if (self.numel() == 0) return self;
  const c10::DeviceGuard guard(self.device());
  auto [seed, offset] = reserve(generator, self, kernels::random_offset_increment_64(self.numel()));
  const kernels::TensorView view = view_of(self);
  stream_for(self).enqueue("aten::random_", [=, seed = seed, offset = offset] {
    kernels::random_integers(view, seed, offset, low, range);
  });
  return self;
}

// Fills self on its stream with draw(view, seed, offset), which takes one 32-bit draw per
// element (exponential_, cauchy_, geometric_).
template <typename Draw>
at::Tensor& launch_elementwise_draws(const char* name, at::Tensor& self,
                                     const OptionalGenerator& generator, Draw draw) {
  if (self.numel() == 0) return self;
  const c10::DeviceGuard guard(self.device());
  auto [seed, offset] = reserve(generator, self, kernels::random_offset_increment(self.numel()));
  const kernels::TensorView view = view_of(self);
  stream_for(self).enqueue(name, [=, seed = seed, offset = offset] { draw(view, seed, offset); });
  return self;
}

// Writes mean + std * N(0, 1) into out (already sized); null tensors use the scalars.
void launch_normal(at::Tensor& out, const at::Tensor* mean, double mean_scalar,
                   const at::Tensor* std, double std_scalar, const OptionalGenerator& generator) {
  if (out.numel() == 0) return;
  const c10::DeviceGuard guard(out.device());
  at::Tensor mean_f, std_f;
  std::optional<kernels::TensorView> mean_view, std_view;
  if (mean != nullptr) {
    mean_f = as_device_float(*mean, out.device());
    mean_view = broadcast_view(mean_f, out.sizes());
  }
  if (std != nullptr) {
    std_f = as_device_float(*std, out.device());
    std_view = broadcast_view(std_f, out.sizes());
  }
  auto [seed, offset] = reserve(generator, out, kernels::random_offset_increment(out.numel()));
  const kernels::TensorView out_view = view_of(out);
  stream_for(out).enqueue("aten::normal", [=, seed = seed, offset = offset] {
    kernels::normal_with_moments(out_view, mean_view ? &*mean_view : nullptr, mean_scalar,
                                 std_view ? &*std_view : nullptr, std_scalar, seed, offset);
  });
}

void check_std_scalar(double std) {
  TORCH_CHECK(std >= 0.0, "normal expects std >= 0.0, but found std ", std);
}

void check_moment_tensors(const at::Tensor* mean, const at::Tensor* std) {
  if (mean != nullptr) TORCH_CHECK(!mean->is_complex(), "normal expects mean to be non-complex");
  if (std != nullptr) TORCH_CHECK(!std->is_complex(), "normal expects std to be non-complex");
  // As on the CPU (and CUDA), a negative std value is refused; reading it waits for the stream.
  if (std != nullptr && std->numel() > 0) {
    TORCH_CHECK(std->min().ge(0).item<bool>(), "normal expects all elements of std >= 0.0");
  }
}

// Checks from/to of random_ as PyTorch does, with its own errors and precision warnings: the
// CPU op is run on an empty tensor of self's dtype, which validates and draws nothing.
void check_random_bounds(const at::Tensor& self, int64_t from, std::optional<int64_t> to) {
  at::Tensor probe = at::empty({0}, self.options().device(at::kCPU));
  probe.random_(from, to);
}

bool moments_native(const at::Tensor* mean, const at::Tensor* std, const at::Tensor* out) {
  for (const at::Tensor* t : {mean, std, out}) {
    if (t != nullptr && !is_native_floating(t->scalar_type())) return false;
  }
  return true;
}

}  // namespace

// ---- Bernoulli ----------------------------------------------------------------------------

at::Tensor& bernoulli_float_(at::Tensor& self, double p, OptionalGenerator generator) {
  at::assert_no_internal_overlap(self);  // as the CPU's and CUDA's bernoulli_
  if (!is_native_compute_dtype(self.scalar_type())) {
    return OPENNEURON_FALLBACK(bernoulli__float, self, p, generator);
  }
  OPENNEURON_NATIVE_OP("aten::bernoulli_.float");
  TORCH_CHECK(0 <= p && p <= 1, "bernoulli_ expects p to be in [0, 1], but got p=", p);
  if (self.numel() == 0) return self;
  const c10::DeviceGuard guard(self.device());
  auto [seed, offset] = reserve(generator, self, kernels::random_offset_increment(self.numel()));
  const kernels::TensorView view = view_of(self);
  stream_for(self).enqueue("aten::bernoulli_.float", [=, seed = seed, offset = offset] {
    kernels::bernoulli_scalar(view, seed, offset, p);
  });
  return self;
}

at::Tensor& bernoulli_tensor_(at::Tensor& self, const at::Tensor& p, OptionalGenerator generator) {
  check_same_device("bernoulli_", {&self, &p});
  at::assert_no_internal_overlap(self);  // as the CPU's and CUDA's bernoulli_
  at::assert_no_overlap(self, p);
  if (!is_native_compute_dtype(self.scalar_type()) || !is_native_compute_dtype(p.scalar_type())) {
    return OPENNEURON_FALLBACK(bernoulli__Tensor, self, p, generator);
  }
  OPENNEURON_NATIVE_OP("aten::bernoulli_.Tensor");
  TORCH_CHECK(at::is_expandable_to(p.sizes(), self.sizes()),
              "bernoulli_: probability tensor of shape ", p.sizes(), " is not expandable to ",
              self.sizes());
  if (self.numel() == 0) return self;
  const c10::DeviceGuard guard(self.device());
  const at::Tensor probs = as_device_float(p, self.device());
  const kernels::TensorView probs_view = broadcast_view(probs, self.sizes());
  auto [seed, offset] = reserve(generator, self, kernels::random_offset_increment(self.numel()));
  const kernels::TensorView view = view_of(self);
  stream_for(self).enqueue("aten::bernoulli_.Tensor", [=, seed = seed, offset = offset] {
    kernels::bernoulli_tensor(view, probs_view, seed, offset);
  });
  return self;
}

at::Tensor bernoulli(const at::Tensor& self, OptionalGenerator generator) {
  if (!is_native_compute_dtype(self.scalar_type())) {
    return OPENNEURON_FALLBACK(bernoulli, self, generator);
  }
  at::Tensor out = at::empty_like(self);
  return bernoulli_tensor_(out, self, generator);
}

at::Tensor bernoulli_p(const at::Tensor& self, double p, OptionalGenerator generator) {
  if (!is_native_compute_dtype(self.scalar_type())) {
    return OPENNEURON_FALLBACK(bernoulli_p, self, p, generator);
  }
  at::Tensor out = at::empty_like(self);
  return bernoulli_float_(out, p, generator);
}

at::Tensor& bernoulli_out(const at::Tensor& self, OptionalGenerator generator, at::Tensor& out) {
  check_same_device("bernoulli", {&self, &out});
  if (!is_native_compute_dtype(self.scalar_type()) || !is_native_compute_dtype(out.scalar_type())) {
    return OPENNEURON_FALLBACK(bernoulli_out, self, generator, out);
  }
  at::native::resize_output(out, self.sizes());
  return bernoulli_tensor_(out, self, generator);
}

// ---- Dropout ------------------------------------------------------------------------------

std::tuple<at::Tensor, at::Tensor> native_dropout(const at::Tensor& input, double p,
                                                  std::optional<bool> train) {
  if (!is_native_floating(input.scalar_type())) {
    return OPENNEURON_FALLBACK(native_dropout, input, p, train);
  }
  OPENNEURON_NATIVE_OP("aten::native_dropout");
  // Shapes and special cases as PyTorch: an empty input comes back as is, with an empty
  // mask of its dtype; evaluation mode keeps everything.
  if (input.numel() == 0) return {input, at::empty_like(input)};
  const at::TensorOptions mask_options = input.options().dtype(at::kBool);
  if (train.has_value() && !*train) {
    return {input.clone(), at::ones_like(input, mask_options)};
  }
  const c10::DeviceGuard guard(input.device());
  const double keep = 1.0 - p;
  const double scale = keep == 0.0 ? 0.0 : 1.0 / keep;
  at::Tensor output = at::empty_like(input);
  at::Tensor mask = at::empty_like(input, mask_options);
  auto [seed, offset] =
      reserve(std::nullopt, input, kernels::random_offset_increment(input.numel()));
  const kernels::TensorView in_view = view_of(input);
  const kernels::TensorView out_view = view_of(output);
  const kernels::TensorView mask_view = view_of(mask);
  stream_for(input).enqueue("aten::native_dropout", [=, seed = seed, offset = offset] {
    kernels::dropout_forward(in_view, out_view, mask_view, seed, offset, p, scale);
  });
  return {output, mask};
}

at::Tensor native_dropout_backward(const at::Tensor& grad_output, const at::Tensor& mask,
                                   double scale) {
  check_same_device("native_dropout_backward", {&grad_output, &mask});
  TORCH_CHECK(mask.scalar_type() == at::kBool, "Mask should be Bool Scalar Type",
              mask.scalar_type());
  if (is_native_compute_dtype(grad_output.scalar_type()) &&
      !is_native_floating(grad_output.scalar_type())) {
    // Integer and bool gradients: the CPU's own composition, grad * mask * scale, whose Python
    // float scale makes the result the default float dtype.
    OPENNEURON_NATIVE_OP("aten::native_dropout_backward");
    return at::mul(at::mul(grad_output, mask), scale);
  }
  if (!is_native_floating(grad_output.scalar_type())) {
    return OPENNEURON_FALLBACK(native_dropout_backward, grad_output, mask, scale);
  }
  OPENNEURON_NATIVE_OP("aten::native_dropout_backward");
  const std::vector<int64_t> shape = at::infer_size(grad_output.sizes(), mask.sizes());
  at::Tensor grad_input = at::empty(shape, grad_output.options());
  if (grad_input.numel() == 0) return grad_input;
  const c10::DeviceGuard guard(grad_input.device());
  const kernels::TensorView grad_view = broadcast_view(grad_output, shape);
  const kernels::TensorView mask_view = broadcast_view(mask, shape);
  const kernels::TensorView out_view = view_of(grad_input);
  stream_for(grad_input).enqueue("aten::native_dropout_backward", [=] {
    kernels::dropout_backward(grad_view, mask_view, out_view, scale);
  });
  return grad_input;
}

// ---- Integers, permutations, exponential ---------------------------------------------------

at::Tensor& random_(at::Tensor& self, OptionalGenerator generator) {
  if (!is_random_integer_dtype(self.scalar_type())) {
    return OPENNEURON_FALLBACK(random_, self, generator);
  }
  OPENNEURON_NATIVE_OP("aten::random_");
  const uint64_t range = static_cast<uint64_t>(random_inclusive_max(self.scalar_type())) + 1;
  return launch_random_integers(self, 0, range, generator);
}

// float64 holds the drawn integers exactly: drawn as int64 and converted (no float64
// arithmetic, which the device leaves to the host).
bool draws_through_int64(const at::Tensor& self) { return self.scalar_type() == at::kDouble; }

at::Tensor& random_to_(at::Tensor& self, int64_t to, OptionalGenerator generator) {
  if (draws_through_int64(self)) {
    check_random_bounds(self, 0, to);  // the CPU's bound checks for a float64 self
    at::Tensor draws = at::empty(self.sizes(), self.options().dtype(at::kLong));
    return self.copy_(random_to_(draws, to, generator));
  }
  if (!is_random_integer_dtype(self.scalar_type())) {
    return OPENNEURON_FALLBACK(random__to, self, to, generator);
  }
  OPENNEURON_NATIVE_OP("aten::random_.to");
  check_random_bounds(self, 0, to);
  return launch_random_integers(self, 0, static_cast<uint64_t>(to), generator);
}

at::Tensor& random_from_(at::Tensor& self, int64_t from, std::optional<int64_t> to,
                         OptionalGenerator generator) {
  if (draws_through_int64(self) && to.has_value()) {
    // The CPU's bound checks for a float64 self, at the call.
    check_random_bounds(self, from, to);
    at::Tensor draws = at::empty(self.sizes(), self.options().dtype(at::kLong));
    return self.copy_(random_from_(draws, from, to, generator));
  }
  if (!is_random_integer_dtype(self.scalar_type())) {
    return OPENNEURON_FALLBACK(random__from, self, from, to, generator);
  }
  OPENNEURON_NATIVE_OP("aten::random_.from");
  check_random_bounds(self, from, to);
  if (to.has_value()) {
    return launch_random_integers(
        self, from, static_cast<uint64_t>(*to) - static_cast<uint64_t>(from), generator);
  }
  if (from == std::numeric_limits<int64_t>::lowest() && self.scalar_type() == at::kLong) {
    return launch_random_integers(self, from, 0, generator);  // every int64
  }
  const int64_t max = random_inclusive_max(self.scalar_type());
  TORCH_CHECK(from <= max, "random_ expects 'from' to be less than 'to', but got from=", from,
              " >= to_inc=", max);
  return launch_random_integers(
      self, from, static_cast<uint64_t>(max) - static_cast<uint64_t>(from) + 1, generator);
}

at::Tensor& randperm_generator_out(int64_t n, OptionalGenerator generator, at::Tensor& out) {
  const at::ScalarType type = out.scalar_type();
  if (!is_random_integer_dtype(type) || type == at::kBool) {
    return OPENNEURON_FALLBACK(randperm_generator_out, n, generator, out);
  }
  OPENNEURON_NATIVE_OP("aten::randperm.generator_out");
  TORCH_CHECK(n >= 0, "n must be non-negative, got", n);
  TORCH_CHECK(n == 0 || n - 1 <= random_inclusive_max(type),
              "n is too large for result tensor type: '", out.toString(), "'");
  at::native::resize_output(out, {n});
  if (n == 0) return out;
  const c10::DeviceGuard guard(out.device());
  auto [seed, offset] = reserve(generator, out, kernels::random_offset_increment_64(n));
  const kernels::TensorView view = view_of(out);
  stream_for(out).enqueue("aten::randperm.generator_out", [=, seed = seed, offset = offset] {
    kernels::random_permutation(view, seed, offset);
  });
  return out;
}

at::Tensor& exponential_(at::Tensor& self, double lambd, OptionalGenerator generator) {
  if (!is_native_floating(self.scalar_type())) {
    return OPENNEURON_FALLBACK(exponential_, self, lambd, generator);
  }
  OPENNEURON_NATIVE_OP("aten::exponential_");
  TORCH_CHECK(lambd > 0.0, "exponential_ expects lambda > 0.0, but found lambda=", lambd);
  return launch_elementwise_draws(
      "aten::exponential_", self, generator,
      [=](const kernels::TensorView& view, uint64_t seed, uint64_t offset) {
        kernels::exponential(view, seed, offset, lambd);
      });
}

at::Tensor& cauchy_(at::Tensor& self, double median, double sigma, OptionalGenerator generator) {
  if (!is_native_floating(self.scalar_type())) {
    return OPENNEURON_FALLBACK(cauchy_, self, median, sigma, generator);
  }
  OPENNEURON_NATIVE_OP("aten::cauchy_");
  TORCH_CHECK(sigma > 0.0, "cauchy_ expects sigma > 0.0, but found sigma=", sigma);
  return launch_elementwise_draws(
      "aten::cauchy_", self, generator,
      [=](const kernels::TensorView& view, uint64_t seed, uint64_t offset) {
        kernels::cauchy(view, seed, offset, median, sigma);
      });
}

// exp of a normal draw: drawn and exponentiated in fp32, rounded once into a 16-bit self.
at::Tensor& log_normal_(at::Tensor& self, double mean, double std, OptionalGenerator generator) {
  if (!is_native_floating(self.scalar_type())) {
    return OPENNEURON_FALLBACK(log_normal_, self, mean, std, generator);
  }
  OPENNEURON_NATIVE_OP("aten::log_normal_");
  TORCH_CHECK(std > 0.0, "log_normal_ expects std > 0.0, but found std=", std);
  if (self.numel() == 0) return self;
  const c10::DeviceGuard guard(self.device());
  if (self.scalar_type() == at::kFloat) return self.normal_(mean, std, generator).exp_();
  at::Tensor draws = at::empty(self.sizes(), self.options().dtype(at::kFloat));
  self.copy_(draws.normal_(mean, std, generator).exp_());
  return self;
}

// Any numeric dtype, as the CPU's geometric_ (bool and 64-bit floats stay on the host).
at::Tensor& geometric_(at::Tensor& self, double p, OptionalGenerator generator) {
  const at::ScalarType dtype = self.scalar_type();
  if (!is_native_compute_dtype(dtype) || dtype == at::kBool) {
    return OPENNEURON_FALLBACK(geometric_, self, p, generator);
  }
  OPENNEURON_NATIVE_OP("aten::geometric_");
  TORCH_CHECK(0 < p && p < 1, "geometric_ expects p to be in (0, 1), but got p=", p);
  return launch_elementwise_draws(
      "aten::geometric_", self, generator,
      [=](const kernels::TensorView& view, uint64_t seed, uint64_t offset) {
        kernels::geometric(view, seed, offset, p);
      });
}

// ---- Normal with tensor moments --------------------------------------------------------------

at::Tensor& normal_tensor_float_out(const at::Tensor& mean, double std, OptionalGenerator generator,
                                    at::Tensor& out) {
  check_same_device("normal", {&mean, &out});
  if (!moments_native(&mean, nullptr, &out)) {
    return OPENNEURON_FALLBACK(normal_Tensor_float_out, mean, std, generator, out);
  }
  OPENNEURON_NATIVE_OP("aten::normal.Tensor_float_out");
  check_std_scalar(std);
  check_moment_tensors(&mean, nullptr);
  at::native::resize_output(out, mean.sizes());
  launch_normal(out, &mean, 0.0, nullptr, std, generator);
  return out;
}

at::Tensor normal_tensor_float(const at::Tensor& mean, double std, OptionalGenerator generator) {
  if (!moments_native(&mean, nullptr, nullptr)) {
    return OPENNEURON_FALLBACK(normal_Tensor_float, mean, std, generator);
  }
  OPENNEURON_NATIVE_OP("aten::normal.Tensor_float");
  check_std_scalar(std);
  check_moment_tensors(&mean, nullptr);
  at::Tensor out = at::empty(mean.sizes(), mean.options());
  launch_normal(out, &mean, 0.0, nullptr, std, generator);
  return out;
}

at::Tensor& normal_float_tensor_out(double mean, const at::Tensor& std, OptionalGenerator generator,
                                    at::Tensor& out) {
  check_same_device("normal", {&std, &out});
  if (!moments_native(nullptr, &std, &out)) {
    return OPENNEURON_FALLBACK(normal_float_Tensor_out, mean, std, generator, out);
  }
  OPENNEURON_NATIVE_OP("aten::normal.float_Tensor_out");
  check_moment_tensors(nullptr, &std);
  at::native::resize_output(out, std.sizes());
  launch_normal(out, nullptr, mean, &std, 0.0, generator);
  return out;
}

at::Tensor normal_float_tensor(double mean, const at::Tensor& std, OptionalGenerator generator) {
  if (!moments_native(nullptr, &std, nullptr)) {
    return OPENNEURON_FALLBACK(normal_float_Tensor, mean, std, generator);
  }
  OPENNEURON_NATIVE_OP("aten::normal.float_Tensor");
  check_moment_tensors(nullptr, &std);
  at::Tensor out = at::empty(std.sizes(), std.options());
  launch_normal(out, nullptr, mean, &std, 0.0, generator);
  return out;
}

at::Tensor& normal_tensor_tensor_out(const at::Tensor& mean, const at::Tensor& std,
                                     OptionalGenerator generator, at::Tensor& out) {
  check_same_device("normal", {&mean, &std, &out});
  if (!moments_native(&mean, &std, &out)) {
    return OPENNEURON_FALLBACK(normal_Tensor_Tensor_out, mean, std, generator, out);
  }
  OPENNEURON_NATIVE_OP("aten::normal.Tensor_Tensor_out");
  check_moment_tensors(&mean, &std);
  at::native::resize_output(out, at::infer_size(mean.sizes(), std.sizes()));
  launch_normal(out, &mean, 0.0, &std, 0.0, generator);
  return out;
}

at::Tensor normal_tensor_tensor(const at::Tensor& mean, const at::Tensor& std,
                                OptionalGenerator generator) {
  check_same_device("normal", {&mean, &std});
  if (!moments_native(&mean, &std, nullptr)) {
    return OPENNEURON_FALLBACK(normal_Tensor_Tensor, mean, std, generator);
  }
  OPENNEURON_NATIVE_OP("aten::normal.Tensor_Tensor");
  check_moment_tensors(&mean, &std);
  at::Tensor out = at::empty(at::infer_size(mean.sizes(), std.sizes()), mean.options());
  launch_normal(out, &mean, 0.0, &std, 0.0, generator);
  return out;
}

// ---- Multinomial -----------------------------------------------------------------------------

at::Tensor& multinomial_out(const at::Tensor& self, int64_t num_samples, bool replacement,
                            OptionalGenerator generator, at::Tensor& out) {
  check_same_device("multinomial", {&self, &out});
  if (!is_native_floating(self.scalar_type()) || out.scalar_type() != at::kLong) {
    return OPENNEURON_FALLBACK(multinomial_out, self, num_samples, replacement, generator, out);
  }
  OPENNEURON_NATIVE_OP("aten::multinomial.out");
  TORCH_CHECK(self.dim() > 0 && self.dim() <= 2, "prob_dist must be 1 or 2 dim");
  const int64_t categories = self.size(-1);
  TORCH_CHECK(num_samples > 0, "cannot sample n_sample <= 0 samples");
  TORCH_CHECK(replacement || num_samples <= categories,
              "cannot sample n_sample > prob_dist.size(-1) samples without replacement");
  const int64_t rows = self.dim() == 1 ? 1 : self.size(0);
  if (self.dim() == 1) {
    at::native::resize_output(out, {num_samples});
  } else {
    at::native::resize_output(out, {rows, num_samples});
  }
  if (rows == 0 || categories == 0) return out;
  const c10::DeviceGuard guard(self.device());
  const at::Tensor probs = as_device_float(self, self.device()).reshape({rows, categories});
  // The kernel writes a [rows, samples] int64 view; a 1-D out gains a leading dim.
  const at::Tensor out_2d = out.dim() == 1 ? out.unsqueeze(0) : out;
  const uint64_t draws = static_cast<uint64_t>(rows) * std::max(num_samples, categories);
  auto [seed, offset] = reserve(generator, self, kernels::random_offset_increment_64(draws));
  const kernels::TensorView probs_view = view_of(probs);
  const kernels::TensorView out_view = view_of(out_2d);
  stream_for(out).enqueue("aten::multinomial", [=, seed = seed, offset = offset] {
    kernels::multinomial(probs_view, out_view, num_samples, replacement, seed, offset);
  });
  return out;
}

at::Tensor multinomial(const at::Tensor& self, int64_t num_samples, bool replacement,
                       OptionalGenerator generator) {
  if (!is_native_floating(self.scalar_type())) {
    return OPENNEURON_FALLBACK(multinomial, self, num_samples, replacement, generator);
  }
  at::Tensor out = at::empty({0}, self.options().dtype(at::kLong));
  return multinomial_out(self, num_samples, replacement, generator, out);
}

}  // namespace openneuron::bridge
