"""Trains a small MLP classifier on `neuron` and on `cpu` from the same seed, printing the
loss of each step side by side, then which ops ran natively and which on the host fallback.

Run with `make demo` (or `.venv/bin/python examples/demo.py` once built).
"""

import time

import torch
from torch import nn

import openneuron

STEPS = 8
BATCH, FEATURES, HIDDEN, CLASSES = 64, 32, 128, 10


def make_model() -> nn.Module:
    torch.manual_seed(0)
    return nn.Sequential(
        nn.Linear(FEATURES, HIDDEN),
        nn.ReLU(),
        nn.Linear(HIDDEN, HIDDEN),
        nn.ReLU(),
        nn.Linear(HIDDEN, CLASSES),
    )


def make_data() -> tuple[torch.Tensor, torch.Tensor]:
    generator = torch.Generator().manual_seed(1)
    inputs = torch.randn(STEPS, BATCH, FEATURES, generator=generator)
    labels = torch.randint(0, CLASSES, (STEPS, BATCH), generator=generator)
    return inputs, labels


def train(device: str) -> tuple[list[float], float]:
    model = make_model().to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    loss_fn = nn.CrossEntropyLoss()
    inputs, labels = make_data()
    losses = []
    start = time.perf_counter()
    for step in range(STEPS):
        x = inputs[step].to(device, non_blocking=True)
        y = labels[step].to(device, non_blocking=True)
        optimizer.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return losses, time.perf_counter() - start


def main() -> None:
    print(f"torch {torch.__version__}; accelerator: {torch.accelerator.current_accelerator()}")
    props = torch.neuron.get_device_properties(0)
    print(
        f"{torch.neuron.device_count()} x {props['name']}, "
        f"{props['total_memory'] / 2**30:.1f} GiB each\n"
    )

    # An untimed run before each timed one: first use creates threads and compiles kernels.
    # neuron goes first, as PyTorch CPU's idle OpenMP threads keep spinning for a while after
    # CPU work and would take the cores from neuron's.
    train("neuron")
    openneuron.clear_op_tracking()
    neuron_losses, neuron_seconds = train("neuron")
    executed = openneuron.get_executed_ops()
    fallback = openneuron.get_fallback_ops()
    train("cpu")
    cpu_losses, cpu_seconds = train("cpu")

    print(f"{'step':>4}  {'neuron loss':>12}  {'cpu loss':>12}  {'rel. diff':>9}")
    for step, (on_neuron, on_cpu) in enumerate(zip(neuron_losses, cpu_losses, strict=True)):
        diff = abs(on_neuron - on_cpu) / max(abs(on_cpu), 1e-12)
        print(f"{step:>4}  {on_neuron:>12.6f}  {on_cpu:>12.6f}  {diff:>9.1e}")
    print(
        f"\ntraining time (warm, {STEPS} steps): neuron {neuron_seconds * 1e3:.1f} ms, "
        f"cpu {cpu_seconds * 1e3:.1f} ms (a tiny model: per-op overhead dominates; "
        "`make bench` compares real workloads)"
    )

    native = {op: n for op, n in executed.items() if op not in fallback}
    print(f"\nops run natively on neuron ({len(native)}):")
    for op, count in sorted(native.items()):
        print(f"  {op:<40} {count:>6}")
    print(f"\nops run on the host fallback ({len(fallback)}):")
    for op, count in sorted(fallback.items()):
        print(f"  {op:<40} {count:>6}")
    print(f"\nneuron memory in use after training: {torch.neuron.memory_allocated()} bytes")


if __name__ == "__main__":
    main()
