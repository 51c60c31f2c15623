"""The device-type test base for `neuron`, a pytest plugin (`-p tests.upstream.neuron_test_base`).

PyTorch's `common_device_type` builds its list of device test bases when it is first imported:
it adds its generic `PrivateUse1TestBase` only if a PrivateUse1 backend is registered by then.
Loaded as a plugin, this module registers the backend first, then puts `NeuronTestBase` in that
list in place of the generic base, so `instantiate_device_type_tests` makes `...NEURON` classes
whose tests run on `neuron:0`; `PYTORCH_TESTING_DEVICE_ONLY_FOR=neuron` then selects them.
"""

from __future__ import annotations

import importlib

import torch

import openneuron  # noqa: F401  (registers the neuron device before the framework looks)

# Imported only now, so that its list of test bases sees the registered device.
_framework = importlib.import_module("torch.testing._internal.common_device_type")


class NeuronTestBase(_framework.PrivateUse1TestBase):
    """Device-generic tests on the neuron device: primary device neuron:0, `torch.neuron` as
    the device module; every other rule (dtypes, skips, precision) is PyTorch's own for a
    PrivateUse1 device."""

    device_type = "neuron"
    device_mod = torch.neuron
    primary_device = "neuron:0"

    @classmethod
    def setUpClass(cls):
        if not torch.neuron.is_available():
            raise RuntimeError("the neuron device is not available")
        cls.device_mod = torch.neuron
        cls.primary_device = f"neuron:{torch.neuron.current_device()}"

    @classmethod
    def get_primary_device(cls):
        return cls.primary_device


def install() -> None:
    """Puts NeuronTestBase in the framework's list of test bases (idempotent)."""
    bases = _framework.device_type_test_bases
    bases[:] = [b for b in bases if b not in (_framework.PrivateUse1TestBase, NeuronTestBase)]
    bases.append(NeuronTestBase)


install()
