"""Side-by-side benchmark of torch.compile: neuron compiled against neuron eager, Inductor on CPU
and CPU eager, with cold compile times, in one process.

    make bench-compile    # or: .venv/bin/python bench/compile_bench.py [--quick] [--workloads a,b]

Step times are medians of repeated training steps (forward passes for BERT), the six
configurations interleaved step by step so that load on the machine falls on all alike, each
timed step after 25 ms of untimed steps of its own configuration; each step's wall time and the
process's CPU time (`*_cpu_ms`, all threads) are both reported. Cold
compile time is the first step's time less a steady step's, with empty caches (our disk cache
and Inductor's in fresh directories): it includes Dynamo's and AOTAutograd's tracing for both.
Our backend's own share (lowering, passes, program building) is shown apart. Writes
bench/results/compile.json and replaces the torch.compile section of docs/performance.md.
Nothing here is a test.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
import warnings
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

from bench.run import (  # noqa: E402
    format_value,
    machine,
    print_table,
    replace_section,
    settle,
    sync,
)

BEGIN = "<!-- torch.compile section: written by bench/compile_bench.py -->"
END = "<!-- end of torch.compile section -->"


CONFIGS = (
    ("neuron_eager", "neuron", None),
    ("neuron_compiled", "neuron", "neuron"),
    ("cpu_eager", "cpu", None),
    ("cpu_inductor", "cpu", "inductor"),
    # The compiler without GEMM epilogue and reduction fusion: the before of those passes.
    ("neuron_compiled_elementwise_only", "neuron", "neuron-elementwise-only"),
    # options={"bitwise": True}: only fusions that equal eager bit for bit.
    ("neuron_compiled_bitwise", "neuron", "neuron-bitwise"),
)
ELEMENTWISE_ONLY = {"gemm_epilogue": False, "reductions": False}


def timed_step(built, device: str, index: int) -> tuple[float, float]:
    """Wall time and the process's CPU time (all threads) of one step."""
    start, cpu_start = time.perf_counter(), time.process_time()
    built.step(index)
    sync(device)
    return time.perf_counter() - start, time.process_time() - cpu_start


def measure(workload, size: str, repeats: int) -> dict:
    """One workload in all six configurations. The steady steps are interleaved (one step of
    each configuration per round) so that load from other processes on the machine falls on
    all of them alike; each figure is the median over the rounds."""
    import openneuron

    row = {"case": workload.name}
    with tempfile.TemporaryDirectory() as ours, tempfile.TemporaryDirectory() as inductor:
        os.environ["OPENNEURON_CACHE_DIR"] = ours
        os.environ["TORCHINDUCTOR_CACHE_DIR"] = inductor
        torch._dynamo.reset()
        runs = {}
        for label, device, compiled in CONFIGS:
            openneuron.reset_compile_metrics()
            built = workload.build(device, size=size)
            if compiled == "neuron-elementwise-only":
                built.compile(backend="neuron", options=ELEMENTWISE_ONLY)
            elif compiled == "neuron-bitwise":
                built.compile(backend="neuron", options={"bitwise": True})
            elif compiled:
                built.compile(backend=compiled)
            first = timed_step(built, device, 0)[0]
            for index in (1, 2):
                timed_step(built, device, index)
            steady = timed_step(built, device, 3)[0]
            if compiled == "neuron":
                row["neuron_cold_compile_s"] = first - steady
                row["neuron_backend_ms"] = openneuron.compile_metrics()["compile_ms"]
                row["graphs"] = openneuron.compile_metrics()["graphs"]
            elif compiled == "inductor":
                row["inductor_cold_compile_s"] = first - steady
            runs[label] = (built, device, [])
        for round_index in range(repeats):
            for built, device, samples in runs.values():
                # The previous configuration's threads must not take this step's cores.
                settle(lambda b=built, i=4 + round_index: b.step(i), device)
                samples.append(timed_step(built, device, 4 + round_index))
        for label, (_, _, samples) in runs.items():
            row[f"{label}_ms"] = statistics.median(wall for wall, _ in samples) * 1e3
        for label, (_, _, samples) in runs.items():
            row[f"{label}_cpu_ms"] = statistics.median(cpu for _, cpu in samples) * 1e3
        del runs
    row["compiled_vs_eager"] = row["neuron_eager_ms"] / row["neuron_compiled_ms"]
    row["elementwise_only_vs_eager"] = (
        row["neuron_eager_ms"] / row["neuron_compiled_elementwise_only_ms"]
    )
    row["bitwise_vs_eager"] = row["neuron_eager_ms"] / row["neuron_compiled_bitwise_ms"]
    row["compiled_vs_inductor"] = row["cpu_inductor_ms"] / row["neuron_compiled_ms"]
    # CPU time: the work done, which load on the machine disturbs less than wall time does.
    row["cpu_time_compiled_vs_eager"] = row["neuron_eager_cpu_ms"] / row["neuron_compiled_cpu_ms"]
    row["cpu_time_elementwise_only_vs_eager"] = (
        row["neuron_eager_cpu_ms"] / row["neuron_compiled_elementwise_only_cpu_ms"]
    )
    row["cpu_time_bitwise_vs_eager"] = (
        row["neuron_eager_cpu_ms"] / row["neuron_compiled_bitwise_cpu_ms"]
    )
    row["cpu_time_compiled_vs_inductor"] = (
        row["cpu_inductor_cpu_ms"] / row["neuron_compiled_cpu_ms"]
    )
    row["cold_compile_ratio"] = row["neuron_cold_compile_s"] / row["inductor_cold_compile_s"]
    # Compiler against compiler: Dynamo's and AOTAutograd's tracing (our cold time less our
    # backend's share) is paid by both, so it is taken off Inductor's cold time too.
    ours_s = row["neuron_backend_ms"] / 1e3
    tracing_s = row["neuron_cold_compile_s"] - ours_s
    row["backend_compile_ratio"] = ours_s / max(row["inductor_cold_compile_s"] - tracing_s, 1e-3)
    return row


