"""``torch_neuronx.distributed.backend``: the class of the ``neuron`` c10d backend, under the
name TorchNeuron gives it, so ``isinstance(group._get_backend(device), ProcessGroupNeuron)``
holds for a group on neuron."""

from openneuron import _C

ProcessGroupNeuron = _C.NeuronBackend

__all__ = ["ProcessGroupNeuron"]
