"""``neuronxcc.nki.typing``: the parameter annotations, the same as ``nki.typing``."""

from openneuron.nki.typing import mutable_tensor, tensor  # noqa: F401
