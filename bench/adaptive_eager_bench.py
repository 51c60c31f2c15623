"""Side-by-side benchmark of adaptive eager: plain eager against adaptive eager on neuron, on the
training workloads and on a 1-element op, in one process.

    make bench-adaptive    # or: .venv/bin/python bench/adaptive_eager_bench.py [--quick]

Step times are medians of interleaved training steps (plain, adaptive, plain, ...), so load on
the machine hits both alike; ratios are plain / adaptive (above 1: adaptive is faster). Losses of
the two runs are compared bit for bit. Writes bench/results/adaptive_eager.json and replaces the
adaptive eager section of docs/performance.md. Nothing here is a test.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
import warnings
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

from bench.run import format_value, machine, print_table, replace_section  # noqa: E402

BEGIN = "<!-- adaptive eager section: written by bench/adaptive_eager_bench.py -->"
END = "<!-- end of adaptive eager section -->"


def timed_step(built, i: int) -> tuple[float, float, torch.Tensor]:
    """Wall time and process CPU time (every thread: host and stream workers) of one step."""
    start, start_cpu = time.perf_counter(), time.process_time()
    loss = built.step(i)
    torch.neuron.synchronize()
    return time.perf_counter() - start, time.process_time() - start_cpu, loss


def measure(workload, size: str, repeats: int) -> dict:
    import openneuron

    plain = workload.build("neuron", size=size)
    adaptive = workload.build("neuron", size=size)
    samples = {"plain": [], "adaptive": [], "plain_cpu": [], "adaptive_cpu": []}
    same = True
    openneuron.reset_adaptive_eager_metrics()
    for i in range(repeats + 2):
        t_plain, cpu_plain, loss_plain = timed_step(plain, i)
        with openneuron.adaptive_eager():
            t_adaptive, cpu_adaptive, loss_adaptive = timed_step(adaptive, i)
        same = same and torch.equal(loss_plain.cpu(), loss_adaptive.cpu())
        if i >= 2:  # warm-up steps
            samples["plain"].append(t_plain)
            samples["adaptive"].append(t_adaptive)
            samples["plain_cpu"].append(cpu_plain)
            samples["adaptive_cpu"].append(cpu_adaptive)
    metrics = openneuron.adaptive_eager_metrics()
    plain_ms, adaptive_ms, plain_cpu_ms, adaptive_cpu_ms = (
        statistics.median(samples[k]) * 1e3
        for k in ("plain", "adaptive", "plain_cpu", "adaptive_cpu")
    )

    def paired(plain_key, adaptive_key):
        # Each step against the one taken beside it: drift over the run hits both alike.
        return statistics.median(
            p / a for p, a in zip(samples[plain_key], samples[adaptive_key], strict=True)
        )

    return {
        "case": workload.name,
        "plain_ms": plain_ms,
        "adaptive_ms": adaptive_ms,
        "plain_vs_adaptive": plain_ms / adaptive_ms,
        "paired": paired("plain", "adaptive"),
        # CPU time is less disturbed by other processes than wall time on a loaded machine.
        "plain_cpu_ms": plain_cpu_ms,
        "adaptive_cpu_ms": adaptive_cpu_ms,
        "cpu_plain_vs_adaptive": plain_cpu_ms / adaptive_cpu_ms,
        "cpu_paired": paired("plain_cpu", "adaptive_cpu"),
        "losses_bitwise_equal": same,
        "ops_recorded": metrics["ops_recorded"],
        "fused_ops": metrics["fused_ops"],
        "segments": metrics["segments"],
        "cache_hits": metrics["cache_hits"],
        "fallbacks": metrics["fallbacks"],
    }


def one_element_overhead(repeats: int) -> dict:
    """CPU time per 1-element add, reading the value back every 100 ops (as a loop would)."""
    import openneuron

    x = torch.ones(1, device="neuron")

    def loop():
        y = x
        start = time.process_time()
        for _ in range(20):
            for _ in range(100):
                y = y + 1
            y.item()
        return (time.process_time() - start) / 2000

    result = {"plain": [], "adaptive": []}
    for _ in range(repeats):
        result["plain"].append(loop())
        with openneuron.adaptive_eager():
            result["adaptive"].append(loop())
    plain_us = statistics.median(result["plain"]) * 1e6
    adaptive_us = statistics.median(result["adaptive"]) * 1e6
    return {
        "case": "1-element add (per op)",
        "plain_us": plain_us,
        "adaptive_us": adaptive_us,
        "adaptive_over_plain": adaptive_us / plain_us,
        # Per round of 2000 ops, plain and adaptive back to back: the ratio's median.
        "pairwise_median": statistics.median(
            a / p for a, p in zip(result["adaptive"], result["plain"], strict=True)
        ),
        "target": "<= 1.1",
    }


def describe(machine_info: dict) -> str:
    m = machine_info
    return (
        f"{m['cores']} cores of {m['cpu_model']}, neuron kernels {m['neuron_isa']}, "
        f"torch {m['torch']} ({m['torch_isa']}), load average {m['load_average_1min']} at the "
        f"start and {m.get('load_average_1min_at_end', '?')} at the end"
    )


def markdown(results: dict, arguments: str) -> str:
    lines = [
        BEGIN,
        "",
        "## Adaptive eager",
        "",
        f"Measured {results['date']} with `.venv/bin/python bench/adaptive_eager_bench.py "
        f"{arguments}` (`make bench-adaptive`), on {describe(results['machine'])}. Training step "
        "times in ms (medians of interleaved steps), wall and process CPU time (every thread); "
        "`plain_vs_adaptive` and `cpu_plain_vs_adaptive` above 1 mean adaptive eager is faster; "
        "`paired` and `cpu_paired` are the medians of each step's ratio to the step taken beside "
        "it, which drift over the run does not move. On a loaded machine the CPU-time ratio is "
        "the steadier one.",
        "",
    ]
    rows = results["workloads"]
    keys = list(rows[0])
    lines += ["| " + " | ".join(keys) + " |", "|" + "---|" * len(keys)]
    lines += ["| " + " | ".join(format_value(r.get(k)) for k in keys) + " |" for r in rows]
    over = results["overhead"]
    lines += [
        "",
        f"Geomean plain/adaptive: {results['geomean']:.3f} (wall time), "
        f"{results['cpu_geomean']:.3f} (process CPU time); paired "
        f"{results['paired_geomean']:.3f} (wall), {results['cpu_paired_geomean']:.3f} (CPU). "
        "Per-op CPU time of a 1-element add "
        f"(medians of {over['rounds']} interleaved rounds of 2000 ops): "
        f"{over['plain_us']:.2f} µs plain, {over['adaptive_us']:.2f} µs adaptive "
        f"({over['adaptive_over_plain']:.2f}×; median of per-round ratios "
        f"{over['pairwise_median']:.2f}×).",
        "",
        END,
    ]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--workloads", default="")
    parser.add_argument("--repeats", type=int, default=15, help="timed steps per workload")
    parser.add_argument(
        "--json", type=Path, default=ROOT / "bench" / "results" / "adaptive_eager.json"
    )
    parser.add_argument("--markdown", type=Path, default=ROOT / "docs" / "performance.md")
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    import openneuron  # noqa: F401
    from bench.workloads import WORKLOADS

    names = (
        args.workloads.split(",")
        if args.workloads
        else [n for n, w in WORKLOADS.items() if w.training]
    )
    size = "small" if args.quick else "benchmark"
    results = {"machine": machine(), "date": time.strftime("%Y-%m-%d"), "workloads": []}
    print(f"machine: {results['machine']}")
    for name in names:
        results["workloads"].append(
            measure(WORKLOADS[name], size, 3 if args.quick else args.repeats)
        )
        print_table("adaptive eager", results["workloads"][-1:])
    rounds = 5 if args.quick else 41
    results["overhead"] = one_element_overhead(rounds)
    results["overhead"]["rounds"] = rounds
    results["geomean"] = statistics.geometric_mean(
        r["plain_vs_adaptive"] for r in results["workloads"]
    )
    results["cpu_geomean"] = statistics.geometric_mean(
        r["cpu_plain_vs_adaptive"] for r in results["workloads"]
    )
    for key in ("paired", "cpu_paired"):
        results[f"{key}_geomean"] = statistics.geometric_mean(r[key] for r in results["workloads"])
    results["machine"]["load_average_1min_at_end"] = round(os.getloadavg()[0], 1)
    print_table("adaptive eager", results["workloads"])
    print_table("per-op overhead", [results["overhead"]])
    print(
        f"\ngeomean plain/adaptive: {results['geomean']:.3f} (wall), "
        f"{results['cpu_geomean']:.3f} (CPU)"
    )
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(results, indent=2))
    replace_section(args.markdown, markdown(results, " ".join(sys.argv[1:])), BEGIN, END)
    print(f"wrote {args.json} and {args.markdown}")


if __name__ == "__main__":
    main()
