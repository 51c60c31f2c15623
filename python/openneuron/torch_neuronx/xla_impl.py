"""``torch_neuronx.xla_impl``: XLA-based torch-neuronx only; importing it explains so."""

from openneuron.torch_neuronx.xla_era import refuse_import

refuse_import("xla_impl")
