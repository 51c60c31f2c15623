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


import torch

from openneuron import _C  # noqa: F401  (loading it registers guard, hooks, allocators, kernels)
from openneuron import device as _device_module
from openneuron import printing as _printing
from openneuron.op_tracking import clear_op_tracking, get_executed_ops, get_fallback_ops, strict

__all__ = ["clear_op_tracking", "get_executed_ops", "get_fallback_ops", "strict"]


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

from openneuron import distributed as _distributed  # noqa: E402

_distributed.register()
