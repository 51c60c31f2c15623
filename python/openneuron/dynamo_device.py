"""The neuron device's entry in Dynamo's device registry (``torch._dynamo.device_interface``).

Dynamo, Inductor and the ``torch.compile`` utilities reach a device's runtime through
``get_interface_for_device(device)``: current device, streams, events, synchronize, properties.
``install()`` registers ``NeuronInterface`` for ``"neuron"`` and ``"neuron:<i>"`` as soon as that
module is imported. Importing Dynamo costs seconds, so ``import torch`` does not import it for
this: a one-shot import hook registers the interface when something else first does.
"""

from __future__ import annotations

import importlib.abc
import sys
from collections import namedtuple
from types import ModuleType
from typing import Any

import torch

_REGISTRY_MODULE = "torch._dynamo.device_interface"

# What Inductor's device-property readers look for (multi_processor_count: one NeuronCore per
# neuron device).
NeuronDeviceProperties = namedtuple(
    "NeuronDeviceProperties", ["name", "type", "total_memory", "multi_processor_count", "profile"]
)


def _properties(device: Any = None) -> NeuronDeviceProperties:
    props = torch.neuron.get_device_properties(device)
    return NeuronDeviceProperties(
        name=props["name"],
        type="neuron",
        total_memory=props["total_memory"],
        multi_processor_count=1,
        profile=props["profile"],
    )


def _interface_class(registry: ModuleType) -> type:
    """``NeuronInterface``, a subclass of the registry's ``DeviceInterface`` (defined only once
    the registry module exists)."""
    from openneuron import _C
    from openneuron import device as neuron

    class NeuronInterface(registry.DeviceInterface):
        """The neuron runtime as Dynamo and Inductor see a device."""

        device = neuron.device
        Event = neuron.Event  # constructs a torch.Event on the current neuron device
        Stream = neuron.Stream

        class Worker:
            """Device queries for compile workers: they answer from the parent's values without
            touching the runtime again (a child forked after initialisation must not)."""

            _current: int | None = None
            _properties: list[NeuronDeviceProperties] | None = None

            @staticmethod
            def set_device(device: int) -> None:
                NeuronInterface.Worker._current = device

            @staticmethod
            def current_device() -> int:
                if NeuronInterface.Worker._current is not None:
                    return NeuronInterface.Worker._current
                return neuron.current_device()

            @staticmethod
            def get_device_properties(device: Any = None) -> NeuronDeviceProperties:
                worker = NeuronInterface.Worker
                if worker._properties is None:
                    worker._properties = [_properties(i) for i in range(neuron.device_count())]
                if device is None:
                    index = worker.current_device()
                elif isinstance(device, int):
                    index = device
                else:
                    device = torch.device(device)
                    if device.type != "neuron":
                        raise ValueError(f"expected a neuron device, got {device}")
                    index = worker.current_device() if device.index is None else device.index
                return worker._properties[index]

        current_device = staticmethod(neuron.current_device)
        set_device = staticmethod(neuron.set_device)
        device_count = staticmethod(neuron.device_count)
        is_available = staticmethod(neuron.is_available)
        synchronize = staticmethod(neuron.synchronize)
        stream = staticmethod(neuron.stream)
        current_stream = staticmethod(neuron.current_stream)
        set_stream = staticmethod(neuron.set_stream)
        memory_allocated = staticmethod(neuron.memory_allocated)
        get_device_properties = staticmethod(_properties)

        @staticmethod
        def exchange_device(device: int) -> int:
            """Makes ``device`` current and returns the previous current device."""
            previous = neuron.current_device()
            if device != previous:
                neuron.set_device(device)
            return previous

        @staticmethod
        def maybe_exchange_device(device: int) -> int:
            return NeuronInterface.exchange_device(device)

        @staticmethod
        def _set_stream_by_id(stream_id: int, device_index: int, device_type: int) -> None:
            neuron.set_stream(
                neuron.Stream(
                    stream_id=stream_id, device_index=device_index, device_type=device_type
                )
            )

        @staticmethod
        def get_raw_stream(device_idx: int) -> int:
            """The id of the current stream on ``device_idx`` (neuron streams have no raw
            handle; the id names the stream to the runtime)."""
            return neuron.current_stream(device_idx).stream_id

        @staticmethod
        def get_compute_capability(device: Any = None) -> str:
            """The NeuronCore generation, e.g. ``"v3"`` (Inductor keys its caches on it)."""
            neuron._index(device)
            return _C._config()["core_version"]

        @staticmethod
        def is_bf16_supported(including_emulation: bool = False) -> bool:
            return True

        @classmethod
        def is_dtype_supported(cls, dtype: torch.dtype, including_emulation: bool = False) -> bool:
            return (
                dtype
                in torch.accelerator.get_device_capability(
                    torch.device("neuron", neuron.current_device())
                )["supported_dtypes"]
            )

    return NeuronInterface


def _register(registry: ModuleType) -> None:
    interface = _interface_class(registry)
    registry.register_interface_for_device("neuron", interface)
    for index in range(torch.neuron.device_count()):
        registry.register_interface_for_device(f"neuron:{index}", interface)


class _RegisterWhenImported(importlib.abc.MetaPathFinder):
    """Finds the registry module through the other finders and registers the interface right
    after the module has run; then leaves ``sys.meta_path``."""

    def find_spec(self, fullname, path, target=None):
        if fullname != _REGISTRY_MODULE:
            return None
        sys.meta_path.remove(self)
        for finder in sys.meta_path:
            spec = (
                finder.find_spec(fullname, path, target) if hasattr(finder, "find_spec") else None
            )
            if spec is not None:
                break
        else:
            return None
        loader = spec.loader
        if loader is None or not hasattr(loader, "exec_module"):
            return spec
        run_module = loader.exec_module

        def run_and_register(module: ModuleType) -> None:
            run_module(module)
            _register(module)

        loader.exec_module = run_and_register
        return spec


def install() -> None:
    """Registers the interface now if Dynamo's registry is loaded, else when it loads."""
    registry = sys.modules.get(_REGISTRY_MODULE)
    if registry is not None:
        _register(registry)
    elif not any(isinstance(f, _RegisterWhenImported) for f in sys.meta_path):
        sys.meta_path.insert(0, _RegisterWhenImported())
