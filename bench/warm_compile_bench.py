"""Cold against warm compile: a second process compiling the same model reuses the caches.

    .venv/bin/python bench/warm_compile_bench.py [--workload gpt2] [--pairs 3]

Each pair runs two fresh processes on the same empty cache directories (ours and PyTorch's):
the first compiles from nothing (cold), the second finds what the first stored (warm). Each
process reports its first step's time less a steady step's, split by stage: Dynamo's bytecode
tracing (no cross-process cache in PyTorch 2.13 for a model with graph breaks), AOTAutograd
(tracing and partitioning on a miss; key and load on a hit) and our lowering and passes. The
figures are medians over the pairs; both processes' losses must agree bit for bit. Writes
bench/results/warm_compile.json. Nothing here is a test.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

STAGES = ("first_step_s", "compile_s", "dynamo_s", "aot_autograd_s", "openneuron_s")


def child(workload_name: str) -> dict:
    """One process: build, compile, time the first step and a steady one."""
    import warnings

    warnings.simplefilter("ignore")
    import torch
    from torch._dynamo.utils import compilation_time_metrics, counters

    import openneuron
    from bench.workloads import WORKLOADS

    built = WORKLOADS[workload_name].build("neuron", size="small")
    built.compile(backend="neuron")
    start = time.perf_counter()
    first_loss = built.step(0)
    torch.neuron.synchronize()
    first = time.perf_counter() - start
    start = time.perf_counter()
    steady_loss = built.step(1)
    torch.neuron.synchronize()
    steady = time.perf_counter() - start
    times = {k: sum(v) for k, v in compilation_time_metrics.items()}
    ours_s = openneuron.compile_metrics()["compile_ms"] / 1e3
    backend_s = times.get("OutputGraph.call_user_compiler", 0.0)
    metrics = openneuron.compile_metrics()
    return {
        "first_step_s": first,
        "compile_s": first - steady,
        "dynamo_s": times.get("_compile.compile_inner", 0.0) - backend_s,
        "aot_autograd_s": backend_s - ours_s,
        "openneuron_s": ours_s,
        "aot_cache_hits": counters["aot_autograd"].get("autograd_cache_hit", 0),
        "aot_cache_saved": counters["aot_autograd"].get("autograd_cache_saved", 0),
        "graphs_compiled": metrics["graphs"],
        "graphs_loaded": metrics["cache_hits_aot"],
        "losses": [float(first_loss), float(steady_loss)],
    }


def run_child(workload: str, environment: dict) -> dict:
    command = [sys.executable, __file__, "--child", workload]
    done = subprocess.run(command, env=environment, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"benchmark process failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workload", default="gpt2")
    parser.add_argument("--pairs", type=int, default=3)
    parser.add_argument("--child", default=None, help=argparse.SUPPRESS)
    parser.add_argument(
        "--json", type=Path, default=ROOT / "bench" / "results" / "warm_compile.json"
    )
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(args.child)))
        return
    from bench.run import machine, print_table

    results = {"machine": machine(), "date": time.strftime("%Y-%m-%d"), "pairs": []}
    results["load_at_start"] = " ".join(f"{x:.1f}" for x in os.getloadavg())
    print(f"machine: {results['machine']}")
    for _ in range(args.pairs):
        with tempfile.TemporaryDirectory() as ours, tempfile.TemporaryDirectory() as theirs:
            environment = dict(os.environ, OPENNEURON_CACHE_DIR=ours)
            environment.update(TORCHINDUCTOR_CACHE_DIR=theirs, HF_HUB_OFFLINE="1")
            environment["PYTHONPATH"] = os.pathsep.join(
                [str(ROOT / "python"), str(ROOT), environment.get("PYTHONPATH", "")]
            )
            cold = run_child(args.workload, environment)
            warm = run_child(args.workload, environment)
        if cold["losses"] != warm["losses"]:
            raise RuntimeError(f"warm process computed {warm['losses']}, cold {cold['losses']}")
        results["pairs"].append({"cold": cold, "warm": warm})
    rows = []
    for kind in ("cold", "warm"):
        row = {"process": kind}
        for key in STAGES:
            row[key] = statistics.median(p[kind][key] for p in results["pairs"])
        for key in ("aot_cache_hits", "graphs_compiled", "graphs_loaded"):
            row[key] = results["pairs"][-1][kind][key]
        rows.append(row)
    results["median"] = rows
    ratio = [p["warm"]["compile_s"] / p["cold"]["compile_s"] for p in results["pairs"]]
    results["warm_vs_cold_compile"] = statistics.median(ratio)
    results["load_at_end"] = " ".join(f"{x:.1f}" for x in os.getloadavg())
    print_table(f"warm compile, {args.workload} (medians of {args.pairs} pairs, s)", rows)
    print(
        f"\nwarm/cold compile time: {results['warm_vs_cold_compile']:.3f} "
        f"(per pair: {', '.join(f'{r:.3f}' for r in ratio)}); load "
        f"{results['load_at_start']} -> {results['load_at_end']}"
    )
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(results, indent=2))
    print(f"wrote {args.json}")


if __name__ == "__main__":
    main()
