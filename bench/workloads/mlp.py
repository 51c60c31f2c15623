"""W1: MLP classifier training, fp32, SGD with momentum."""

import torch

from bench.workloads import (
    Tolerance,
    Workload,
    classification_loss,
    cycling_batches,
    register,
    training,
)


def build(device, *, seed, batch, features, hidden, classes, batches=4):
    torch.manual_seed(seed)
    model = torch.nn.Sequential(
        torch.nn.Linear(features, hidden),
        torch.nn.ReLU(),
        torch.nn.Linear(hidden, hidden),
        torch.nn.ReLU(),
        torch.nn.Linear(hidden, classes),
    )
    data = torch.Generator().manual_seed(seed + 1)
    cpu_batches = [
        (
            torch.randn(batch, features, generator=data),
            torch.randint(0, classes, (batch,), generator=data),
        )
        for _ in range(batches)
    ]
    model.to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    batch_of = cycling_batches(cpu_batches, device)

    return training(model, optimizer, batch_of, classification_loss)


WORKLOAD = register(
    Workload(
        name="mlp",
        description="W1 MLP classifier training, fp32, SGD with momentum",
        training=True,
        builder=build,
        sizes={
            "small": dict(batch=32, features=64, hidden=128, classes=10),
            "benchmark": dict(batch=256, features=1024, hidden=2048, classes=100),
        },
        tolerance=Tolerance(
            1e-4,
            1e-5,
            "fp32 throughout; only summation order differs (sgemm "
            "blocking, reductions in double), amplified a little over 10 steps",
        ),
    )
)
