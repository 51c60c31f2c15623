"""torch.mm on neuron through every matrix-product library (OPENNEURON_GEMM_LIBRARY's choices),
beside torch.mm on the CPU, in one process: the measurement `auto`'s choice rests on.

Each round runs torch's CPU mm and neuron's mm once per library (switched between calls), in a
shuffled order, so load from other processes hits every path alike. Prints GFLOP/s medians over
the rounds, the ratio neuron / torch per library, and which library really ran (the counters).

    PYTHONPATH=python python -m bench.gemm_libraries [--rounds 9] [--sizes 1024 2048 288x192x768]
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import time

import torch

import openneuron

LIBRARIES = ("auto", "mkl", "onednn", "openblas")


def parse_size(text: str) -> tuple[int, int, int]:
    parts = [int(part) for part in text.split("x")]
    return (parts[0],) * 3 if len(parts) == 1 else tuple(parts)


def available_libraries() -> list[str]:
    installed = " from " in openneuron.cpu_capability_details()["mkl"]
    return [library for library in LIBRARIES if library != "mkl" or installed]


def calls() -> dict:
    return dict(openneuron._C._library_call_counts())


def timed(fn, device: str) -> float:
    start = time.perf_counter()
    fn()
    if device == "neuron":
        torch.neuron.synchronize()
    return time.perf_counter() - start


def measure(m: int, n: int, k: int, dtype: torch.dtype, rounds: int) -> list[str]:
    gen = torch.Generator().manual_seed(0)
    a = torch.randn(m, k, generator=gen).to(dtype)
    b = torch.randn(k, n, generator=gen).to(dtype)
    an, bn = a.to("neuron"), b.to("neuron")
    paths = {"torch": ("cpu", None)} | {lib: ("neuron", lib) for lib in available_libraries()}
    samples = {name: [] for name in paths}
    used = {name: {} for name in paths}
    order = random.Random(0)
    for round_index in range(rounds + 2):  # two warm-up rounds
        # A fresh order each round, so no path always runs right after torch's parallel region
        # (whose OpenMP threads may still spin) or after one particular library.
        names = list(paths)
        order.shuffle(names)
        for name in names:
            device, library = paths[name]
            if library is not None:
                openneuron._C._set_gemm_library_for_testing(library)
            before = calls()
            operands = (a, b) if device == "cpu" else (an, bn)
            seconds = timed(lambda operands=operands: torch.mm(*operands), device)
            if round_index >= 2:
                samples[name].append(seconds)
                after = calls()
                for key in after:
                    if after[key] != before.get(key, 0):
                        used[name][key] = used[name].get(key, 0) + after[key] - before.get(key, 0)
    openneuron._C._set_gemm_library_for_testing("")
    flops = 2 * m * n * k
    torch_rate = flops / statistics.median(samples["torch"]) / 1e9
    shape = f"{m}^3" if m == n == k else f"{m}x{n}x{k}"
    lines = []
    for name, times in samples.items():
        rate = flops / statistics.median(times) / 1e9
        ran = " ".join(f"{key}:{value}" for key, value in sorted(used[name].items()))
        lines.append(
            f"| mm {shape} {str(dtype).replace('torch.', '')} | {name} | {rate:.1f} |"
            f" {rate / torch_rate:.3f} | {ran or ('own kernels' if name != 'torch' else '')} |"
        )
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--sizes", nargs="+", default=["1024", "2048", "288x192x768"])
    parser.add_argument("--dtypes", nargs="+", default=["float32", "bfloat16"])
    args = parser.parse_args()
    details = openneuron.cpu_capability_details()
    print(
        f"neuron {details['capability']} (oneDNN {details['onednn']}), torch"
        f" {torch.backends.cpu.get_cpu_capability()}, {details['mkl'].split(' from ')[0]},"
        f" load average {os.getloadavg()[0]:.1f}"
    )
    print("| case | path | GFLOP/s | vs torch | library calls |")
    print("|---|---|---|---|---|")
    for size in args.sizes:
        m, n, k = parse_size(size)
        for dtype in args.dtypes:
            for line in measure(m, n, k, getattr(torch, dtype), args.rounds):
                print(line, flush=True)
    print(f"load average at the end {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
