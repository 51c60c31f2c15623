"""``torch.neuron``: the device module of the neuron backend, shaped like ``torch.cuda``."""

from typing import Any

import torch

from openneuron import (
    _C,
    memory,  # noqa: F401  (torch.neuron.memory)
)
from openneuron.device_selection import current_device, init
from openneuron.device_selection import device_index as _index
from openneuron.memory import (
    empty_cache,
    max_memory_allocated,
    max_memory_reserved,
    mem_get_info,
    memory_allocated,
    memory_reserved,
    memory_stats,
    memory_summary,
    reset_accumulated_memory_stats,
    reset_peak_memory_stats,
)
from openneuron.random import (
    default_generators,
    get_rng_state,
    get_rng_state_all,
    initial_seed,
    manual_seed,
    manual_seed_all,
    seed,
    seed_all,
    set_rng_state,
    set_rng_state_all,
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

__all__ = [
    "Event",
    "Stream",
    "StreamContext",
    "current_device",
    "current_stream",
    "default_generators",
    "default_stream",
    "device",
    "device_count",
    "device_of",
    "empty_cache",
    "get_amp_supported_dtype",
    "get_device_name",
    "get_device_properties",
    "get_rng_state",
    "get_rng_state_all",
    "init",
    "initial_seed",
    "is_bf16_supported",
    "is_available",
    "is_initialized",
    "manual_seed",
    "manual_seed_all",
    "max_memory_allocated",
    "max_memory_reserved",
    "mem_get_info",
    "memory_allocated",
    "memory_summary",
    "memory_reserved",
    "memory_stats",
    "reset_accumulated_memory_stats",
    "reset_peak_memory_stats",
    "seed",
    "seed_all",
    "set_device",
    "set_rng_state",
    "set_rng_state_all",
    "set_stream",
    "stream",
    "synchronize",
]


def _is_in_bad_fork() -> bool:
    """True in a child process forked after the parent initialised the device."""
    return _C._in_bad_fork()


def is_initialized() -> bool:
    return _C._is_initialized()


def is_available() -> bool:
    """True when at least one neuron device is configured; never raises."""
    return _C._configured_device_count() > 0


def device_count() -> int:
    """Number of neuron devices (``OPENNEURON_DEVICES``, default 2)."""
    return _C._configured_device_count()


def set_device(device: Any) -> None:
    """Makes ``device`` the calling thread's current neuron device."""
    index = _index(device)
    _C._set_device(index)


class device:
    """Context manager that makes ``device`` current for the block, then restores."""

    def __init__(self, device: Any):
        self.index = -1 if device is None else _index(device)
        self.previous = -1

    def __enter__(self) -> None:
        if self.index < 0:
            return
        self.previous = current_device()
        _C._set_device(self.index)

    def __exit__(self, *exc: object) -> None:
        if self.previous >= 0:
            _C._set_device(self.previous)


class device_of(device):
    """Context manager that makes the device of ``tensor`` current (no-op for CPU tensors)."""

    def __init__(self, tensor: torch.Tensor):
        super().__init__(tensor.device.index if tensor.device.type == "neuron" else None)


def _sleep(cycles: int, device: Any = None) -> None:
    """Queues device work on the current stream that spins for ``cycles`` cycles of a 1 GHz
    clock (a nanosecond each), as ``torch.cuda._sleep`` does: a busy stream for tests."""
    _C._sleep(_index(device), int(cycles))


def synchronize(device: Any = None) -> None:
    """Waits for all work queued on every stream of ``device``; raises a queued error."""
    _C._synchronize(_index(device))


def get_device_name(device: Any = None) -> str:
    _index(device)
    config = _C._config()
    return f"Simulated NeuronCore-{config['core_version']} ({config['profile']})"


class DeviceProperties(dict):
    """A device's properties, read as attributes (``props.total_memory``, as code written for
    ``torch.cuda`` and TorchNeuron does) or as keys (``props["total_memory"]``)."""

    def __getattr__(self, name: str) -> Any:
        try:
            return self[name]
        except KeyError:
            raise AttributeError(f"neuron device properties have no {name!r}") from None


def get_device_properties(device: Any = None) -> DeviceProperties:
    """Name, profile and memory capacity of ``device``."""
    _index(device)
    config = _C._config()
    return DeviceProperties(
        name=get_device_name(device),
        profile=config["profile"],
        total_memory=config["device_memory_bytes"],
        profile_hbm_bytes=config["profile_hbm_bytes"],
    )


def is_bf16_supported(including_emulation: bool = True) -> bool:
    """bfloat16 is a native type of the device (its matmuls accumulate in fp32)."""
    return True


def get_amp_supported_dtype() -> list[torch.dtype]:
    return [torch.bfloat16, torch.float16]
