// Special functions the device composes from its native ops: mvlgamma's out= form (the
// functional one is PyTorch's composite of arange, lgamma and sum, all native).
#pragma once

#include <ATen/ATen.h>

namespace openneuron::bridge {

// out = mvlgamma(self, p), with the CPU's castability check of out's dtype.
at::Tensor& mvlgamma_out(const at::Tensor& self, int64_t p, at::Tensor& out);

}  // namespace openneuron::bridge
