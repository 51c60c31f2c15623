"""Not a test: what observing costs. (1) W3 (GPT-2 training) step time on neuron with
torch.profiler (CPU + PrivateUse1 activities) on against off, interleaved, medians; target <= 10%.
(2) `openneuron check` wall time on W3 against running the same script once on each device;
target <= 3x. Prints a table and writes JSON (default bench/results/profiler.json).

    .venv/bin/python bench/profiler_overhead.py [--steps N] [--rounds R] [--json PATH]
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import torch
from torch.profiler import ProfilerActivity, profile

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.run import machine  # noqa: E402
from bench.workloads import get_workload  # noqa: E402


def step_times(built, steps: int, first: int) -> list[float]:
    times = []
    for i in range(first, first + steps):
        started = time.perf_counter()
        built.step(i).item()  # .item() waits for the device
        times.append(time.perf_counter() - started)
    return times


def profiler_overhead(steps: int, rounds: int) -> dict:
    built = get_workload("gpt2").build("neuron")
    step_times(built, 3, 0)  # warm-up
    off, on, processing = [], [], []
    for r in range(rounds):
        off += step_times(built, steps, 100 * r)
        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.PrivateUse1]) as prof:
            on += step_times(built, steps, 100 * r + 50)
            started = time.perf_counter()
        processing.append(time.perf_counter() - started)  # stop + post-processing
        del prof
    off_ms, on_ms = statistics.median(off) * 1e3, statistics.median(on) * 1e3
    return {
        "workload": "W3 gpt2 (small)",
        "steps": len(off),
        "off_ms": off_ms,
        "on_ms": on_ms,
        "overhead": on_ms / off_ms - 1,
        "stop_s": statistics.median(processing),
    }


def run_seconds(command: list[str]) -> float:
    started = time.perf_counter()
    subprocess.run(command, check=True, capture_output=True, cwd=ROOT)
    return time.perf_counter() - started


def check_wall_time(steps: int) -> dict:
    script = str(ROOT / "bench" / "check_workload.py")
    python = sys.executable
    cpu = run_seconds([python, script, "gpt2", "--steps", str(steps), "--device", "cpu"])
    neuron = run_seconds([python, script, "gpt2", "--steps", str(steps), "--device", "neuron"])
    tool = os.path.join(os.path.dirname(python), "openneuron")
    with tempfile.TemporaryDirectory() as out:
        check = run_seconds([tool, "check", script, "gpt2", "--steps", str(steps), "--out", out])
    return {
        "workload": "W3 gpt2 (small)",
        "steps": steps,
        "cpu_run_s": cpu,
        "neuron_run_s": neuron,
        "check_s": check,
        "ratio": check / (cpu + neuron),
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--json", type=Path, default=ROOT / "bench" / "results" / "profiler.json")
    args = parser.parse_args()
    info = machine()
    info["cpu_capability"] = torch.backends.cpu.get_cpu_capability()
    print(f"machine: {info}")
    overhead = profiler_overhead(args.steps, args.rounds)
    print("\nprofiler overhead (median step time, profiler off vs on)")
    print(
        f"  {overhead['workload']}: off {overhead['off_ms']:.1f} ms, on {overhead['on_ms']:.1f} ms,"
        f" overhead {overhead['overhead'] * 100:+.1f}% (target <= 10%);"
        f" stop + post-processing {overhead['stop_s']:.2f} s"
    )
    wall = check_wall_time(args.steps)
    print("\nopenneuron check wall time against one run on each device")
    print(
        f"  {wall['workload']}, {wall['steps']} steps: cpu run {wall['cpu_run_s']:.1f} s,"
        f" neuron run {wall['neuron_run_s']:.1f} s, check {wall['check_s']:.1f} s,"
        f" ratio {wall['ratio']:.2f}x (target <= 3x)"
    )
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(
        json.dumps(
            {
                "machine": info,
                "date": time.strftime("%Y-%m-%d"),
                "profiler_overhead": overhead,
                "check_wall_time": wall,
            },
            indent=2,
        )
    )
    print(f"\nwrote {args.json}")


if __name__ == "__main__":
    main()
