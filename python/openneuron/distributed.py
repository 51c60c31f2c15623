"""torch.distributed for neuron tensors: the c10d backend ``neuron``.

Importing openneuron registers it for the ``neuron`` device, so ``dist.init_process_group()``
picks it for neuron tensors (with Gloo for CPU tensors), and ``"cpu:gloo,neuron:neuron"`` or
``"neuron"`` (which also serves CPU tensors) name it explicitly. Its collectives run over
PyTorch's Gloo (TCP) on a per-device communication stream, ordered after the current stream's
pending work; ``Work.wait()`` makes the current stream wait.
"""

from __future__ import annotations

import datetime

import torch.distributed as dist

from openneuron import _C

BACKEND_NAME = "neuron"


def _transport(store, rank: int, size: int, timeout: datetime.timedelta):
    """The host transport of one group: Gloo over TCP on its own prefix of the group's store."""
    return dist.ProcessGroupGloo(dist.PrefixStore("transport/", store), rank, size, timeout)


def _create_backend(options, backend_options=None):
    """The creator torch.distributed calls for each group that uses the neuron backend."""
    transport = _transport(options.store, options.group_rank, options.group_size, options.timeout)
    return _C.NeuronBackend(
        options.store,
        options.group_rank,
        options.group_size,
        options.timeout,
        transport,
        _transport,
    )


def register() -> None:
    """Registers the ``neuron`` c10d backend once; a no-op without torch.distributed."""
    if not dist.is_available() or BACKEND_NAME.upper() in dist.Backend._plugins:
        return
    _C._init_distributed()
    dist.Backend.register_backend(
        BACKEND_NAME, _create_backend, extended_api=True, devices=["neuron", "cpu"]
    )


__all__ = ["BACKEND_NAME", "register"]
