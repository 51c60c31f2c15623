"""NKI kernels on PyTorch tensors: a @nki.jit kernel called on ``neuron`` tensors runs in eager
(traced once per shapes, dtypes and constant arguments, then replayed from a cache), and
``openneuron.nki_op`` registers a kernel as a torch custom op with a fake (meta) kernel derived
from tracing it, to which ``register_autograd`` adds a backward."""

import inspect
import numbers

import numpy as np
import torch

from openneuron.nki import kernel as kernel_module
from openneuron.nki.dtypes import as_dtype

_cache = {}
_stats = {"hits": 0, "misses": 0}

_TORCH_DTYPES = {
    "float32": torch.float32,
    "float16": torch.float16,
    "bfloat16": torch.bfloat16,
    "int8": torch.int8,
    "int16": torch.int16,
    "int32": torch.int32,
    "uint8": torch.uint8,
    "bool": torch.bool,
    "float8_e4m3": torch.float8_e4m3fn,
    "float8_e5m2": torch.float8_e5m2,
}


def to_torch(array: np.ndarray) -> torch.Tensor:
    """A CPU tensor holding `array` (bfloat16/fp8 through their bits)."""
    dtype = as_dtype(array.dtype)
    target = _TORCH_DTYPES.get(dtype.name)
    if target is None:
        return torch.from_numpy(np.ascontiguousarray(array).copy())
    if dtype.name in ("bfloat16", "float16"):
        bits = np.ascontiguousarray(array).view(np.int16).copy()
        return torch.from_numpy(bits).view(target)
    if dtype.name.startswith("float8"):
        bits = np.ascontiguousarray(array).view(np.uint8).copy()
        return torch.from_numpy(bits).view(target)
    return torch.from_numpy(np.ascontiguousarray(array).copy())


def _tensors(args, kwargs):
    for value in list(args) + list(kwargs.values()):
        if isinstance(value, torch.Tensor):
            yield value
        elif isinstance(value, (list, tuple)):
            yield from (v for v in value if isinstance(v, torch.Tensor))


def has_device_tensor(args, kwargs) -> bool:
    return any(t.device.type == "neuron" for t in _tensors(args, kwargs))


def _describe(value):
    if isinstance(value, torch.Tensor):
        return ("tensor", tuple(value.shape), str(value.dtype))
    if isinstance(value, np.ndarray):
        return ("array", value.shape, str(value.dtype))
    if isinstance(value, (list, tuple)):
        return (type(value).__name__,) + tuple(_describe(v) for v in value)
    if value is None or isinstance(value, (numbers.Number, str, bool)):
        return ("constant", type(value).__name__, value)
    return ("constant", repr(value))


def signature(kernel, args, kwargs, profile):
    return (
        kernel.func,
        kernel.grid,
        profile,
        tuple(_describe(a) for a in args),
        tuple(sorted((k, _describe(v)) for k, v in kwargs.items())),
    )


def compiled_for(kernel, args, kwargs, profile=None):
    """The cached trace of `kernel` for this signature, tracing it on a miss."""
    profile = profile or kernel_module.default_profile()
    key = signature(kernel, args, kwargs, profile)
    compiled = _cache.get(key)
    if compiled is None:
        _stats["misses"] += 1
        shaped = [_shape_only(a) for a in args]
        shaped_kwargs = {k: _shape_only(v) for k, v in kwargs.items()}
        compiled = kernel_module.CompiledLaunch(kernel, shaped, shaped_kwargs, profile)
        _cache[key] = compiled
    else:
        _stats["hits"] += 1
    return compiled


def _shape_only(value):
    """An uninitialised NumPy stand-in with a tensor's shape and dtype (tracing never reads
    values), so tracing needs no copy and works for meta tensors."""
    if isinstance(value, torch.Tensor):
        dtype = as_dtype(
            str(value.dtype).replace("torch.", "").replace("float8_e4m3fn", "float8_e4m3")
        )
        return np.empty(tuple(value.shape), dtype=dtype.numpy)
    if isinstance(value, (list, tuple)) and any(isinstance(v, torch.Tensor) for v in value):
        return type(value)(_shape_only(v) for v in value)
    return value


def cache_info() -> dict:
    return {"entries": len(_cache), **_stats}


def clear_cache():
    _cache.clear()
    _stats.update(hits=0, misses=0)


def _map(value, fn):
    if isinstance(value, np.ndarray):
        return fn(value)
    if isinstance(value, (list, tuple)):
        return type(value)(_map(v, fn) for v in value)
    if isinstance(value, dict):
        return {k: _map(v, fn) for k, v in value.items()}
    return value


def call_on_device(kernel, args, kwargs):
    """Runs `kernel` on tensors of the neuron device; outputs are neuron tensors, inputs the
    kernel wrote are updated."""
    device = next(t.device for t in _tensors(args, kwargs) if t.device.type == "neuron")
    compiled = compiled_for(kernel, args, kwargs)
    originals = kernel_module.flat_arrays(args, kwargs)
    arrays = [kernel_module._host_array(t) for t in originals]
    result, arrays = compiled.run(arrays)
    for position in compiled.written_inputs:
        with torch.no_grad():
            originals[position].copy_(to_torch(arrays[position]).reshape(originals[position].shape))
    return _map(result.outputs, lambda a: to_torch(a).to(device))


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
