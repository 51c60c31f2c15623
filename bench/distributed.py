"""Collective bandwidth and DDP overhead: the neuron backend against Gloo on CPU tensors.

    .venv/bin/python -m bench.distributed [--quick] [--json bench/results/distributed.json]

Spawns 2 ranks on 127.0.0.1 with "cpu:gloo,neuron:neuron": in the same processes and the same
run, each size is timed on neuron tensors (the neuron backend) and on CPU tensors (Gloo), and the
table shows bus bandwidth (NCCL-tests convention) with the ratio neuron / Gloo, medians over
repeats. Then W3 (GPT-2) DDP step time with 2 ranks against 1 rank at the same per-rank batch
(half the global batch): the overhead is what data parallelism adds. Not a test: it never fails
on a timing.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
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


def _run_op(dist, op, tensor, scratch, world):
    if op == "all_reduce":
        dist.all_reduce(tensor)
    elif op == "all_gather_into_tensor":
        dist.all_gather_into_tensor(scratch, tensor[: tensor.numel() // world])
    else:
        dist.reduce_scatter_tensor(scratch[: tensor.numel() // world], tensor)


def _time_op(dist, op, device, size_bytes, world, repeats, sync):
    numel = max(size_bytes // 4, world)
    tensor = torch.ones(numel, device=device)
    scratch = torch.empty(numel, device=device)
    for _ in range(2):
        _run_op(dist, op, tensor, scratch, world)
    sync()
    # Enough calls per sample that a sample lasts about 20 ms.
    started = time.perf_counter()
    _run_op(dist, op, tensor, scratch, world)
    sync()
    once = time.perf_counter() - started
    calls = max(1, min(200, int(0.02 / max(once, 1e-6))))
    calls_box = torch.tensor([calls])
    dist.broadcast(calls_box, src=0)  # every rank runs the same number of calls
    calls = int(calls_box.item())
    samples = []
    for _ in range(repeats):
        dist.barrier()
        started = time.perf_counter()
        for _ in range(calls):
            _run_op(dist, op, tensor, scratch, world)
        sync()
        samples.append((time.perf_counter() - started) / calls)
    return statistics.median(samples)


def _collectives_rank(rank, world, repeats, sizes):
    import torch.distributed as dist

    from tests.distributed_scenarios import init

    init(rank, world, backend="cpu:gloo,neuron:neuron", timeout_s=120)
    neuron = torch.device("neuron", torch.neuron.current_device())
    rows = []
    for op in OPS:
        for size in sizes:
            row = {"op": op, "bytes": size}
            for label, device, sync in (
                ("neuron", neuron, lambda: torch.neuron.synchronize()),
                ("gloo_cpu", torch.device("cpu"), lambda: None),
            ):
                seconds = _time_op(dist, op, device, size, world, repeats, sync)
                row[f"{label}_us"] = seconds * 1e6
                row[f"{label}_busbw_gbps"] = size * _bus_factor(op, world) / seconds / 1e9
            rows.append(row)
    dist.destroy_process_group()
    return rows


def _ddp_rank(rank, world, steps, per_rank_batch):
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel

    from bench.workloads import causal_lm_loss, get_workload
    from tests.distributed_scenarios import init

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


def _launch(target, world, *args):
    from tests import distributed_harness

    directory = ROOT / "build" / "bench-distributed" / f"{target.__name__}-{world}-{os.getpid()}"
    outcomes = distributed_harness.launch(target, world, directory, *args, deadline_s=1800)
    if not all(o["ok"] for o in outcomes):
        raise SystemExit(distributed_harness.describe(outcomes))
    return [o["result"] for o in outcomes]


def _fmt_size(size):
    return f"{size >> 20} MiB" if size >= 1 << 20 else f"{size >> 10} KiB"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer sizes and repeats")
    parser.add_argument("--json", default=str(ROOT / "bench" / "results" / "distributed.json"))
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT))
    repeats = 3 if args.quick else 7
    sizes = SIZES[::2] if args.quick else SIZES

    rows = _launch(_collectives_rank, 2, repeats, sizes)[0]
    print("2 ranks, bus bandwidth GB/s (median), neuron backend vs Gloo on CPU tensors")
    print(f"{'op':<24}{'size':>9}{'neuron':>10}{'gloo cpu':>10}{'ratio':>8}")
    for row in rows:
        row["ratio"] = row["neuron_busbw_gbps"] / row["gloo_cpu_busbw_gbps"]
        print(
            f"{row['op']:<24}{_fmt_size(row['bytes']):>9}{row['neuron_busbw_gbps']:>10.3f}"
            f"{row['gloo_cpu_busbw_gbps']:>10.3f}{row['ratio']:>8.2f}"
        )

    steps = 3 if args.quick else 6
    per_rank_batch = 4
    one = _launch(_ddp_rank, 1, steps, per_rank_batch)[0]
    two = max(_launch(_ddp_rank, 2, steps, per_rank_batch))
    ddp = {
        "workload": "W3 gpt2 (benchmark size), per-rank batch 4",
        "one_rank_s": one,
        "two_ranks_s": two,
        "overhead": two / one - 1,
    }
    print(
        f"\nW3 DDP step, per-rank batch {per_rank_batch}: 1 rank {one * 1e3:.1f} ms, "
        f"2 ranks {two * 1e3:.1f} ms, overhead {ddp['overhead'] * 100:+.1f}%"
        " (both ranks share this machine's cores)"
    )
    environment = {
        "torch": torch.__version__,
        "cpu": platform.processor() or platform.machine(),
        "cores": os.cpu_count(),
        "transport": "Gloo TCP over 127.0.0.1",
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
    }
    Path(args.json).parent.mkdir(parents=True, exist_ok=True)
    Path(args.json).write_text(
        json.dumps({"environment": environment, "collectives": rows, "ddp": ddp}, indent=2)
    )
    print(f"wrote {args.json}")


if __name__ == "__main__":
    main()
