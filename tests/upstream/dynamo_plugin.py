"""PyTorch's Dynamo test files on `neuron`, a pytest plugin (`-p tests.upstream.dynamo_plugin`).

PyTorch's test/dynamo files are not device-generic: they build CPU tensors with the factory
functions (`torch.randn(10)`, `torch.ones(2)`, modules' parameters) and compile with "eager",
"aot_eager", "inductor", the default backend or a `CompileCounter`. What they check is Dynamo's
contract with a backend: a captured frame, its guards and recompiles, graph breaks and op counts,
and a compiled result equal to the eager one. For `neuron` that contract applies unchanged once
the tensors live on the device and the compiling backends are ours, which is what this plugin
does when PYTORCH_TESTING_DEVICE_ONLY_FOR=neuron:

- `torch.set_default_device("neuron")`: every factory call and module parameter without an
  explicit device is a neuron tensor, so Dynamo traces neuron tensors (fake tensors through our
  meta functions, device guards) and the graphs run on our kernels;
- the compiling backends ("inductor" and the default `torch.compile` backend, "aot_eager",
  "aot_eager_decomp_partition", "aot_eager_default_partitioner", and `CompileCounterWithBackend`
  of any of them) compile a graph with neuron inputs with `backend="neuron"`, and a
  `CompileCounter` (which counts and returns the graph to run as is) compiles it with
  `backend="neuron"` too, after counting: its frame and op counts are Dynamo's, unchanged, and
  the compiled result is what the test compares with eager. "eager" stays eager: its tests check
  Dynamo's capture, which the device premise already covers. A graph with no value on neuron
  (a test that says `device="cpu"`) keeps the original backend.

With PYTORCH_TESTING_DEVICE_ONLY_FOR=cpu nothing is changed but the names below: the same files
with PyTorch's own backends on CPU tensors, the baseline the runner compares with. A
`CompileCounter` runs its graph through "aot_eager" there, so that both devices put every
counted graph through AOTAutograd and a difference is the compiler's, not AOTAutograd's.

Test files older than the installed torch import names it no longer has; each is defined as
what it meant in that torch (both devices alike), see `_names_older_dynamo_tests_import`.
"""

from __future__ import annotations

import functools
import importlib
import os
import sys
import types
import unittest

import torch
import torch._dynamo
import torch._dynamo.testing

import openneuron  # noqa: F401  (registers the neuron device)

DEVICE = os.environ.get("PYTORCH_TESTING_DEVICE_ONLY_FOR", "cpu")
# The backends routed to ours on neuron: every registered backend that compiles through
# AOTAutograd or Inductor. "eager" (and its debugging twins) run the graph as captured.
ROUTED_BACKENDS = (
    "inductor",
    "aot_eager",
    "aot_eager_decomp_partition",
    "aot_eager_default_partitioner",
)


