"""``neuronxcc.nki.compiler.backends.neuron``."""
