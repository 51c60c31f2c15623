"""torch.distributed for neuron tensors: the c10d backend ``neuron``.

Importing openneuron registers it for the ``neuron`` device, so ``dist.init_process_group()``
picks it for neuron tensors (CPU tensors then have no backend: collectives on them raise);
``"cpu:gloo,neuron:neuron"`` or ``"neuron"`` (which also serves CPU tensors) name it
explicitly. Its collectives run over
PyTorch's Gloo (TCP) on a per-device communication stream, ordered after the current stream's
pending work; ``Work.wait()`` makes the current stream wait.
"""

from __future__ import annotations

import datetime
import functools
import os

import torch
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


def _adopt_orphaned_default(pg) -> None:
    """Marks the neuron backend as the group's default when PyTorch marked one it never made.

    With no backend named, ``init_process_group`` creates only the accelerator's backend (ours)
    but marks Gloo as the group's default unless NCCL is present, so DDP's logger (which asks the
    default backend for its name) fails. CUDA with NCCL does not hit this; the neuron backend
    then takes that place.
    """
    if not isinstance(pg, dist.ProcessGroup) or torch.device("neuron") not in pg._device_types:
        return
    default_type = dist.Backend.backend_type_map.get(pg._get_backend_name())
    if default_type is not None:
        try:
            pg._backend_id(default_type)
            return  # the default backend exists
        except RuntimeError:
            pass
    if pg._get_backend(torch.device("neuron")).name() == BACKEND_NAME:
        pg._set_default_backend(dist.ProcessGroup.BackendType.CUSTOM)


def _name_unnamed_backend(kwargs: dict) -> None:
    """Records the neuron backend's name for a group made with no backend named.

    ``init_process_group()`` with none records ``"undefined"``, which ``dist.get_backend()``
    then returns though the group runs on one known backend; when that backend is ours (its
    config reads ``"neuron:neuron"``), the group is recorded under our name, as it would be
    had the caller named it. Mixed configs (``"cpu:gloo,neuron:neuron"``) keep their string,
    as torch keeps ``"cpu:gloo,cuda:nccl"``.
    """
    unnamed = kwargs.get("backend_name") == dist.Backend.UNDEFINED
    if unnamed and kwargs.get("backend_config") == f"neuron:{BACKEND_NAME}":
        kwargs["backend_name"] = BACKEND_NAME


def _bind_local_rank_device() -> None:
    """Makes device ``LOCAL_RANK`` (modulo the device count) current when the default group is
    made, as TorchNeuron does: launchers (torchrun, ``accelerate launch``) then put each local
    rank on its own device without a ``set_device`` call. A device the process chose itself
    (any but the initial 0) is kept."""
    local_rank = os.environ.get("LOCAL_RANK")
    if local_rank is None or not local_rank.isdigit() or torch.neuron.device_count() == 0:
        return
    if torch.neuron.current_device() == 0:
        torch.neuron.set_device(int(local_rank) % torch.neuron.device_count())


def _watch_new_groups() -> None:
    """Every group (init_process_group, new_group, split_group, device meshes) is registered
    through one function: fix each group's default backend and name there, and bind this
    rank's device when the default group is made."""
    from torch.distributed import distributed_c10d

    register_group = distributed_c10d._register_pg_in_world
    if getattr(register_group, "_openneuron", False):
        return

    @functools.wraps(register_group)
    def register_and_adopt(pg, *args, **kwargs):
        _adopt_orphaned_default(pg)
        _name_unnamed_backend(kwargs)
        uses_neuron = isinstance(pg, dist.ProcessGroup) and (
            torch.device("neuron") in pg._device_types
        )
        if uses_neuron and distributed_c10d.GroupMember.WORLD is None:
            _bind_local_rank_device()
        return register_group(pg, *args, **kwargs)

    register_and_adopt._openneuron = True
    distributed_c10d._register_pg_in_world = register_and_adopt


def register() -> None:
    """Registers the ``neuron`` c10d backend once; a no-op without torch.distributed."""
    if not dist.is_available() or BACKEND_NAME.upper() in dist.Backend._plugins:
        return
    _C._init_distributed()
    dist.Backend.register_backend(
        BACKEND_NAME, _create_backend, extended_api=True, devices=["neuron", "cpu"]
    )
    _watch_new_groups()


__all__ = ["BACKEND_NAME", "register"]
