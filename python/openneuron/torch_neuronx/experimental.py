"""``torch_neuronx.experimental``: XLA-based torch-neuronx only; importing it explains so."""

from openneuron.torch_neuronx.xla_era import refuse_import

refuse_import("experimental")
