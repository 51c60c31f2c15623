"""``torch_neuronx.distributed``: the ``neuron`` c10d backend under TorchNeuron's module name.

Scripts written for TorchNeuron import it to make sure the ``neuron`` backend is registered
before ``dist.init_process_group(backend="neuron")``; here ``import torch`` has already
registered it (``openneuron.distributed``), so importing this module only confirms that.
``ProcessGroupNeuron`` is the backend class a neuron group runs on (``backend.py``).
"""

from openneuron.distributed import BACKEND_NAME, register
from openneuron.torch_neuronx.distributed.backend import ProcessGroupNeuron

register()

__all__ = ["BACKEND_NAME", "ProcessGroupNeuron"]
