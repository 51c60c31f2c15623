"""Trains three steps, then raises: the check must report the error with this file's line and
still report the steps that ran."""

import torch
from torch import nn

device = torch.accelerator.current_accelerator()
model = nn.Sequential(nn.Linear(8, 8), nn.ReLU(), nn.Linear(8, 1)).to(device)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
x = torch.randn(4, 8, device=device)
for step in range(6):
    loss = model(x).pow(2).mean()
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    if step == 2:
        raise RuntimeError("data loader ran dry at step 3")
