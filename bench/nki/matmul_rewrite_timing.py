"""Our own rewrite of the NKI matmul tutorial's kernels (bench/nki/matmul_kernels.py) on
[4096, 8192] @ [8192, 8192] fp32, one trn2 core, estimated by the simulator's timing model.
A calibration aid for the model, not a fidelity figure, so it prints no published latency:
fidelity is quoted only from AWS's kernels run unchanged (bench/nki/matmul_tutorial.py,
bench/nki/library_latency.py).

    .venv/bin/python -m bench.nki.matmul_rewrite_timing [--json FILE]
"""

import argparse
import json
import platform
import time

import numpy as np

import openneuron  # noqa: F401  (first: the kernel modules `import nki`)
import openneuron.nki as nki
from bench.nki.matmul_kernels import VARIANTS

K, M, N = 8192, 4096, 8192


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--json", default="bench/results/nki_matmul_rewrite_timing.json")
    parser.add_argument("--profile", default="trn2")
    args = parser.parse_args()
    lhsT = np.empty((K, M), np.float32)  # timing only: the values are never read
    rhs = np.empty((K, N), np.float32)
    rows = []
    print(f"matmul tutorial, [{M},{K}] @ [{K},{N}] fp32, profile {args.profile}")
    header = f"{'kernel':<10} {'est ms':>8} {'PE %':>6} {'DMA %':>6} {'instr':>7} {'wall s':>7}"
    print(header)
    for name, kernel in VARIANTS.items():
        start = time.perf_counter()
        result = nki.estimate(kernel, lhsT, rhs, profile=args.profile)
        wall = time.perf_counter() - start
        utilization = result.utilization()
        rows.append(
            {
                "kernel": name,
                "estimated_ms": result.latency_ms,
                "tensor_utilization": utilization["tensor"],
                "dma_active": utilization["dma"],
                "instructions": result.instructions,
                "wall_s": wall,
            }
        )
        print(
            f"{name:<10} {result.latency_ms:8.2f} "
            f"{100 * utilization['tensor']:6.1f} {100 * utilization['dma']:6.1f} "
            f"{result.instructions:7d} {wall:7.1f}"
        )
    report = {
        "benchmark": "nki_matmul_rewrite_timing",
        "profile": args.profile,
        "machine": platform.processor() or platform.machine(),
        "rows": rows,
    }
    with open(args.json, "w") as handle:
        json.dump(report, handle, indent=2)
    print(f"wrote {args.json}")


if __name__ == "__main__":
    main()
