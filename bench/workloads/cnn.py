"""W2: small CNN training on 32x32 images (conv, batch norm, ReLU, max/adaptive-avg pool,
linear, cross-entropy), fp32, SGD."""

import torch
from torch import nn

from bench.workloads import (
    Tolerance,
    Workload,
    classification_loss,
    cycling_batches,
    register,
    training,
)


class SmallCNN(nn.Module):
    def __init__(self, channels, classes):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, channels, 3, padding=1),
            nn.BatchNorm2d(channels),
            nn.ReLU(),
            nn.MaxPool2d(2),
            nn.Conv2d(channels, 2 * channels, 3, padding=1),
            nn.BatchNorm2d(2 * channels),
            nn.ReLU(),
            nn.AdaptiveAvgPool2d(1),
        )
        self.classifier = nn.Linear(2 * channels, classes)

    def forward(self, x):
        return self.classifier(self.features(x).flatten(1))


def build(device, *, seed, batch, channels, classes, batches=4):
    torch.manual_seed(seed)
    model = SmallCNN(channels, classes)
    data = torch.Generator().manual_seed(seed + 1)
    cpu_batches = [
        (
            torch.randn(batch, 3, 32, 32, generator=data),
            torch.randint(0, classes, (batch,), generator=data),
        )
        for _ in range(batches)
    ]
    model.to(device).train()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    batch_of = cycling_batches(cpu_batches, device)

    return training(model, optimizer, batch_of, classification_loss)


WORKLOAD = register(
    Workload(
        name="cnn",
        description="W2 small CNN training on 32x32 images, fp32, SGD",
        training=True,
        builder=build,
        sizes={
            "small": dict(batch=8, channels=8, classes=10),
            "benchmark": dict(batch=64, channels=32, classes=10),
        },
        tolerance=Tolerance(
            1e-4,
            1e-5,
            "fp32 throughout; convolution and batch-norm statistics "
            "sum in a different order than the CPU kernels",
        ),
    )
)
