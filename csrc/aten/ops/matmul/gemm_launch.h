// Queuing one matrix product on the device, shared by the matrix-product ops.
#pragma once

#include <ATen/core/Tensor.h>

namespace openneuron::bridge {

// Queues out = beta * bias + alpha * (a @ b) on out's stream. bias may be undefined (or beta 0:
// then bias is not read). Floating operands accumulate in fp32 and round once into out, which
// may be fp32 for 16-bit operands (then nothing is rounded); integer ones wrap as the CPU's
// do. Operands that alias out are copied first. Shapes and devices are the caller's checks.
void launch_gemm(const char* name, const at::Tensor& out, const at::Tensor& a, const at::Tensor& b,
                 const at::Tensor& bias, const at::Scalar& beta, const at::Scalar& alpha);

}  // namespace openneuron::bridge
