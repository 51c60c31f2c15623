// gelu and its gradient over dense arrays through oneDNN's JIT eltwise kernels (the ones
// PyTorch's CPU backend uses for gelu), split across kernel threads.
#pragma once

#include <cstdint>

#include "kernels/core/dtype.h"

namespace openneuron::kernels {

// out[i] = gelu(in[i]) for i < count; erf form, or the tanh approximation. Arrays are dense
// and of `dtype`; out may be in. Returns false, having written nothing, when oneDNN cannot
// run the dtype (only Float32 and BFloat16 are tried).
bool dnnl_gelu(void* out, const void* in, int64_t count, DType dtype, bool tanh_approximation);

// grad_in[i] = grad_out[i] * gelu'(in[i]); same contract as dnnl_gelu. grad_in may be grad_out.
bool dnnl_gelu_backward(void* grad_in, const void* grad_out, const void* in, int64_t count,
                        DType dtype, bool tanh_approximation);

}  // namespace openneuron::kernels