def dynamic_lengths(size: str) -> dict:
    """GPT-2 trained at 5 sequence lengths under dynamic=True: graphs compiled."""
    import openneuron
    from bench.workloads import WORKLOADS

    torch._dynamo.reset()
    openneuron.reset_compile_metrics()
    built = WORKLOADS["gpt2"].build("neuron", size=size)
    compiled = torch.compile(built.model, backend="neuron", dynamic=True)
    for seq in (32, 48, 64, 96, 128):
        tokens = torch.randint(0, 1000, (2, seq), device="neuron")
        compiled(input_ids=tokens, labels=tokens).loss.backward()
    metrics = openneuron.compile_metrics()
    return {
        "case": "gpt2, dynamic=True, seq 32..128 (5 lengths)",
        "graphs": metrics["graphs"],
        "recompiles": metrics["recompiles"],
        "target": "each graph compiled once",
    }


def markdown(results: dict, arguments: str) -> str:
    lines = [
        BEGIN,
        "",
        "## torch.compile",
        "",
        f"Measured {results['date']} with `.venv/bin/python bench/compile_bench.py "
        f"{arguments}` (`make bench-compile`). Step times in ms (medians over rounds that "
        "interleave the six configurations (`bitwise`: compiled with "
        '`options={"bitwise": True}`), each timed step after at least 25 ms of untimed '
        "steps of its own configuration; `*_cpu_ms` is the process CPU time over all "
        "threads, less disturbed by load than wall time); load average at the start "
        f"{results.get('load', '?')}; cold compile in s "
        "(first step less a steady one, empty caches, Dynamo and AOTAutograd included); "
        "`neuron_backend_ms` is our compiler's own share; `backend_compile_ratio` compares "
        "the compilers alone: that share against Inductor's cold time less the tracing both "
        "pay (our cold time less our share).",
        "",
    ]
    rows = results["workloads"]
    keys = list(rows[0])
    lines += ["| " + " | ".join(keys) + " |", "|" + "---|" * len(keys)]
    lines += ["| " + " | ".join(format_value(r.get(k)) for k in keys) + " |" for r in rows]
    lines += [
        "",
        "Geomeans: " + ", ".join(f"{k} {v:.3f}" for k, v in results["geomeans"].items()),
        "",
        f"Dynamic shapes: {results['dynamic']}",
        "",
        END,
    ]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--workloads", default="")
    parser.add_argument("--json", type=Path, default=ROOT / "bench" / "results" / "compile.json")
    parser.add_argument("--markdown", type=Path, default=ROOT / "docs" / "performance.md")
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    import openneuron  # noqa: F401
    from bench.workloads import WORKLOADS

    names = args.workloads.split(",") if args.workloads else list(WORKLOADS)
    size = "small" if args.quick else "benchmark"
    results = {"machine": machine(), "date": time.strftime("%Y-%m-%d"), "workloads": []}
    results["load"] = " ".join(f"{x:.1f}" for x in os.getloadavg())
    print(f"machine: {results['machine']}")
    for name in names:
        results["workloads"].append(measure(WORKLOADS[name], size, 3 if args.quick else 11))
        print_table("torch.compile", results["workloads"][-1:])
    results["dynamic"] = dynamic_lengths("small")
    rows = results["workloads"]
    results["geomeans"] = {
        key: statistics.geometric_mean(r[key] for r in rows)
        for key in (
            "compiled_vs_eager",
            "elementwise_only_vs_eager",
            "bitwise_vs_eager",
            "compiled_vs_inductor",
            "cpu_time_compiled_vs_eager",
            "cpu_time_elementwise_only_vs_eager",
            "cpu_time_bitwise_vs_eager",
            "cpu_time_compiled_vs_inductor",
            "cold_compile_ratio",
            "backend_compile_ratio",
        )
    }
    print_table("torch.compile", rows)
    print(f"\ngeomeans: {results['geomeans']}\ndynamic: {results['dynamic']}")
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(results, indent=2))
    replace_section(args.markdown, markdown(results, " ".join(sys.argv[1:])), BEGIN, END)
    print(f"wrote {args.json} and {args.markdown}")


if __name__ == "__main__":
    main()
