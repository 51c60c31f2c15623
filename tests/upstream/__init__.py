"""PyTorch's device-generic test files run on neuron (run.py) and the device-type test base."""
