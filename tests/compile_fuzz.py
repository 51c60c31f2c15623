"""Differential fuzzing of torch.compile on neuron: random programs, compiled against eager.

A program is a list of random steps over [M, N] tensors (elementwise math with broadcasting,
reductions, softmax, matrix products, views that round-trip, indexing, casts); with gradients
half the time. Compiled results (forward and gradients) are held to the accuracy rule
(tests/accuracy_rule.py): close to eager's, or no farther from a float64 run of the same
program on the CPU than a small multiple of eager's own error. With ``--bitwise`` the program is
compiled with ``options={"bitwise": True}`` and forward results must equal eager's bit for bit
(gradients keep the rule: AOTAutograd adds a tensor's gradient contributions in its own order).

    .venv/bin/python -m tests.compile_fuzz --graphs 10000      # the soak run
"""

from __future__ import annotations

import argparse
import random
import sys
import time

import torch

from tests.accuracy_rule import accuracy_problem

UNARY = [
    torch.exp,
    torch.tanh,
    torch.sigmoid,
    torch.relu,
    torch.neg,
    torch.abs,
    lambda x: torch.sqrt(torch.abs(x)),
    torch.nn.functional.gelu,
    torch.nn.functional.silu,
    lambda x: x * 0.5 + 1.0,
    lambda x: torch.clamp(x, -1.0, 2.0),
    torch.sin,
]
BINARY = [
    torch.add,
    torch.sub,
    torch.mul,
    lambda a, b: a / (b.abs() + 1),
    torch.maximum,
    lambda a, b: torch.where(a > b, a, b),
    lambda a, b: a * 2 - b,
]


def make_program(rng: random.Random, m: int, n: int, length: int) -> list[tuple]:
    steps = []
    for _ in range(length):
        kind = rng.choice(
            [
                "unary",
                "unary",
                "binary",
                "binary",
                "reduce",
                "softmax",
                "matmul",
                "view",
                "index",
                "cast",
            ]
        )
        steps.append((kind, rng.randrange(1 << 30)))
    return steps


def run_program(steps, x, w, perm):
    """Interprets `steps` on x [M, N], with weight w [N, N] and a column permutation."""
    values = [x]
    for kind, seed in steps:
        pick = random.Random(seed)
        a = values[pick.randrange(len(values))]
        if kind == "unary":
            out = pick.choice(UNARY)(a)
        elif kind == "binary":
            b = values[pick.randrange(len(values))]
            out = pick.choice(BINARY)(a, b)
        elif kind == "reduce":
            reduction = pick.choice([torch.sum, torch.mean, torch.amax])
            out = a + reduction(a, dim=pick.choice([0, 1]), keepdim=True)
        elif kind == "softmax":
            out = torch.softmax(a, dim=-1)
        elif kind == "matmul":  # alone, or with an elementwise epilogue that fuses into it
            out = pick.choice([lambda t: t @ w, lambda t: torch.tanh(t @ w) * 2 + t])(a)
        elif kind == "view":
            shape = a.shape
            out = pick.choice(
                [
                    lambda t: t.t().contiguous().t(),
                    lambda t: t.reshape(-1).reshape(shape) * 1.5,
                    lambda t: t.unsqueeze(0).squeeze(0) + 1,
                    lambda t: torch.cat([t[:, ::2], t[:, 1::2]], dim=1),
                    lambda t: t.transpose(0, 1).exp().transpose(0, 1),
                ]
            )(a)
        elif kind == "index":
            out = torch.index_select(a, 1, perm)
        else:  # a round trip through bfloat16 (also in the float64 run)
            out = a.to(torch.bfloat16).to(a.dtype)
        values.append(out)
    return values[-1], values[len(values) // 2]


def check_one(rng: random.Random, index: int, bitwise: bool = False) -> str | None:
    m = rng.choice([1, 3, 8, 33])
    n = rng.choice([2, 4, 16, 130])
    steps = make_program(rng, m, n, rng.randrange(2, 10))
    grad = rng.random() < 0.5
    torch.manual_seed(index)
    x_cpu = torch.randn(m, n)
    w_cpu = torch.randn(n, n) / n
    perm_cpu = torch.randperm(n)

    def fn(x, w, perm):
        return run_program(steps, x, w, perm)

    def evaluate(f, device, dtype):
        x = x_cpu.to(device, dtype).requires_grad_(grad)
        w = w_cpu.to(device, dtype).requires_grad_(grad)
        outs = f(x, w, perm_cpu.to(device))
        results = [o.detach().cpu() for o in outs]
        if grad:
            wide = [o.to(torch.promote_types(o.dtype, torch.float32)) for o in outs]
            sum((o * o).sum() for o in wide).backward()
            results += [g.cpu() if g is not None else torch.zeros(0) for g in (x.grad, w.grad)]
        return results

    torch._dynamo.reset()
    expected = evaluate(fn, "neuron", torch.float32)
    options = {"bitwise": True} if bitwise else {}
    got = evaluate(torch.compile(fn, backend="neuron", options=options), "neuron", torch.float32)
    float64 = evaluate(fn, "cpu", torch.float64)
    # A bfloat16 round trip turns a last-bit difference into one bfloat16 ulp.
    tol = 1e-2 if any(kind == "cast" for kind, _ in steps) else None
    for k, (e, g, f) in enumerate(zip(expected, got, float64)):
        if bitwise and k < 2:  # bit for bit, NaN where eager has NaN
            ok = e.shape == g.shape and torch.equal(e.isnan(), g.isnan())
            ok = ok and torch.equal(e.nan_to_num(0.0), g.nan_to_num(0.0))
            problem = None if ok else "not bitwise equal to eager"
        else:
            problem = accuracy_problem(e, g, f.to(torch.float64), tol)
        if problem:
            return f"graph {index}: result {k}: {problem}; {steps}"
    return None


def fuzz(graphs: int, seed: int, progress: bool = False, bitwise: bool = False) -> list[str]:
    rng = random.Random(seed)
    problems = []
    for k in range(graphs):
        problem = check_one(rng, k, bitwise)
        if problem:
            problems.append(problem)
            if progress:
                print(problem, flush=True)
        if progress and (k + 1) % 100 == 0:
            print(f"{k + 1} graphs, {len(problems)} mismatches", flush=True)
    return problems


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--graphs", type=int, default=10000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--bitwise", action="store_true", help='options={"bitwise": True}')
    args = parser.parse_args()
    import openneuron  # noqa: F401

    start = time.time()
    problems = fuzz(args.graphs, args.seed, progress=True, bitwise=args.bitwise)
    print(
        f"{args.graphs - len(problems)} passed, {len(problems)} failed "
        f"in {time.time() - start:.0f} s"
    )
    sys.exit(1 if problems else 0)


if __name__ == "__main__":
    main()
