"""The XLA-era ``torch-neuronx`` API, which a native backend does not have.

Before TorchNeuron, ``torch_neuronx`` was a PyTorch/XLA integration: ``trace`` compiled a
whole model ahead of time for Inferentia/Trainium, ``DataParallel`` replicated a traced model
over NeuronCores, and so on. OpenNeuron answers the native backend's API only; these names
exist so that calling one (or importing one of the XLA-era submodules) fails with an error
that says why and what to do instead.
"""

from __future__ import annotations

# Functions and classes of the XLA-era package's top level.
XLA_ERA_NAMES = (
    "DataParallel",
    "analyze",
    "async_load",
    "bucket_model_trace",
    "dynamic_batch",
    "lazy_load",
    "move_trace_to_device",
    "nki_jit",
    "replace_weights",
    "trace",
)

_ADVICE = (
    "OpenNeuron is a native PyTorch backend: move the model and its inputs to the 'neuron' "
    "device and run it eagerly, or compile it with torch.compile(model, backend='neuron')"
)


class XlaApiNotSupportedError(NotImplementedError):
    """An API of the XLA-based torch-neuronx, which a native backend does not provide."""


def message(name: str) -> str:
    return (
        f"torch_neuronx.{name} belongs to the XLA-based torch-neuronx (PyTorch/XLA ahead-of-time "
        f"tracing), not to the native backend OpenNeuron provides. {_ADVICE}."
    )


def unsupported(name: str):
    """A stand-in for the XLA-era callable `name` that raises when called."""

    def stand_in(*args, **kwargs):
        raise XlaApiNotSupportedError(message(name))

    stand_in.__name__ = stand_in.__qualname__ = name
    stand_in.__doc__ = message(name)
    return stand_in


def refuse_import(submodule: str) -> None:
    """Raised by the modules standing in for XLA-era submodules, at import."""
    raise ImportError(message(submodule), name=f"torch_neuronx.{submodule}")
