"""Conformance of the neuron backend against PyTorch's OpInfo and ModuleInfo databases."""

# torch first: it autoloads openneuron; importing openneuron first is a circular import.
import torch  # noqa: F401
