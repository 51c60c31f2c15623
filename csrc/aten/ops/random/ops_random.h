// Random-number ATen kernels beyond uniform_/normal_ (ops_random_discrete.cpp), registered in
// register_random.cpp.
#pragma once

#include <ATen/core/Generator.h>
#include <ATen/core/Tensor.h>

#include <optional>
#include <tuple>

namespace openneuron::bridge {

using OptionalGenerator = std::optional<at::Generator>;

// Bernoulli draws.
at::Tensor& bernoulli_float_(at::Tensor& self, double p, OptionalGenerator generator);
at::Tensor& bernoulli_tensor_(at::Tensor& self, const at::Tensor& p, OptionalGenerator generator);
at::Tensor bernoulli(const at::Tensor& self, OptionalGenerator generator);
at::Tensor bernoulli_p(const at::Tensor& self, double p, OptionalGenerator generator);
at::Tensor& bernoulli_out(const at::Tensor& self, OptionalGenerator generator, at::Tensor& out);

// Dropout (what nn.Dropout / F.dropout call in training mode).
std::tuple<at::Tensor, at::Tensor> native_dropout(const at::Tensor& input, double p,
                                                  std::optional<bool> train);
at::Tensor native_dropout_backward(const at::Tensor& grad_output, const at::Tensor& mask,
                                   double scale);

// Integers, permutations, exponential.
at::Tensor& random_(at::Tensor& self, OptionalGenerator generator);
at::Tensor& random_to_(at::Tensor& self, int64_t to, OptionalGenerator generator);
at::Tensor& random_from_(at::Tensor& self, int64_t from, std::optional<int64_t> to,
                         OptionalGenerator generator);
at::Tensor& randperm_generator_out(int64_t n, OptionalGenerator generator, at::Tensor& out);
at::Tensor& exponential_(at::Tensor& self, double lambd, OptionalGenerator generator);
at::Tensor& geometric_(at::Tensor& self, double p, OptionalGenerator generator);
at::Tensor& cauchy_(at::Tensor& self, double median, double sigma, OptionalGenerator generator);
at::Tensor& log_normal_(at::Tensor& self, double mean, double std, OptionalGenerator generator);

// Normal draws with tensor moments.
at::Tensor normal_tensor_float(const at::Tensor& mean, double std, OptionalGenerator generator);
at::Tensor& normal_tensor_float_out(const at::Tensor& mean, double std, OptionalGenerator generator,
                                    at::Tensor& out);
at::Tensor normal_float_tensor(double mean, const at::Tensor& std, OptionalGenerator generator);
at::Tensor& normal_float_tensor_out(double mean, const at::Tensor& std, OptionalGenerator generator,
                                    at::Tensor& out);
at::Tensor normal_tensor_tensor(const at::Tensor& mean, const at::Tensor& std,
                                OptionalGenerator generator);
at::Tensor& normal_tensor_tensor_out(const at::Tensor& mean, const at::Tensor& std,
                                     OptionalGenerator generator, at::Tensor& out);

// Categorical sampling.
at::Tensor multinomial(const at::Tensor& self, int64_t num_samples, bool replacement,
                       OptionalGenerator generator);
at::Tensor& multinomial_out(const at::Tensor& self, int64_t num_samples, bool replacement,
                            OptionalGenerator generator, at::Tensor& out);

}  // namespace openneuron::bridge
