"""NKI kernels as torch custom ops: ``openneuron.nki_op`` registers a kernel as a torch custom op
with a fake (meta) kernel derived from tracing it, to which ``register_autograd`` adds a
backward. The op runs the kernel as a @nki.jit kernel does: on ``neuron`` tensors in eager,
traced once per signature (kernel.py), on CPU tensors on the simulator."""

import inspect

import torch

from openneuron.nki import kernel as kernel_module
from openneuron.nki.kernel import (  # noqa: F401  (the eager path's names, as torch_kernels.*)
    _TORCH_DTYPES,
    cache_info,
    call_on_device,
    clear_cache,
    compiled_for,
    has_device_tensor,
    to_torch,
)


# ---------------------------------------------------------------- custom ops
def _schema(func, mutates_args, returns):
    parts = []
    for name, parameter in inspect.signature(func).parameters.items():
        default = parameter.default
        if default is inspect.Parameter.empty:
            kind = "Tensor(a!)" if name in mutates_args else "Tensor"
            parts.append(f"{kind} {name}")
        elif isinstance(default, bool):
            parts.append(f"bool {name}={default}")
        elif isinstance(default, int):
            parts.append(f"int {name}={default}")
        elif isinstance(default, float):
            parts.append(f"float {name}={default!r}")
        elif default is None:
            parts.append(f"float? {name}=None")
        else:
            raise TypeError(f"nki_op: parameter {name!r} has a default of unsupported type")
    result = (
        "()"
        if returns == 0
        else "Tensor"
        if returns == 1
        else "(" + ", ".join(["Tensor"] * returns) + ")"
    )
    return "(" + ", ".join(parts) + ") -> " + result


def nki_op(name, mutates_args=(), returns=1):
    """Registers an NKI kernel as the torch custom op `name` ("namespace::op").

    The op runs the kernel on neuron tensors (eager, cached per signature) or on CPU tensors
    (simulated); its fake kernel traces the kernel to learn the output shapes and dtypes, so
    it works under torch.compile and on meta tensors. Parameters without a default are
    tensors; returns is how many tensors the kernel returns. The result is torch's custom-op
    object: ``.register_autograd(backward, setup_context=...)`` adds a backward.
    """
    mutates_args = tuple(mutates_args) if not isinstance(mutates_args, str) else (mutates_args,)

    def wrap(kernel):
        kernel = kernel_module.jit(kernel)
        schema = _schema(kernel.func, mutates_args, returns)

        def run(*args):
            outputs = kernel(*args)
            if returns == 0:
                return None
            if returns == 1 and isinstance(outputs, (list, tuple)):
                return outputs[0]
            return tuple(outputs) if returns > 1 else outputs

        op = torch.library.custom_op(name, run, mutates_args=mutates_args, schema=schema)

        @op.register_fake
        def fake(*args):
            compiled = compiled_for(kernel, args, {})
            devices = [a.device for a in args if isinstance(a, torch.Tensor)]
            found = kernel_module._flatten(compiled.returned, [])
            empties = [
                torch.empty(t.shape, dtype=_TORCH_DTYPES[t.dtype.name], device=devices[0])
                for t in found
            ]
            if returns == 0:
                return None
            return empties[0] if returns == 1 else tuple(empties)

        return op

    return wrap
