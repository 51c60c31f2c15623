"""torch._scaled_mm timings: float8 -> bf16 on neuron vs PyTorch CPU's _scaled_mm, beside the
bf16 mm of the same shape on both, in one process.

Devices alternate round by round so that load from other processes hits both alike. Prints the
median and the spread (min-max over rounds) per case, in milliseconds.

    PYTHONPATH=python python -m bench.scaled_mm_timing [--sizes 1024 2048] [--rounds 5]
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch

import openneuron  # noqa: F401  (registers the neuron device)

DEVICES = ("cpu", "neuron")


def sync(device: str) -> None:
    if device == "neuron":
        torch.neuron.synchronize()


def seconds_per_call(fn, device: str, repeats: int) -> float:
    fn()  # first call: primitive creation, scratch growth
    sync(device)
    start = time.perf_counter()
    for _ in range(repeats):
        fn()
    sync(device)
    return (time.perf_counter() - start) / repeats


def cases(size: int, device: str):
    """(name, callable) pairs at size^3 on device: row-wise and tensor-wise scaled float8 ->
    bf16 products, and the plain bf16 mm of the same shape."""
    gen = torch.Generator().manual_seed(0)
    a = torch.randn(size, size, generator=gen)
    b = torch.randn(size, size, generator=gen)
    a8 = a.to(torch.float8_e4m3fn).to(device)
    b8 = b.to(torch.float8_e4m3fn).t().contiguous().t().to(device)  # column-major, as CUDA's
    one = torch.tensor(1.0, device=device)
    rows = torch.rand(size, 1, generator=gen).to(device)
    cols = torch.rand(1, size, generator=gen).to(device)
    a16, b16 = a.bfloat16().to(device), b.bfloat16().to(device)
    bf16 = torch.bfloat16
    return [
        ("scaled_mm tensorwise", lambda: torch._scaled_mm(a8, b8, one, one, out_dtype=bf16)),
        ("scaled_mm rowwise", lambda: torch._scaled_mm(a8, b8, rows, cols, out_dtype=bf16)),
        ("mm bf16", lambda: a16 @ b16),
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1024, 2048])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--repeats", type=int, default=2)
    args = parser.parse_args()
    print(f"torch {torch.__version__}, {torch.get_num_threads()} CPU threads")
    print(f"{'case':<34}{'cpu ms':>18}{'neuron ms':>18}{'cpu/neuron':>12}")
    for size in args.sizes:
        per_device = {device: cases(size, device) for device in DEVICES}
        samples = {device: [[] for _ in per_device[device]] for device in DEVICES}
        for _ in range(args.rounds):
            for device in DEVICES:
                for index, (_, fn) in enumerate(per_device[device]):
                    samples[device][index].append(seconds_per_call(fn, device, args.repeats))
        for index, (name, _) in enumerate(per_device["cpu"]):
            cells = []
            for device in DEVICES:
                times = [t * 1e3 for t in samples[device][index]]
                cells.append((statistics.median(times), min(times), max(times)))
            (cpu, cpu_lo, cpu_hi), (dev, dev_lo, dev_hi) = cells
            print(
                f"{name + f' {size}^3':<34}{f'{cpu:.1f} ({cpu_lo:.0f}-{cpu_hi:.0f})':>18}"
                f"{f'{dev:.1f} ({dev_lo:.0f}-{dev_hi:.0f})':>18}{cpu / dev:>11.2f}x"
            )


if __name__ == "__main__":
    main()
