"""Collective bandwidth and DDP overhead: the neuron backend against Gloo on CPU tensors.

    .venv/bin/python -m bench.distributed [--quick] [--json bench/results/distributed.json]
        [--markdown docs/performance.md] [--no-ddp]

Spawns 2 ranks on 127.0.0.1 with "cpu:gloo,neuron:neuron": in the same processes and the same
run, each size is timed on neuron tensors (the neuron backend, synchronous calls as
`dist.all_reduce(t)` makes them, and asynchronous ones waited for at the end of a batch) and on
CPU tensors (Gloo), the sides taking turns sample by sample so machine load falls on all alike.
The table shows bus bandwidth (NCCL-tests convention) with the ratio neuron / Gloo, medians over
the samples. Then W3 (GPT-2) DDP step time with 2 ranks against 1 rank at the same per-rank
batch (half the global batch), one kernel thread per rank so that both runs have a core per
rank: the overhead is what data parallelism adds. Not a test: it never fails on a timing.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import statistics
import sys
import time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parent.parent
SIZES = [1 << k for k in range(10, 27, 2)]  # 1 KiB .. 64 MiB
OPS = ["all_reduce", "all_gather_into_tensor", "reduce_scatter_tensor"]


def _bus_factor(op: str, world: int) -> float:
    # Bytes each rank moves per byte of the op's size (NCCL-tests' busbw definitions).
    return 2 * (world - 1) / world if op == "all_reduce" else (world - 1) / world


# The sides of each row: label, device, async calls (waited for at the end of a sample).
SIDES = [("neuron", "neuron", False), ("neuron_async", "neuron", True), ("gloo_cpu", "cpu", False)]


def _run_op(dist, op, tensor, scratch, world, async_op):
    if op == "all_reduce":
        return dist.all_reduce(tensor, async_op=async_op)
    if op == "all_gather_into_tensor":
        return dist.all_gather_into_tensor(
            scratch, tensor[: tensor.numel() // world], async_op=async_op
        )
    return dist.reduce_scatter_tensor(scratch[: tensor.numel() // world], tensor, async_op=async_op)


class _Side:
    """One side of a row: its tensors and a sample that runs `calls` collectives."""

    def __init__(self, dist, op, device, async_op, size_bytes, world):
        numel = max(size_bytes // 4, world)
        self.dist, self.op, self.world, self.async_op = dist, op, world, async_op
        self.device = torch.device(device)
        self.tensor = torch.ones(numel, device=self.device)
        self.scratch = torch.empty(numel, device=self.device)

    def sync(self):
        if self.device.type == "neuron":
            torch.neuron.synchronize()

    def sample(self, calls):
        self.dist.barrier()
        started, cpu_started = time.perf_counter(), time.process_time()
        works = [
            _run_op(self.dist, self.op, self.tensor, self.scratch, self.world, self.async_op)
            for _ in range(calls)
        ]
        for work in works:
            if work is not None:
                work.wait()
        self.sync()
        # CPU time of the whole process (every thread, the transport's included) per call.
        return (
            (time.perf_counter() - started) / calls,
            (time.process_time() - cpu_started) / calls,
        )


def _time_row(dist, op, size_bytes, world, repeats):
    """Median seconds per call of every side, the sides taking turns sample by sample."""
    sides = {
        label: _Side(dist, op, "neuron" if kind == "neuron" else "cpu", async_op, size_bytes, world)
        for label, kind, async_op in SIDES
    }
    once = max(side.sample(2)[0] for side in sides.values())  # warm up; the slowest sets it
    # Enough calls per sample that a sample lasts about 20 ms.
    calls_box = torch.tensor([max(1, min(200, int(0.02 / max(once, 1e-6))))])
    dist.broadcast(calls_box, src=0)  # every rank runs the same number of calls
    calls = int(calls_box.item())
    samples = {label: [] for label in sides}
    order = list(sides)
    for repeat in range(repeats):
        for label in order if repeat % 2 == 0 else reversed(order):
            samples[label].append(sides[label].sample(calls))
    medians = {
        label: tuple(statistics.median(column) for column in zip(*values, strict=True))
        for label, values in samples.items()
    }
    # Each repeat's neuron sample against the Gloo sample taken beside it: a paired ratio, less
    # swayed than the ratio of medians by load that shifts between repeats.
    paired = statistics.median(
        gloo[0] / neuron[0]
        for neuron, gloo in zip(samples["neuron"], samples["gloo_cpu"], strict=True)
    )
    return medians, paired


def _collectives_rank(rank, world, repeats, sizes, ops=OPS):
    import torch.distributed as dist

    from tests.distributed_scenarios import init

    init(rank, world, backend="cpu:gloo,neuron:neuron", timeout_s=120)
    rows = []
    for op in ops:
        for size in sizes:
            row = {"op": op, "bytes": size}
            medians, row["paired_ratio"] = _time_row(dist, op, size, world, repeats)
            for label, (seconds, cpu) in medians.items():
                row[f"{label}_us"] = seconds * 1e6
                row[f"{label}_cpu_us"] = cpu * 1e6
                row[f"{label}_busbw_gbps"] = size * _bus_factor(op, world) / seconds / 1e9
            rows.append(row)
    dist.destroy_process_group()
    return rows


def _ddp_rank(rank, world, steps, per_rank_batch, one_core=False):
    """Median DDP step time; with one_core, the process runs on one CPU (each rank its own)."""
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel

    from bench.workloads import causal_lm_loss, get_workload
    from tests.distributed_scenarios import init

    torch.set_num_threads(1)  # one core per rank, in the 1-rank run too (OPENNEURON_NUM_THREADS=1)
    if one_core:  # the host thread and the stream worker share it, as two ranks on two cores do
        cores = sorted(os.sched_getaffinity(0))
        os.sched_setaffinity(0, {cores[rank % len(cores)]})
    init(rank, world, backend="cpu:gloo,neuron:neuron", timeout_s=300)
    device = torch.device("neuron", torch.neuron.current_device())
    sizes = dict(get_workload("gpt2").sizes["benchmark"])
    sizes["batch"] = per_rank_batch
    built = get_workload("gpt2").builder(device, seed=0, **sizes)
    model = DistributedDataParallel(built.model) if world > 1 else built.model
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    data = torch.Generator().manual_seed(rank)
    tokens = torch.randint(0, sizes["vocab"], (per_rank_batch, sizes["seq"]), generator=data).to(
        device
    )
    times = []
    for step in range(steps + 2):
        torch.neuron.synchronize()
        if world > 1:
            dist.barrier()
        started = time.perf_counter()
        optimizer.zero_grad()
        causal_lm_loss(model, tokens).backward()
        optimizer.step()
        torch.neuron.synchronize()
        if step >= 2:
            times.append(time.perf_counter() - started)
    dist.destroy_process_group()
    return statistics.median(times)


def _launch(target, world, *args, env=None):
    from tests import distributed_harness

    directory = ROOT / "build" / "bench-distributed" / f"{target.__name__}-{world}-{os.getpid()}"
    outcomes = distributed_harness.launch(target, world, directory, *args, env=env, deadline_s=1800)
    if not all(o["ok"] for o in outcomes):
        raise SystemExit(distributed_harness.describe(outcomes))
    return [o["result"] for o in outcomes]


def _fmt_size(size):
    return f"{size >> 20} MiB" if size >= 1 << 20 else f"{size >> 10} KiB"


BEGIN = "<!-- distributed section: written by bench/distributed.py -->"
END = "<!-- end of distributed section -->"


def _table(rows) -> list[str]:
    lines = [
        "| op | size | neuron GB/s | neuron async GB/s | Gloo CPU GB/s | neuron / Gloo"
        " | paired neuron / Gloo | async / Gloo |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for row in rows:
        lines.append(
            f"| {row['op']} | {_fmt_size(row['bytes'])} | {row['neuron_busbw_gbps']:.3f}"
            f" | {row['neuron_async_busbw_gbps']:.3f} | {row['gloo_cpu_busbw_gbps']:.3f}"
            f" | {row['ratio']:.2f} | {row['paired_ratio']:.2f} | {row['ratio_async']:.2f} |"
        )
    return lines


def markdown(results: dict, arguments: str) -> str:
    machine = results["machine"]
    ddp = results["ddp"]
    rows = results["collectives"]
    worst = min(row["ratio"] for row in rows)
    worst_large = min(row["ratio"] for row in rows if row["bytes"] >= 1 << 20)
    met = sum(row["ratio"] >= (1.0 if row["bytes"] >= 1 << 20 else 0.9) for row in rows)
    met_paired = sum(
        row["paired_ratio"] >= (1.0 if row["bytes"] >= 1 << 20 else 0.9) for row in rows
    )
    lines = [
        BEGIN,
        "",
        "## Distributed",
        "",
        f"Measured {results['date']} with `.venv/bin/python -m bench.distributed {arguments}`"
        f" on {machine['cores']} cores of {machine['cpu_model']}, torch {machine['torch']},"
        f" 2 ranks on 127.0.0.1, Gloo over TCP as the transport of both sides. Host load"
        f" (1-minute load average, other processes included): {machine['load_average_1min']}"
        f" at the start, {results['load_average_1min_at_end']} at the end.",
        "",
        "Bus bandwidth (NCCL-tests convention), medians of interleaved samples; `neuron` are"
        " synchronous calls on neuron tensors (`dist.all_reduce(t)`), `neuron async` are"
        " `async_op=True` calls waited for at the end of a sample, `Gloo CPU` is PyTorch's Gloo"
        " on CPU tensors in the same processes.",
        "",
        *_table(rows),
        "",
        f"Lowest neuron / Gloo ratio: {worst:.2f} (from 1 MiB: {worst_large:.2f}). Rows meeting"
        f" the target (at least 0.9, and 1.0 from 1 MiB): {met} of {len(rows)} by the ratio of"
        f" medians, {met_paired} by the paired ratio."
        + (
            " With the load above the core count these figures are not representative: the"
            " latency-bound rows mostly measure scheduling."
            if machine["load_average_1min"] > machine["cores"]
            else ""
        ),
        "",
        "How the neuron side runs: every collective starts with one all-to-all of the"
        " transport in which each rank sends every peer its fingerprint (kind, dtype, element"
        " count, reduction) followed by the data it carries to that peer, and receives into a"
        " slot sized for the most any rank may carry (Gloo accepts a shorter message; a longer"
        " one aborts the process), so ranks compare fingerprints before any message of a size"
        " the peer does not expect could arrive. All-reduce travels whole in it up to 256 KiB;"
        " above, it is a reduce-scatter carried in it and an all-gather of the reduced chunks"
        " (Gloo's all-reduce after the check past 32 MiB per chunk); all-gather and"
        " reduce-scatter carry up to 2 MiB per peer in it, beyond that one message per pair of"
        " ranks. So the check costs no round of messages of its own. Both sides share two cores"
        " with each other and with everything else running, so latency-bound sizes vary with"
        " scheduling from sample to sample.",
        "",
        f"W3 (GPT-2, benchmark size) DDP step with per-rank batch {ddp['per_rank_batch']},"
        " one kernel thread per rank: 1 rank"
        f" {ddp['one_rank_s'] * 1e3:.1f} ms, 2 ranks {ddp['two_ranks_s'] * 1e3:.1f} ms, overhead"
        f" {ddp['overhead'] * 100:+.1f}%. Against 1 rank confined to one core (its host thread"
        " and stream worker sharing it, as each of the two ranks shares the machine's two cores"
        f" with the other): {ddp['one_rank_one_core_s'] * 1e3:.1f} ms, overhead"
        f" {ddp['overhead_vs_one_core'] * 100:+.1f}%; the difference between the two overheads is"
        " the second core a lone rank has to itself.",
        "",
        END,
        "",
    ]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer sizes and repeats")
    parser.add_argument("--json", default=str(ROOT / "bench" / "results" / "distributed.json"))
    parser.add_argument("--markdown", type=Path, help="also write the section of this page")
    parser.add_argument("--ops", nargs="+", choices=OPS, default=OPS, help="collectives to time")
    parser.add_argument("--sizes-kib", nargs="+", type=int, help="sizes to time, in KiB")
    parser.add_argument("--repeats", type=int, help="interleaved samples per side and row")
    parser.add_argument(
        "--no-ddp", action="store_true", help="collectives only (the DDP step is not timed)"
    )
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT))
    from bench.run import machine, replace_section

    repeats = args.repeats or (5 if args.quick else 9)
    sizes = SIZES[::2] if args.quick else SIZES
    if args.sizes_kib:
        sizes = [kib << 10 for kib in args.sizes_kib]
    results = {
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "machine": machine(),
        "transport": "Gloo TCP over 127.0.0.1",
    }
    print(f"load average at the start: {results['machine']['load_average_1min']}")

    rows = _launch(_collectives_rank, 2, repeats, sizes, args.ops)[0]
    for row in rows:
        row["ratio"] = row["neuron_busbw_gbps"] / row["gloo_cpu_busbw_gbps"]
        row["ratio_async"] = row["neuron_async_busbw_gbps"] / row["gloo_cpu_busbw_gbps"]
    results["collectives"] = rows
    print("2 ranks, bus bandwidth GB/s (median of interleaved samples)")
    print(
        f"{'op':<24}{'size':>9}{'neuron':>10}{'async':>10}{'gloo cpu':>10}{'ratio':>8}"
        f"{'paired':>8}{'async':>8}"
    )
    for row in rows:
        print(
            f"{row['op']:<24}{_fmt_size(row['bytes']):>9}{row['neuron_busbw_gbps']:>10.3f}"
            f"{row['neuron_async_busbw_gbps']:>10.3f}{row['gloo_cpu_busbw_gbps']:>10.3f}"
            f"{row['ratio']:>8.2f}{row['paired_ratio']:>8.2f}{row['ratio_async']:>8.2f}"
        )

    results["load_average_1min_after_collectives"] = round(os.getloadavg()[0], 1)
    if args.no_ddp:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps(results, indent=2))
        print(f"load average at the end: {results['load_average_1min_after_collectives']}")
        print(f"wrote {args.json}")
        return
    steps = 3 if args.quick else 6
    per_rank_batch = 4
    one_thread = {"OPENNEURON_NUM_THREADS": "1", "OMP_NUM_THREADS": "1"}
    ones, ones_pinned, twos = [], [], []
    for _ in range(1 if args.quick else 2):  # the runs alternate
        ones.append(_launch(_ddp_rank, 1, steps, per_rank_batch, env=one_thread)[0])
        ones_pinned.append(_launch(_ddp_rank, 1, steps, per_rank_batch, True, env=one_thread)[0])
        twos.append(max(_launch(_ddp_rank, 2, steps, per_rank_batch, env=one_thread)))
    one, one_pinned, two = (statistics.median(t) for t in (ones, ones_pinned, twos))
    results["ddp"] = {
        "workload": "W3 gpt2 (benchmark size)",
        "per_rank_batch": per_rank_batch,
        "one_rank_s": one,
        "one_rank_one_core_s": one_pinned,
        "two_ranks_s": two,
        "overhead": two / one - 1,
        "overhead_vs_one_core": two / one_pinned - 1,
    }
    print(
        f"\nW3 DDP step, per-rank batch {per_rank_batch}, one kernel thread per rank: 1 rank"
        f" {one * 1e3:.1f} ms, 2 ranks {two * 1e3:.1f} ms, overhead"
        f" {results['ddp']['overhead'] * 100:+.1f}% (1 rank on one core"
        f" {one_pinned * 1e3:.1f} ms: {results['ddp']['overhead_vs_one_core'] * 100:+.1f}%)"
    )
    results["load_average_1min_at_end"] = round(os.getloadavg()[0], 1)
    print(f"load average at the end: {results['load_average_1min_at_end']}")
    Path(args.json).parent.mkdir(parents=True, exist_ok=True)
    Path(args.json).write_text(json.dumps(results, indent=2))
    print(f"wrote {args.json}")
    if args.markdown:
        replace_section(args.markdown, markdown(results, " ".join(sys.argv[1:])), BEGIN, END)
        print(f"wrote {args.markdown}")


if __name__ == "__main__":
    main()
