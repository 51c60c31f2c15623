"""``torch_neuronx``, the import name of TorchNeuron (AWS's native PyTorch backend), answered by
OpenNeuron when AWS's package is not installed.

Scripts and libraries written for TorchNeuron start with ``import torch_neuronx`` or probe for
it (accelerate and Transformers select the ``neuron`` device when it can be found). This
package gives them the names of TorchNeuron's native-backend API that apply here, each backed
by OpenNeuron's own implementation; ``import torch`` has already registered the device.

The XLA-era API of the older ``torch-neuronx`` (``trace``, ``analyze``, ``DataParallel``,
``torch_neuronx.xla_impl`` and the like) compiles whole graphs for Inferentia/Trainium through
PyTorch/XLA; it is not part of a native backend and is not provided: calling one of those
names raises ``XlaApiNotSupportedError`` saying so. docs/torch_neuronx.md lists both sets.
"""

from __future__ import annotations

import openneuron as _openneuron
from openneuron import _C
from openneuron import device as _device
from openneuron.memory import (
    empty_cache,
    max_memory_allocated,
    max_memory_reserved,
    memory_allocated,
    memory_reserved,
    memory_stats,
    memory_summary,
    reset_accumulated_memory_stats,
    reset_peak_memory_stats,
)
from openneuron.streams import (
    Event,
    Stream,
    StreamContext,
    current_stream,
    default_stream,
    set_stream,
    stream,
)
from openneuron.torch_neuronx.nki_ops import nki_op, wrap_nki
from openneuron.torch_neuronx.xla_era import XLA_ERA_NAMES, XlaApiNotSupportedError, unsupported

# `import torch_neuronx` resolved to this package (the alias finder checks it for submodules).
_is_openneuron_alias = True

__version__ = "0.1.0"

__all__ = [
    "Event",
    "Stream",
    "StreamContext",
    "XlaApiNotSupportedError",
    "clear_op_tracking",
    "current_device",
    "current_stream",
    "default_stream",
    "device",
    "device_count",
    "empty_cache",
    "get_device_properties",
    "get_dynamo_metrics",
    "get_executed_ops",
    "get_fallback_ops",
    "is_available",
    "is_neuron_runtime_initialized",
    "max_memory_allocated",
    "max_memory_reserved",
    "memory_allocated",
    "memory_reserved",
    "memory_stats",
    "memory_summary",
    "nki_op",
    "reset_accumulated_memory_stats",
    "reset_dynamo_metrics",
    "reset_peak_memory_stats",
    "set_device",
    "set_stream",
    "stream",
    "synchronize",
    "wrap_nki",
]

device = _device.device
device_count = _device.device_count
current_device = _device.current_device
set_device = _device.set_device
synchronize = _device.synchronize
get_device_properties = _device.get_device_properties
is_available = _device.is_available


def _autoload() -> None:
    """TorchNeuron's ``torch.backends`` entry point name; the device is already registered."""


def is_neuron_runtime_initialized() -> bool:
    """True once the device runtime has started (it starts on first use)."""
    return _device.is_initialized()


def get_fallback_ops() -> list[str]:
    """Names of the ops that ran on the host (CPU) fallback since the last clear.

    TorchNeuron returns a list of names; ``openneuron.get_fallback_ops()`` has the counts.
    """
    return sorted(_C._get_fallback_ops())


def get_executed_ops() -> list[str]:
    """Names of every op that ran on a neuron device (native or fallback) since the last clear."""
    return sorted(_C._get_executed_ops())


def clear_op_tracking() -> None:
    """Forgets which ops ran natively and which fell back."""
    _C._clear_op_tracking()


def get_dynamo_metrics() -> dict:
    """What ``torch.compile(backend="neuron")`` has done so far (OpenNeuron's counters)."""
    return _openneuron.compile_metrics()


def reset_dynamo_metrics() -> None:
    _openneuron.reset_compile_metrics()


for _name in XLA_ERA_NAMES:
    globals()[_name] = unsupported(_name)
del _name
