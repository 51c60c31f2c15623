"""Device kernels for transformers' grouped-product fallback ops.

Under ``torch.compile`` transformers' Mixture-of-Experts layers call
``torch.ops.transformers.grouped_mm_fallback`` (and its ``_backward``) instead of
``torch._grouped_mm`` unless the weights are bf16, because Inductor compiles ``_grouped_mm`` for
bf16 only. The ops' own implementation is a Python loop of one ``mm`` per expert. On ``neuron``
they run as ``torch._grouped_mm``, the device's one-kernel grouped product, which computes the
same thing (rows past the last offset, and empty experts' weight gradients, are zeros in both).
"""

from __future__ import annotations

import torch

_registered = False

# The ops as the transformers versions these kernels were written against define them; other
# definitions are left to their own implementation.
_SCHEMAS = {
    "grouped_mm_fallback": "transformers::grouped_mm_fallback(Tensor input, Tensor weight, "
    "Tensor offs) -> Tensor",
    "grouped_mm_fallback_backward": "transformers::grouped_mm_fallback_backward(Tensor input, "
    "Tensor weight, Tensor offs, Tensor grad_output) -> (Tensor, Tensor)",
}


def _forward(input: torch.Tensor, weight: torch.Tensor, offs: torch.Tensor) -> torch.Tensor:
    return torch._grouped_mm(input, weight, offs.to(torch.int32))


def _backward(
    input: torch.Tensor, weight: torch.Tensor, offs: torch.Tensor, grad_output: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    offs = offs.to(torch.int32)
    grad_input = torch._grouped_mm(grad_output, weight.transpose(-2, -1), offs)
    grad_weight = torch._grouped_mm(input.t(), grad_output, offs)
    return grad_input, grad_weight


def register_if_loaded() -> bool:
    """Gives the ops their ``neuron`` kernels, once, if transformers has defined them as in
    ``_SCHEMAS``. Returns whether they are registered."""
    global _registered
    if _registered:
        return True
    namespace = torch.ops.transformers
    for name, schema in _SCHEMAS.items():
        if not hasattr(namespace, name) or str(getattr(namespace, name).default._schema) != schema:
            return False
    device = torch._C._get_privateuse1_backend_name()
    torch.library.register_kernel("transformers::grouped_mm_fallback", device, _forward)
    torch.library.register_kernel("transformers::grouped_mm_fallback_backward", device, _backward)
    _registered = True
    return True
