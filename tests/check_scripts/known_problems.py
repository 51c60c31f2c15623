"""A training script with known problems: it hard-codes "cuda" and calls torch.cuda.*, uses
float64, runs an op with no native kernel (aten::linalg_matrix_exp), has a custom autograd Function,
and has a layer that is deliberately wrong on the accelerator (`DriftingScale`), so the check
must report that layer as the first divergent module."""

import torch
from torch import nn

device = "cuda" if torch.cuda.is_available() else torch.accelerator.current_accelerator()


class Square(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return 2 * x * grad


class DriftingScale(nn.Module):
    """Wrong on purpose: 5% off on any device but the CPU."""

    def forward(self, x):
        return x * (1.05 if x.device.type != "cpu" else 1.0)


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.inp = nn.Linear(16, 32)
        self.act = nn.Tanh()
        self.scale = DriftingScale()
        self.out = nn.Linear(32, 1)

    def forward(self, x):
        h = self.act(self.inp(x))
        h = h @ torch.linalg.matrix_exp(torch.zeros(32, 32, device=h.device)) * 0.1
        h = Square.apply(h)
        return self.out(self.scale(h))


torch.manual_seed(0)
model = Model().to(device)
optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
x = torch.randn(8, 16, device=device)
y = torch.randn(8, 1, device=device)
for _ in range(4):
    loss = nn.functional.mse_loss(model(x), y)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
stats = x.double().mean()  # float64 on purpose
print(f"loss {loss.item():.4f} mean {stats.item():.4f}")
