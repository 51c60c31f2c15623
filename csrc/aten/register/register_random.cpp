// Registrations of the random-number kernels beyond uniform_/normal_ (those two are in
// register_core.cpp).
#include <torch/library.h>

#include "aten/ops/random/ops_random.h"

namespace openneuron::bridge {

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("bernoulli_.float", TORCH_FN(bernoulli_float_));
  m.impl("bernoulli_.Tensor", TORCH_FN(bernoulli_tensor_));
  m.impl("bernoulli", TORCH_FN(bernoulli));
  m.impl("bernoulli.p", TORCH_FN(bernoulli_p));
  m.impl("bernoulli.out", TORCH_FN(bernoulli_out));

  m.impl("native_dropout", TORCH_FN(native_dropout));
  m.impl("native_dropout_backward", TORCH_FN(native_dropout_backward));

  m.impl("random_", TORCH_FN(random_));
  m.impl("random_.to", TORCH_FN(random_to_));
  m.impl("random_.from", TORCH_FN(random_from_));
  m.impl("randperm.generator_out", TORCH_FN(randperm_generator_out));
  m.impl("exponential_", TORCH_FN(exponential_));
  m.impl("geometric_", TORCH_FN(geometric_));
  m.impl("cauchy_", TORCH_FN(cauchy_));
  m.impl("log_normal_", TORCH_FN(log_normal_));

  m.impl("normal.Tensor_float", TORCH_FN(normal_tensor_float));
  m.impl("normal.Tensor_float_out", TORCH_FN(normal_tensor_float_out));
  m.impl("normal.float_Tensor", TORCH_FN(normal_float_tensor));
  m.impl("normal.float_Tensor_out", TORCH_FN(normal_float_tensor_out));
  m.impl("normal.Tensor_Tensor", TORCH_FN(normal_tensor_tensor));
  m.impl("normal.Tensor_Tensor_out", TORCH_FN(normal_tensor_tensor_out));

  m.impl("multinomial", TORCH_FN(multinomial));
  m.impl("multinomial.out", TORCH_FN(multinomial_out));
}

}  // namespace openneuron::bridge
