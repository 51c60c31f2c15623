"""Compiles a function with a graph break (a print inside it) with the neuron backend: the check
must report compile behaviour (graph breaks), or that compile is not available."""

import torch

device = torch.accelerator.current_accelerator()


def f(x):
    y = torch.sin(x) * 2
    print("graph break here")
    return (y + 1).sum()


compiled = torch.compile(f, backend="neuron")
x = torch.randn(16, device=device, requires_grad=True)
for _ in range(2):
    loss = compiled(x)
    loss.backward()
