"""OpenNeuron: a native PyTorch backend for NeuronCore-class accelerators.

Importing this package (or just ``import torch``, through the ``torch.backends`` entry
point) registers the ``neuron`` device: ``torch.ones(2, device="neuron")``,
``torch.neuron.*`` and ``torch.accelerator.*`` then work. The default device is a
simulated NeuronCore that runs on any Linux machine.
"""


def _autoload() -> None:
    """Entry point PyTorch calls at ``import torch``; importing the package does the work.

    Defined before ``import torch``: when a program imports openneuron first, torch's
    autoload calls this while the package is still initialising.
    """


import os

import torch


def _check_baseline_isa() -> None:
    """The native code is built for x86-64-v3: refuse clearly, not with SIGILL, without it."""
    try:
        with open("/proc/cpuinfo") as cpuinfo:
            flags = next((line.split() for line in cpuinfo if line.startswith("flags")), None)
    except OSError:
        return
    missing = [f for f in ("avx2", "fma", "f16c", "bmi2") if flags and f not in flags]
    if missing:
        raise ImportError(
            f"openneuron needs an x86-64-v3 CPU (AVX2, FMA, F16C, BMI2); this one lacks {missing}"
        )


_check_baseline_isa()

try:
    from openneuron import _C  # noqa: F401  (loading it registers guard, hooks, allocators, kernels)
except ImportError as error:  # the wheel's runtime libraries come from the system
    if "libdnnl" in str(error) or "libopenblas" in str(error):
        raise ImportError(
            f"{error}: openneuron needs oneDNN 2.x and OpenBLAS from the system"
            " (Debian: apt-get install libdnnl2 libopenblas0-pthread)"
        ) from error
    raise
from openneuron import dense_libraries as _dense_libraries  # noqa: E402

# oneMKL loads lazily at the first matrix product; an explicit OPENNEURON_MKL_LIBRARY wins.
if not os.environ.get("OPENNEURON_MKL_LIBRARY"):
    _C._set_mkl_library_path(_dense_libraries.mkl_library_path())
from openneuron import device as _device_module
from openneuron import printing as _printing
from openneuron.adaptive_eager import (
    adaptive_eager,
    adaptive_eager_enabled,
    adaptive_eager_metrics,
    reset_adaptive_eager_metrics,
)
from openneuron.op_tracking import (
    clear_op_tracking,
    get_executed_ops,
    get_fallback_ops,
    get_widened_ops,
    strict,
)

__all__ = [
    "adaptive_eager",
    "adaptive_eager_enabled",
    "adaptive_eager_metrics",
    "clear_op_tracking",
    "compile_metrics",
    "cpu_capability",
    "cpu_capability_details",
    "get_executed_ops",
    "get_fallback_ops",
    "get_widened_ops",
    "reset_adaptive_eager_metrics",
    "reset_compile_metrics",
    "strict",
]


def compile_metrics() -> dict:
    """What ``torch.compile`` on neuron has done so far (see ``openneuron.compile.metrics``)."""
    from openneuron.compile import compile_metrics as metrics

    return metrics()


def reset_compile_metrics() -> None:
    from openneuron.compile import reset_compile_metrics as reset

    reset()


def _route_default_compile_backend() -> None:
    """``torch.compile(m)`` with Inductor on neuron inputs compiles with our backend instead.

    Inductor has no code generator for this device. A graph with a neuron tensor among its
    inputs or its values goes to ``backend="neuron"`` (Inductor-only ``options`` do not
    apply); CPU graphs still go to Inductor. ``backend="neuron"`` itself is found through the
    ``torch_dynamo_backends`` entry point.
    """
    wrapper = torch._TorchCompileInductorWrapper
    if getattr(wrapper.__call__, "_routes_neuron", False):
        return
    inductor_call = wrapper.__call__

    def call(self, model_, inputs_, **kwargs):
        from openneuron.compile.backend import neuron_backend, uses_neuron

        if uses_neuron(model_, inputs_):
            return neuron_backend(model_, inputs_)
        return inductor_call(self, model_, inputs_, **kwargs)

    call._routes_neuron = True
    wrapper.__call__ = call


def cpu_capability() -> str:
    """The vector ISA level the kernels were chosen for at load time: ``"avx2"``,
    ``"avx512"`` or ``"avx512_bf16"`` (the CPU's best, capped by ``OPENNEURON_MAX_CPU_ISA``)."""
    return _C._cpu_capability()["capability"]


def cpu_capability_details() -> dict:
    """``cpu_capability()`` with what lies behind it: the CPU's own level (``detected``),
    the kernel build in use (``kernels``), the ISA oneDNN's JIT kernels use (``onednn``), the
    matrix-product library choice (``gemm_library``, from ``OPENNEURON_GEMM_LIBRARY``) and
    oneMKL's version and path, or why it is not loaded (``mkl``), and whether ``auto`` gives
    fp32/fp64 products to it (``auto_prefers_mkl``: on Intel CPUs)."""
    return dict(_C._cpu_capability(), mkl=_C._mkl_status(), auto_prefers_mkl=_C._auto_prefers_mkl())


# A malformed OPENNEURON_MAX_CPU_ISA fails here, naming the accepted values, rather than
# inside the first kernel.
cpu_capability()


def _register_backend() -> None:
    if torch._C._get_privateuse1_backend_name() != "neuron":
        torch.utils.rename_privateuse1_backend("neuron")
    if not hasattr(torch, "neuron"):
        torch._register_device_module("neuron", _device_module)
        torch.utils.generate_methods_for_privateuse1_backend(
            for_tensor=True, for_module=True, for_packed_sequence=True, for_storage=True
        )
        _printing.install()


_register_backend()
_route_default_compile_backend()

from openneuron import dynamo_device as _dynamo_device  # noqa: E402

_dynamo_device.install()

from openneuron import autograd_exit as _autograd_exit  # noqa: E402, F401  (its atexit handler)


def __getattr__(name: str):
    # The check tool and profiler helpers load on first use, keeping `import torch` light.
    if name in ("check", "profiler"):
        import importlib

        return importlib.import_module(f"openneuron.{name}")
    raise AttributeError(f"module 'openneuron' has no attribute {name!r}")


# `import nki` answers with openneuron.nki when AWS's nki package is not installed.
from openneuron.nki import alias as _nki_alias  # noqa: E402

_nki_alias.install()

from openneuron import distributed as _distributed  # noqa: E402
from openneuron.nki.torch_kernels import nki_op  # noqa: E402,F401

_distributed.register()
