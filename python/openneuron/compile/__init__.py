"""``torch.compile`` on ``neuron``: the Dynamo backend, its caches and metrics."""

from openneuron.compile.backend import KNOWN_OPTIONS, neuron_backend
from openneuron.compile.cache import clear_memory as clear_compile_cache
from openneuron.compile.metrics import compile_metrics, reset_compile_metrics

__all__ = [
    "KNOWN_OPTIONS",
    "clear_compile_cache",
    "compile_metrics",
    "neuron_backend",
    "reset_compile_metrics",
]
