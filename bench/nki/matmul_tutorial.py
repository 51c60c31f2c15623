"""AWS's NKI matmul tutorial kernels, unchanged, from an nki-samples checkout: each checked
against NumPy at the tutorial driver's sizes and tolerance, then timed by the simulator's
model on the published configuration ([4096, 8192] @ [8192, 8192] fp32, one trn2 core)
beside the tutorial's published latencies. Nothing of the checkout is copied: its kernel file
is imported from the path given.

    .venv/bin/python -m bench.nki.matmul_tutorial PATH/TO/nki-samples [--json ...]

Not part of `make test` (it needs the checkout).
"""

import argparse
import importlib.util
import json
import platform
import sys
import time
from pathlib import Path

import numpy as np

import openneuron.nki as nki
from openneuron.nki.errors import KernelRuleError

KERNEL_FILE = "src/nki_samples/tutorials/matrix_multiplication/matrix_multiplication_nki_kernels.py"
# Published (NKI kernel-optimisation tutorial, trn2, fp32): latency in ms.
PUBLISHED_MS = {
    "nki_matmul_tiled_": 39.89,
    "nki_matmul_hoist_load_": 28.20,
    "nki_matmul_block_free_dimension_": 28.41,
    "nki_matmul_fully_optimized_": 28.30,
}
TIMED_K, TIMED_M, TIMED_N = 8192, 4096, 8192
TARGET = 0.15
# The tutorial driver's check: torch.allclose(atol=1e-4, rtol=1e-2), bf16 inputs from
# torch.rand, the small shape for the basic kernel and [4096, 1024] @ [1024, 2048] for the rest.
CHECKED_SHAPES = {"nki_matmul_basic_": (64, 128, 512)}
DEFAULT_CHECKED_SHAPE = (4096, 1024, 2048)


def load_kernels(checkout: Path):
    path = checkout / KERNEL_FILE
    if not path.is_file():
        raise SystemExit(f"{path} not found: give the root of an nki-samples checkout")
    spec = importlib.util.spec_from_file_location("matrix_multiplication_nki_kernels", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def check(kernel, name, rng):
    """(passed, reason) for the kernel against NumPy at the driver's shape and tolerance."""
    import ml_dtypes

    m, k, n = CHECKED_SHAPES.get(name, DEFAULT_CHECKED_SHAPE)
    lhs = rng.random((m, k), dtype=np.float32).astype(ml_dtypes.bfloat16)
    rhs = rng.random((k, n), dtype=np.float32).astype(ml_dtypes.bfloat16)
    expected = lhs.astype(np.float32) @ rhs.astype(np.float32)
    try:
        out = nki.simulate(kernel)(np.ascontiguousarray(lhs.T), rhs)
    except KernelRuleError as error:
        return False, f"[{error.rule}] {error}"
    out = np.asarray(out).astype(np.float32)
    # The driver compares against torch.matmul in bf16: its reference is rounded to bf16 too.
    reference = expected.astype(ml_dtypes.bfloat16).astype(np.float32)
    if np.allclose(reference, out, atol=1e-4, rtol=1e-2):
        return True, f"matches at [{m},{k}] @ [{k},{n}] bf16"
    worst = float(np.max(np.abs(out - reference) / (1e-4 + 1e-2 * np.abs(reference))))
    return False, f"differs at [{m},{k}] @ [{k},{n}] bf16 ({worst:.2f}x the tolerance)"


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("checkout", type=Path, help="root of an nki-samples checkout")
    parser.add_argument("--json", default="bench/results/nki_matmul_tutorial.json")
    parser.add_argument("--profile", default="trn2")
    args = parser.parse_args()
    module = load_kernels(args.checkout)
    rng = np.random.default_rng(0)
    rows = []
    lhsT = np.empty((TIMED_K, TIMED_M), np.float32)  # timing only: the values are never read
    rhs = np.empty((TIMED_K, TIMED_N), np.float32)
    print(f"{args.checkout / KERNEL_FILE}; timed on [{TIMED_M},{TIMED_K}] @ [{TIMED_K},{TIMED_N}]")
    for name in ["nki_matmul_basic_", *PUBLISHED_MS]:
        kernel = getattr(module, name)
        passed, reason = check(kernel, name, rng)
        row = {"kernel": name, "correct": passed, "check": reason}
        if name in PUBLISHED_MS:
            start = time.perf_counter()
            try:
                result = nki.estimate(kernel, lhsT, rhs, profile=args.profile)
                error = result.latency_ms / PUBLISHED_MS[name] - 1
                row.update(
                    estimated_ms=result.latency_ms,
                    published_ms=PUBLISHED_MS[name],
                    relative_error=error,
                    within_target=abs(error) <= TARGET,
                    utilization=result.utilization(),
                )
                timing = (
                    f"{result.latency_ms:7.2f} ms vs {PUBLISHED_MS[name]:.2f} published "
                    f"({error:+.1%}), TensorE {100 * result.utilization()['tensor']:.1f}%"
                )
            except KernelRuleError as failure:
                row.update(published_ms=PUBLISHED_MS[name], timing_error=str(failure))
                timing = f"not timed: [{failure.rule}] {str(failure)[:160]}"
            row["wall_s"] = time.perf_counter() - start
            print(f"{name:<34} {'ok' if passed else 'FAIL':<4} {timing}")
        else:
            print(f"{name:<34} {'ok' if passed else 'FAIL':<4} {reason}")
        rows.append(row)
    report = {
        "benchmark": "nki_matmul_tutorial_unchanged",
        "checkout": str(args.checkout),
        "profile": args.profile,
        "machine": platform.processor() or platform.machine(),
        "rows": rows,
    }
    Path(args.json).parent.mkdir(parents=True, exist_ok=True)
    with open(args.json, "w") as handle:
        json.dump(report, handle, indent=2)
    print(f"wrote {args.json}")


if __name__ == "__main__":
    main()
