#include "aten/core/host_access.h"

#include <ATen/ops/from_blob.h>

#include "aten/core/runtime_errors.h"
#include "aten/core/tensor_views.h"

namespace openneuron::bridge {

at::Tensor host_alias(const at::Tensor& tensor) {
  if (!tensor.is_privateuseone()) return tensor;
  at::Tensor alias = at::from_blob(tensor.data_ptr(), tensor.sizes(), tensor.strides(),
                                   tensor.options().device(at::kCPU));
  alias._set_conj(tensor.is_conj());
  alias._set_neg(tensor.is_neg());
  return alias;
}

at::Tensor readable_on_host(const at::Tensor& tensor) {
  const at::Tensor readable = tensor.dim() > kernels::kMaxDims ? tensor.reshape({-1}) : tensor;
  if (readable.is_privateuseone()) OPENNEURON_RUNTIME_CALL(stream_for(readable).synchronize());
  return readable;
}

}  // namespace openneuron::bridge
