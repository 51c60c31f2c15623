"""TorchNeuron's way of putting NKI kernels into PyTorch: ``nki_op`` and ``wrap_nki``.

TorchNeuron's ``@nki_op("ns::name", mutates_args=...)`` decorates a PyTorch function (typed
like ``torch.library.custom_op`` wants) whose body calls NKI kernels on tensors; the result is
a custom op usable in eager and under ``torch.compile``. (``openneuron.nki_op`` is another
shape of the same idea: it registers a kernel itself.) ``wrap_nki(kernel)`` gives a callable
that runs a kernel on torch tensors, optionally indexed by a launch grid first.
"""

from __future__ import annotations

import contextlib
import threading

import torch

from openneuron.nki import kernel as kernel_module
from openneuron.nki.tensor import NkiTensor

_trace_only_lock = threading.Lock()


def _empty_outputs(kernel, args, kwargs):
    """Stands in for a kernel run on fake tensors: the outputs' shapes and dtypes, from a trace
    of the kernel (tracing never reads tensor values); no argument is written."""
    compiled = kernel_module.compiled_for(kernel, args, kwargs)
    device = next(t.device for t in kernel_module._tensors(args, kwargs))

    def empty(nki_tensor):
        dtype = kernel_module._TORCH_DTYPES[nki_tensor.dtype.name]
        return torch.empty(tuple(nki_tensor.shape), dtype=dtype, device=device)

    def rebuild(value):
        if isinstance(value, NkiTensor):
            return empty(value)
        if isinstance(value, (list, tuple)):
            return type(value)(rebuild(v) for v in value)
        return value

    return rebuild(compiled.returned)


@contextlib.contextmanager
def _kernels_trace_only():
    """Within the block, NKI kernel calls on neuron tensors only trace (for fake kernels)."""
    with _trace_only_lock:
        running = kernel_module.call_on_device
        kernel_module.call_on_device = _empty_outputs
        try:
            yield
        finally:
            kernel_module.call_on_device = running


def nki_op(name, fn=None, /, *, mutates_args=(), device_types=None, schema=None):
    """Registers the PyTorch function `fn` (calling NKI kernels) as the custom op `name`.

    Arguments are those of ``torch.library.custom_op``; the op's fake kernel runs `fn` itself
    with every NKI kernel call replaced by a trace of its output shapes, so the op works under
    ``torch.compile`` without a hand-written fake. Returns torch's custom-op object
    (``.register_autograd`` adds a backward, ``.register_fake`` replaces the derived fake).
    """

    def register(func):
        op = torch.library.custom_op(
            name, func, mutates_args=mutates_args, device_types=device_types, schema=schema
        )

        @op.register_fake
        def fake(*args, **kwargs):
            with _kernels_trace_only():
                return func(*args, **kwargs)

        return op

    return register if fn is None else register(fn)


def wrap_nki(kernel, **options):
    """A callable that runs the NKI `kernel` on torch tensors: ``wrap_nki(k)(x, y)`` or, with
    a launch grid, ``wrap_nki(k)[grid](x, y)``; accepts a plain function, an ``nki.jit``
    kernel, or any object carrying the kernel function as ``.func``."""
    if isinstance(kernel, kernel_module.Kernel):
        return kernel
    func = getattr(kernel, "func", kernel)
    if not callable(func):
        raise TypeError(f"wrap_nki expects an NKI kernel function, got {type(kernel).__name__}")
    return kernel_module.Kernel(func, **options)