def _names_older_dynamo_tests_import() -> None:
    """Names the 2.1 Dynamo test files import that torch 2.13 no longer has, each as it was:
    - `torch._dynamo.backends.ipex` (`has_ipex()`): whether intel_extension_for_pytorch
      imports; it does not here, so the ipex tests skip on both devices.
    - `torch._dynamo.backends.onnxrt.has_onnxruntime()`: whether onnxruntime imports.
    - `torch._dynamo.testing.skipIfPy311`: skips the test on Python 3.11 or newer.
    - `torch._dynamo.testing.requires_static_shapes`: skips the test when the 2.1 flag
      `config.dynamic_shapes` is on; that flag was off by default and torch 2.13 has no such
      flag (static shapes first, as 2.1 without it), so the test runs.
    - `torch._dynamo.utils.ifdyn(a, b)` / `ifunspec(a, b)`: `a` under `config.dynamic_shapes`,
      else `b`; so `b`.
    - `torch.autograd.profiler._enable_dynamo_cache_lookup_profiler(enable)`: switched the
      profiler's event for Dynamo's cache lookup; it has no switch any more (a no-op).
    - `torch.testing._internal.inductor_utils.HAS_CUDA`: CUDA with Triton; now
      `HAS_CUDA_AND_TRITON` (False here).
    - `torch._dynamo.utils.CompileProfiler`: a backend that reported recompiles, removed; a
      test that builds one is skipped (SkipTest), on both devices."""
    backends = torch._dynamo.backends
    if "torch._dynamo.backends.ipex" not in sys.modules:
        try:
            importlib.import_module("torch._dynamo.backends.ipex")
        except ImportError:
            ipex = types.ModuleType("torch._dynamo.backends.ipex")
            ipex.has_ipex = functools.partial(_imports, "intel_extension_for_pytorch")
            sys.modules[ipex.__name__] = ipex
            backends.ipex = ipex
    onnxrt = importlib.import_module("torch._dynamo.backends.onnxrt")
    if not hasattr(onnxrt, "has_onnxruntime"):
        onnxrt.has_onnxruntime = functools.partial(_imports, "onnxruntime")
    testing = torch._dynamo.testing
    if not hasattr(testing, "skipIfPy311"):
        testing.skipIfPy311 = lambda fn: unittest.skip(fn) if sys.version_info >= (3, 11) else fn
    if not hasattr(testing, "requires_static_shapes"):
        testing.requires_static_shapes = lambda fn: fn
    utils = torch._dynamo.utils
    for name in ("ifdyn", "ifunspec"):
        if not hasattr(utils, name):
            setattr(utils, name, lambda dynamic, static: static)
    profiler = importlib.import_module("torch.autograd.profiler")
    if not hasattr(profiler, "_enable_dynamo_cache_lookup_profiler"):
        profiler._enable_dynamo_cache_lookup_profiler = lambda enable: None
    inductor_utils = importlib.import_module("torch.testing._internal.inductor_utils")
    if not hasattr(inductor_utils, "HAS_CUDA"):
        inductor_utils.HAS_CUDA = inductor_utils.HAS_CUDA_AND_TRITON
    if not hasattr(utils, "CompileProfiler"):
        utils.CompileProfiler = _RemovedCompileProfiler


class _RemovedCompileProfiler:
    def __init__(self, *args, **kwargs):
        raise unittest.SkipTest("torch._dynamo.utils.CompileProfiler was removed after torch 2.1")


def _imports(module: str) -> bool:
    try:
        importlib.import_module(module)
    except ImportError:
        return False
    return True


def _uses_neuron(gm, example_inputs) -> bool:
    from openneuron.compile.backend import uses_neuron

    return uses_neuron(gm, example_inputs)


def _routed(name: str, original):
    """`original` for graphs that compute nothing on neuron, `backend="neuron"` for the others."""

    @functools.wraps(original)
    def backend(gm, example_inputs, **kwargs):
        if _uses_neuron(gm, example_inputs):
            from openneuron.compile import neuron_backend

            return neuron_backend(gm, example_inputs)
        return original(gm, example_inputs, **kwargs)

    backend._neuron_routes = name
    return backend


def _route_backends_to_neuron() -> None:
    registry = importlib.import_module("torch._dynamo.backends.registry")
    for name in ROUTED_BACKENDS:
        original = registry.lookup_backend(name)
        if getattr(original, "_neuron_routes", None) != name:
            registry._COMPILER_FNS[name] = _routed(name, original)


def _compile_counter_compiles_with(backend_name: str) -> None:
    """`CompileCounter` counts a frame's graph as before, then compiles it with `backend_name`
    (on neuron only graphs with neuron inputs; the others run as captured, as before)."""
    counter = torch._dynamo.testing.CompileCounter
    if getattr(counter.__call__, "_compiles_with", None) == backend_name:
        return
    count = counter.__call__

    def call(self, gm, example_inputs):
        count(self, gm, example_inputs)
        if backend_name == "neuron" and not _uses_neuron(gm, example_inputs):
            return gm.forward
        if backend_name == "neuron":
            from openneuron.compile import neuron_backend

            return neuron_backend(gm, example_inputs)
        return torch._dynamo.backends.registry.lookup_backend(backend_name)(gm, example_inputs)

    call._compiles_with = backend_name
    counter.__call__ = call


def install() -> None:
    _names_older_dynamo_tests_import()
    if DEVICE == "neuron":
        if not torch.neuron.is_available():
            raise RuntimeError("the neuron device is not available")
        torch.set_default_device("neuron")
        _route_backends_to_neuron()
        _compile_counter_compiles_with("neuron")
    else:
        _compile_counter_compiles_with("aot_eager")


install()
