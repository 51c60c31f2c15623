"""Printing a neuron tensor formats a host copy, as PyTorch does for XLA and MTIA tensors.

PyTorch's formatter computes with float64 on the tensor's device; float64 is not a
NeuronCore type, so formatting on the device would only exercise the host fallback.
"""

import torch
import torch._tensor_str as tensor_str

_original_str = tensor_str._str
_PREFIX = "tensor("


def _has_real_data(self: torch.Tensor) -> bool:
    """False for fake, functional and other wrapper tensors: they have no values to copy, and
    PyTorch's own formatter already prints them without touching data."""
    return (
        type(self) in (torch.Tensor, torch.nn.Parameter)
        and not torch._is_functional_tensor(self)
        and torch._C._len_torch_dispatch_stack() == 0
    )


def _neuron_str(self: torch.Tensor, *, tensor_contents=None) -> str:
    if (
        self.device.type != "neuron"
        or self.is_sparse
        or tensor_contents is not None
        or not _has_real_data(self)
    ):
        return _original_str(self, tensor_contents=tensor_contents)
    host = self.detach().to("cpu")
    if self.requires_grad:
        host.requires_grad_(True)
    text = _original_str(host)
    with torch.no_grad():
        # A quantized tensor prints its dequantized values, as PyTorch's formatter does.
        values = host.detach().dequantize() if host.is_quantized else host.detach()
        data = tensor_str._tensor_str(values, len(_PREFIX)) if host.numel() else "[]"
    if not text.startswith(_PREFIX + data):
        return _original_str(self, tensor_contents=tensor_contents)
    rest = text[len(_PREFIX + data) :]
    if self.grad_fn is not None:
        rest = rest.replace("requires_grad=True", f"grad_fn=<{type(self.grad_fn).__name__}>")
    return f"{_PREFIX}{data}, device='{self.device}'{rest}"


def _run_uncompiled_under_dynamo(fn) -> None:
    """Dynamo compiles every Python frame a compiled function's eager part runs, except
    PyTorch's own: so `print(x)` after a graph break would capture `fn`'s host copy as new
    graphs (extra frames for every backend, as no CPU tensor's printing does). Marking its code
    skipped, with everything it calls, keeps printing eager; the C-level mark needs no
    `torch._dynamo` import and no `torch._dynamo.reset()` clears it."""
    from torch._C._dynamo import eval_frame

    skip = eval_frame._FrameAction.SKIP
    eval_frame.set_code_exec_strategy(fn.__code__, eval_frame._FrameExecStrategy(skip, skip))


def install() -> None:
    tensor_str._str = _neuron_str
    _run_uncompiled_under_dynamo(_neuron_str)
