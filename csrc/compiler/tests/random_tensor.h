// Random host tensors for the compiler's executor tests.
#pragma once

#include <cstdint>
#include <random>
#include <utility>
#include <vector>

#include "compiler/reference_interpreter.h"
#include "kernels/pointwise/cast.h"

namespace openneuron::compiler::testing {

// A tensor of `dtype` and `shape` holding normal(0, stddev) draws from `rng`, drawn in fp32 and
// rounded once to dtype.
inline HostTensor random_tensor(DType dtype, std::vector<int64_t> shape, std::mt19937& rng,
                                float stddev) {
  HostTensor t(dtype, std::move(shape));
  std::normal_distribution<float> normal(0.0f, stddev);
  HostTensor source(DType::Float32, t.shape);
  auto* values = reinterpret_cast<float*>(source.bytes.data());
  for (int64_t i = 0; i < t.numel(); ++i) values[i] = normal(rng);
  kernels::copy(t.view(), source.view());
  return t;
}

}  // namespace openneuron::compiler::testing
