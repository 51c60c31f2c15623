"""``neuronxcc.nki.compiler.backends.neuron.indexing``: the index type kernels annotate with."""

from openneuron.nki.index_grid import GridExpr as TileIndex  # noqa: F401
