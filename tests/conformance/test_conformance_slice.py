"""A fast, fixed slice of the conformance sweep, run with every test run (CI included).

The slice: the OpInfos in SLICE_OPS and the ModuleInfos in SLICE_MODULES, at every dtype the
CPU supports for each, with at most SLICE_MAX_SAMPLES samples per pair (evenly spaced over
the database's list). The pairs run in two worker processes (a crash or hang on neuron fails
only its own pair); each pair is then one test here:

- a pair not in known_failures.json must pass (native or fallback);
- a listed pair must fail with exactly the listed signatures (known.judge), else it is an
  unexpected failure or pass;
- a pair the CPU itself cannot run (no samples ran) is skipped with that reason.

The full sweep is `python -m tests.conformance.report` (see README.md beside this file).
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from . import harness, known
from .catalog import modules_by_name, ops_by_name

# One or more OpInfos per family. Names are op_db's full names ("name.variant").
SLICE_OPS = [
    # elementwise arithmetic and math
    "add", "sub", "mul", "div.no_rounding_mode", "pow", "abs", "neg", "exp", "log", "sqrt",
    "rsqrt", "clamp", "where", "eq",
    # activations
    "nn.functional.relu", "nn.functional.gelu", "nn.functional.silu", "sigmoid", "tanh",
    "nn.functional.elu", "nn.functional.hardtanh",
    # reductions
    "sum", "mean", "amax", "max.reduction_with_dim", "argmax", "var", "cumsum",
    # matrix products
    "mm", "bmm", "addmm", "matmul", "nn.functional.linear",
    # indexing, shape and copies
    "index_select", "gather", "scatter_add", "masked_fill", "__getitem__", "cat", "reshape",
    "transpose", "contiguous",
    # softmax, norms, losses, convolution, embedding
    "softmax", "log_softmax", "nn.functional.layer_norm", "nn.functional.cross_entropy",
    "nn.functional.mse_loss", "nn.functional.conv2d", "nn.functional.embedding",
    "nn.functional.scaled_dot_product_attention",
]  # fmt: skip
SLICE_MODULES = ["nn.Linear", "nn.LayerNorm", "nn.ReLU", "nn.Embedding", "nn.Conv1d"]
SLICE_MAX_SAMPLES = 12
SLICE_JOBS = 2
SLICE_TIMEOUT = 120


def _items() -> list[tuple[str, str, str]]:
    ops, modules = ops_by_name(), modules_by_name()
    items = [
        ("op", name, harness.dtype_name(d))
        for name in SLICE_OPS
        for d in ops[name].supported_dtypes("cpu")
    ]
    items += [
        ("module", name, harness.dtype_name(d))
        for name in SLICE_MODULES
        for d in harness.module_dtypes(modules[name])
    ]
    return items


ITEMS = _items()


@pytest.fixture(scope="module")
def slice_results(tmp_path_factory) -> dict[tuple[str, str, str], dict]:
    from .report import _run_items

    work = tmp_path_factory.mktemp("conformance")
    with open(work / "results.jsonl", "w") as raw, open(work / "workers.log", "w") as log:
        results = _run_items(
            ITEMS, SLICE_JOBS, SLICE_MAX_SAMPLES, SLICE_TIMEOUT, raw, log, lambda *a: None
        )
    return {(r["kind"], r["name"], r["dtype"]): r for r in results}


# Pairs the full sweep lists as failing on samples the slice's smaller sample set does not reach
# (so the slice would see an unexpected pass), each with its reason. None today.
NOT_REACHED_BY_THE_SLICE: dict[tuple[str, str, str], str] = {}


@pytest.mark.parametrize("item", ITEMS, ids=["-".join(it) for it in ITEMS])
def test_conformance(item, slice_results):
    result = slice_results[item]
    if item in NOT_REACHED_BY_THE_SLICE and result["status"] in ("native", "fallback"):
        pytest.skip(NOT_REACHED_BY_THE_SLICE[item])
    if result["status"] == "skip":
        pytest.skip(f"the CPU ran no sample: {result['reason']}")
    entry = known.entry_for(known.load(), *item)
    if entry is not None:
        verdict = known.judge(known.load(), result)
        assert verdict == "expected", f"{verdict}: {result['reason']}"
        pytest.xfail(f"known failure: {entry['reason']}")
    assert result["status"] in ("native", "fallback"), "\n".join(result["failures"])


def test_slice_names_exist():
    ops, modules = ops_by_name(), modules_by_name()
    assert [n for n in SLICE_OPS if n not in ops] == []
    assert [n for n in SLICE_MODULES if n not in modules] == []


def test_every_known_failure_has_a_reason_and_exists():
    ops, modules = ops_by_name(), modules_by_name()
    for kind, name, dtype, entry in known.entries(known.load()):
        reason = entry["reason"].strip()
        assert reason and reason != known.PLACEHOLDER, f"{kind} {name} {dtype} has no reason"
        assert name in (ops if kind == "op" else modules), f"{kind} {name} is not in the database"


def test_a_listed_pair_failing_differently_is_unexpected():
    entry = {"reason": "r", "signatures": ["sample 3: forward: wrong values"]}
    known_list = {"ops": {"x": {"float32": entry}}, "modules": {}}

    def result(status, *failures):
        return {"kind": "op", "name": "x", "dtype": "float32", "status": status,
                "reason": failures[0] if failures else "",
                "signatures": [known.signature(f) for f in failures]}  # fmt: skip

    same = result("fail", "sample 3: forward: Tensor-likes are not close! | Mismatched 1")
    other_sample = result("fail", "sample 4: forward: Tensor-likes are not close! | x")
    other_check = result("fail", "sample 3: grad[0]: Tensor-likes are not close! | x")
    raised = result("fail", "sample 3: forward raised RuntimeError: boom")
    assert known.judge(known_list, same) == "expected"
    for r in (other_sample, other_check, raised):
        assert known.judge(known_list, r) == "unexpected failure", r
    assert known.judge(known_list, result("native")) == "unexpected pass"


def test_every_harness_exemption_has_a_reason():
    for table in (
        harness.VALUES_NOT_COMPARABLE,
        harness.DEVICE_CHANGING_OPS,
        harness.HOST_ARGUMENT_OPS,
    ):
        for name, reason in table.items():
            assert name in ops_by_name() and reason.strip(), name


if __name__ == "__main__":
    sys.exit(pytest.main([str(Path(__file__)), "-q", *sys.argv[1:]]))
