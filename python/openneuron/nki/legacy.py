"""``neuronxcc`` when AWS's compiler package is absent: ``neuronxcc.nki`` is openneuron.nki."""

_is_openneuron_alias = True
