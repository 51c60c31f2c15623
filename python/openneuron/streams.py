"""Streams and events of neuron devices, as ``torch.Stream`` and ``torch.Event`` subclasses."""

from typing import Any

import torch

from openneuron.device_selection import device_index as _index


def _device(device: Any) -> torch.device:
    return torch.device("neuron", _index(device))


class Stream(torch.Stream):
    """An in-order queue of device work; a new object is a stream from the device's pool."""

    def __new__(cls, device: Any = None, priority: int = 0, **kwargs: Any) -> "Stream":
        if kwargs:  # (stream_id, device_index, device_type) from an existing stream
            return super().__new__(cls, **kwargs)
        return super().__new__(cls, device=_device(device), priority=priority)

    def __repr__(self) -> str:
        return f"<torch.neuron.Stream device={self.device} stream_id={self.stream_id}>"


class Event:
    """A marker in a stream: record, wait, query, synchronize, elapsed_time.

    Constructing one returns a plain ``torch.Event`` on the neuron device: PyTorch's
    ``Event.elapsed_time`` accepts only that exact type, so a subclass could not be timed.
    """

    def __new__(
        cls, enable_timing: bool = False, blocking: bool = False, interprocess: bool = False
    ):
        return torch.Event(device="neuron", enable_timing=enable_timing, blocking=blocking)


def _wrap(stream: torch.Stream) -> Stream:
    return Stream(
        stream_id=stream.stream_id, device_index=stream.device_index, device_type=stream.device_type
    )


def current_stream(device: Any = None) -> Stream:
    """The calling thread's current stream on ``device``."""
    return _wrap(torch.accelerator.current_stream(_device(device)))


def default_stream(device: Any = None) -> Stream:
    current = current_stream(device)
    return Stream(stream_id=0, device_index=current.device_index, device_type=current.device_type)


def set_stream(stream: torch.Stream) -> None:
    """Makes ``stream`` current on its device for the calling thread."""
    torch.accelerator.set_stream(stream)


class StreamContext:
    """Context manager: ``stream`` is current on its device within the block."""

    def __init__(self, stream: torch.Stream | None):
        self.stream = stream
        self.previous: torch.Stream | None = None
        self.previous_device = -1

    def __enter__(self) -> torch.Stream | None:
        if self.stream is not None:
            # Setting a stream also makes its device current: remember both, as CUDA does.
            self.previous_device = torch.accelerator.current_device_index()
            self.previous = torch.accelerator.current_stream(self.stream.device)
            torch.accelerator.set_stream(self.stream)
        return self.stream

    def __exit__(self, *exc: object) -> None:
        if self.previous is not None:
            torch.accelerator.set_stream(self.previous)
            torch.accelerator.set_device_index(self.previous_device)


def stream(stream: torch.Stream | None) -> StreamContext:
    return StreamContext(stream)
