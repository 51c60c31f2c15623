"""Convolution and max-pooling timings, neuron vs PyTorch CPU eager, in one process.

Times the CNN workload's conv/pool calls (forward, backward) and its whole training step on
both devices, interleaving the devices round by round so that load from other processes hits
both alike. Prints the median and the spread (min-max over rounds) per case, in milliseconds.

    PYTHONPATH=python python -m bench.conv_timing [--rounds 7] [--repeats 10]
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch
import torch.nn.functional as F

import bench.workloads.cnn  # noqa: F401  (registers the workload)
from bench.workloads import get_workload

DEVICES = ("cpu", "neuron")


def sync(device: str) -> None:
    if device == "neuron":
        torch.neuron.synchronize()


def seconds_per_call(fn, device: str, repeats: int) -> float:
    sync(device)
    start = time.perf_counter()
    for _ in range(repeats):
        fn()
    sync(device)
    return (time.perf_counter() - start) / repeats


def conv_cases(device: str):
    """(name, callable) pairs for the CNN's conv and pool calls on `device`."""
    gen = torch.Generator().manual_seed(0)
    cases = []
    for n, c, h, o in ((64, 3, 32, 32), (64, 32, 16, 64)):
        # As in the CNN: the first layer's input (the images) needs no gradient.
        x = torch.randn(n, c, h, h, generator=gen).to(device).requires_grad_(c != 3)
        w = (torch.randn(o, c, 3, 3, generator=gen) * 0.1).to(device).requires_grad_()
        b = torch.randn(o, generator=gen).to(device).requires_grad_()
        out = F.conv2d(x, w, b, padding=1)
        grad = torch.randn(out.shape, generator=gen).to(device)
        shape = f"[{n},{c},{h},{h}]x[{o},{c},3,3]"
        cases.append((f"conv fwd {shape}", lambda x=x, w=w, b=b: F.conv2d(x, w, b, padding=1)))
        wanted = (x, w, b) if x.requires_grad else (w, b)
        cases.append(
            (
                f"conv bwd {shape}" + (" (w, b)" if len(wanted) == 2 else ""),
                lambda out=out, wanted=wanted, grad=grad: torch.autograd.grad(
                    out, wanted, grad, retain_graph=True
                ),
            )
        )
    x = torch.randn(64, 32, 32, 32, generator=gen).to(device).requires_grad_()
    out = F.max_pool2d(x, 2)
    grad = torch.randn(out.shape, generator=gen).to(device)
    cases.append(("max_pool2d fwd [64,32,32,32] k2", lambda x=x: F.max_pool2d(x, 2)))
    cases.append(
        (
            "max_pool2d bwd [64,32,32,32] k2",
            lambda out=out, x=x, grad=grad: torch.autograd.grad(out, x, grad, retain_graph=True),
        )
    )
    return cases


def cnn_step(device: str):
    built = get_workload("cnn").build(device, size="benchmark")
    counter = iter(range(10**9))
    return lambda: built.step(next(counter))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--repeats", type=int, default=10)
    args = parser.parse_args()
    torch.set_grad_enabled(True)
    per_device = {
        device: conv_cases(device) + [("cnn step", cnn_step(device))] for device in DEVICES
    }
    names = [name for name, _ in per_device["cpu"]]
    samples = {(name, device): [] for name in names for device in DEVICES}
    for device in DEVICES:  # warm up (primitive caches, allocator)
        for _, fn in per_device[device]:
            seconds_per_call(fn, device, 2)
    for _ in range(args.rounds):
        for device in DEVICES:
            for name, fn in per_device[device]:
                samples[(name, device)].append(seconds_per_call(fn, device, args.repeats) * 1e3)
    print(
        f"{'case':42s} {'cpu ms (min-max)':>22s} {'neuron ms (min-max)':>22s} {'cpu/neuron':>10s}"
    )
    for name in names:
        cells = []
        for device in DEVICES:
            values = samples[(name, device)]
            cells.append(f"{statistics.median(values):7.3f} ({min(values):.2f}-{max(values):.2f})")
        ratio = statistics.median(samples[(name, "cpu")]) / statistics.median(
            samples[(name, "neuron")]
        )
        print(f"{name:42s} {cells[0]:>22s} {cells[1]:>22s} {ratio:10.2f}")


if __name__ == "__main__":
    main()
