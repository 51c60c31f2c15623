"""What raising out-of-range indices at the call costs: index ops with the check at the call
(the default: the index's stream runs what is queued, then the host scans the values) against
deferred checks (OPENNEURON_DEFERRED_INDEX_CHECKS=1: the queued kernel checks, errors surface at
the next synchronize), interleaved in one process.

    .venv/bin/python bench/index_bounds_bench.py [--repeats N]

Cases: an index_select whose index is ready (idle stream), one whose index comes from queued
work behind a matmul, and a small embedding-model training step. Host time is until the call
returns; total time includes the final synchronize. Writes bench/results/index_bounds.json.
Nothing here is a test.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.run import machine, print_table  # noqa: E402

DEVICE = "neuron"


def idle_index_select(weight, index):
    torch.neuron.synchronize()
    start = time.perf_counter()
    torch.index_select(weight, 0, index)
    host = time.perf_counter() - start
    torch.neuron.synchronize()
    return host, time.perf_counter() - start


def index_behind_matmul(weight, index, a, b):
    torch.neuron.synchronize()
    start = time.perf_counter()
    torch.mm(a, b)  # queued work the index waits behind
    shifted = (index + 1) % weight.shape[0]  # the index is produced by queued work
    issued = time.perf_counter()
    torch.index_select(weight, 0, shifted)
    host = time.perf_counter() - issued
    torch.neuron.synchronize()
    return host, time.perf_counter() - start


class EmbeddingModel(torch.nn.Module):
    def __init__(self, vocab: int, width: int):
        super().__init__()
        self.embed = torch.nn.Embedding(vocab, width)
        self.mix = torch.nn.Linear(width, width)
        self.head = torch.nn.Linear(width, vocab)

    def forward(self, tokens):
        return self.head(torch.relu(self.mix(self.embed(tokens))))


def training_step(model, optimizer, tokens, targets):
    start = time.perf_counter()
    optimizer.zero_grad()
    logits = model(tokens)
    loss = torch.nn.functional.cross_entropy(logits.flatten(0, 1), targets.flatten())
    loss.backward()
    optimizer.step()
    host = time.perf_counter() - start
    torch.neuron.synchronize()
    return host, time.perf_counter() - start


def interleaved(case, repeats: int) -> dict:
    """Median host and total milliseconds per setting, the settings taking turns."""
    from openneuron import _C

    samples = {name: {"host": [], "total": []} for name in ("at call", "deferred")}
    for i in range(repeats + 3):
        for name, deferred in (("at call", False), ("deferred", True)):
            previous = _C._set_deferred_index_checks(deferred)
            try:
                host, total = case()
            finally:
                _C._set_deferred_index_checks(previous)
            if i >= 3:  # warm-up
                samples[name]["host"].append(host)
                samples[name]["total"].append(total)
    return {
        f"{name} {kind} ms": statistics.median(values) * 1e3
        for name, kinds in samples.items()
        for kind, values in kinds.items()
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=30)
    args = parser.parse_args()
    import openneuron  # noqa: F401

    torch.manual_seed(0)
    weight = torch.randn(32000, 512, device=DEVICE)
    index = torch.randint(0, 32000, (4096,), device=DEVICE)
    a = torch.randn(512, 512, device=DEVICE)
    b = torch.randn(512, 512, device=DEVICE)
    model = EmbeddingModel(8000, 256).to(DEVICE)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    tokens = torch.randint(0, 8000, (16, 64), device=DEVICE)
    targets = torch.randint(0, 8000, (16, 64), device=DEVICE)
    cases = {
        "index_select [32000,512] by 4096, index ready": lambda: idle_index_select(weight, index),
        "index_select behind a 512^3 matmul, index from queued work": lambda: index_behind_matmul(
            weight, index, a, b
        ),
        "embedding model training step (8000x256, 16x64 tokens)": lambda: training_step(
            model, optimizer, tokens, targets
        ),
    }
    rows = []
    for title, case in cases.items():
        row = {"case": title, **interleaved(case, args.repeats)}
        row["total ratio (at call / deferred)"] = row["at call total ms"] / row["deferred total ms"]
        rows.append(row)
    print_table("Index bounds at the call vs deferred (medians)", rows)
    out = ROOT / "bench" / "results" / "index_bounds.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"machine": machine(), "rows": rows}, indent=2))
    print(f"\nwrote {out.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
