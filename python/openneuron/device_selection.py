"""Which neuron device a call means: start-up, the current device and argument resolution.

The device module and its parts (memory, random, streams) all turn a ``device`` argument into
an index here, so none of them imports another for it.
"""

import threading
from typing import Any

import torch

from openneuron import _C

_init_lock = threading.Lock()


def init() -> None:
    """Initialises the runtime now (it otherwise starts on first use).

    Raises RuntimeError for an invalid ``OPENNEURON_*`` setting, or in a child forked after
    initialisation (use the 'spawn' start method there).
    """
    with _init_lock:
        _C._init()


def current_device() -> int:
    init()
    return _C._current_device()


def device_index(device: Any = None) -> int:
    """The device index of ``device`` (int, str, torch.device or None for current)."""
    if device is None:
        return current_device()
    if isinstance(device, int):
        index = device
    else:
        device = torch.device(device)
        if device.type != "neuron":
            raise ValueError(f"expected a neuron device, got {device}")
        index = current_device() if device.index is None else device.index
    _C._check_device(index)
    return index
