"""Our own rewrite of the NKI matmul tutorial's kernels (bench/nki/matmul_kernels.py) on
[4096, 8192] @ [8192, 8192] fp32, one trn2 core, estimated by the simulator's timing model
beside the tutorial's published figures. A calibration aid, not a fidelity figure: fidelity is
quoted only from AWS's kernels run unchanged (bench/nki/library_latency.py).

    .venv/bin/python -m bench.nki.fidelity [--json bench/results/nki_fidelity.json]
"""

import argparse
import json
import platform
import time

import numpy as np

import openneuron  # noqa: F401  (first: the kernel modules `import nki`)
import openneuron.nki as nki
from bench.nki.matmul_kernels import VARIANTS

# Published (NKI kernel-optimisation tutorial, trn2): latency in ms, TensorE active %.
PUBLISHED = {
    "tiled": (39.89, 87.0),
    "hoisted": (28.20, None),
    "blocked": (28.41, None),
    "optimized": (28.30, 99.5),
}
K, M, N = 8192, 4096, 8192


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--json", default="bench/results/nki_fidelity.json")
    parser.add_argument("--profile", default="trn2")
    args = parser.parse_args()
    lhsT = np.empty((K, M), np.float32)  # timing only: the values are never read
    rhs = np.empty((K, N), np.float32)
    rows = []
    print(f"matmul tutorial, [{M},{K}] @ [{K},{N}] fp32, profile {args.profile}")
    header = (
        f"{'kernel':<10} {'est ms':>8} {'pub ms':>8} {'error':>7} {'PE %':>6} "
        f"{'pub PE %':>8} {'DMA %':>6} {'instr':>7} {'wall s':>7}"
    )
    print(header)
    for name, kernel in VARIANTS.items():
        start = time.perf_counter()
        result = nki.estimate(kernel, lhsT, rhs, profile=args.profile)
        wall = time.perf_counter() - start
        published_ms, published_pe = PUBLISHED[name]
        utilization = result.utilization()
        error = result.latency_ms / published_ms - 1
        rows.append(
            {
                "kernel": name,
                "estimated_ms": result.latency_ms,
                "published_ms": published_ms,
                "relative_error": error,
                "tensor_utilization": utilization["tensor"],
                "published_tensor_active": published_pe,
                "dma_active": utilization["dma"],
                "instructions": result.instructions,
                "wall_s": wall,
            }
        )
        pub_pe = f"{published_pe:.1f}" if published_pe else "-"
        print(
            f"{name:<10} {result.latency_ms:8.2f} {published_ms:8.2f} {error:+7.1%} "
            f"{100 * utilization['tensor']:6.1f} {pub_pe:>8} {100 * utilization['dma']:6.1f} "
            f"{result.instructions:7d} {wall:7.1f}"
        )
    report = {
        "benchmark": "nki_matmul_fidelity",
        "profile": args.profile,
        "machine": platform.processor() or platform.machine(),
        "rows": rows,
    }
    with open(args.json, "w") as handle:
        json.dump(report, handle, indent=2)
    print(f"wrote {args.json}")


if __name__ == "__main__":
    main()
