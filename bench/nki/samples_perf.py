"""The performance tests of AWS's nki-samples (``test/unit``), unchanged, against the simulator's
trn2 estimate: each test calls ``nki.benchmark`` on its kernel at hardware sizes and names a
latency bound; this prints our estimate beside that bound, per case.

    .venv/bin/python -m bench.nki.samples_perf SNAPSHOT [SNAPSHOT ...] [--json PATH]

SNAPSHOT is the root of an nki-samples checkout that still holds ``test/unit`` and the reference
kernels (8370e11 or 7af4e4d). The tests run through pytest in a child process per file (the
tests not marked ``simulation``); a plug-in notes the latency each ``benchmark`` call measured
and the test's bound parameter (``latency`` or ``max_p99_latency``). The bound is in the unit
the test compares with: microseconds, ``get_latency_percentile``'s unit, except where a file
states otherwise (see docs/nki.md). Not part of `make test`: it needs the checkout.
"""

import argparse
import json
import platform
from pathlib import Path

from bench.nki.samples import has_unit_tests, run_unit_test_files

_PLUGIN = """
import json, os, time
import pytest
try:
    import _openneuron_startup  # what an installed openneuron runs at start-up
except ImportError:
    import openneuron
from openneuron.nki import kernel as _kernel

_measured = []
_call = _kernel._BenchmarkedKernel.__call__

def _noting_call(self, *args, **kwargs):
    result = _call(self, *args, **kwargs)
    _measured.append(self.benchmark_result.nc_latency.get_latency_percentile(50))
    return result

_kernel._BenchmarkedKernel.__call__ = _noting_call

@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item):
    _measured.clear()
    item._started = time.perf_counter()
    yield

@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if report.when != "call" and report.outcome == "passed":
        return
    params = getattr(getattr(item, "callspec", None), "params", {})
    bound = params.get("latency", params.get("max_p99_latency"))
    reason = ""
    if report.outcome != "passed":
        text = getattr(report, "longreprtext", "") or ""
        lines = [l for l in text.splitlines() if l.startswith("E ")]
        reason = (lines[0][2:].strip() if lines else (text.strip().splitlines() or [""])[-1])
    record = {"test": report.nodeid, "when": report.when, "outcome": report.outcome,
              "reason": reason[:300], "bound": bound,
              "estimate_us": _measured[-1] if _measured else None,
              "wall_s": round(time.perf_counter() - getattr(item, "_started", 0.0), 1)}
    with open(os.environ["SAMPLES_RESULTS"], "a") as handle:
        handle.write(json.dumps(record) + "\\n")
"""


def run_snapshot(snapshot: Path, only: str | None, timeout: float):
    if not has_unit_tests(snapshot):
        print(f"  {snapshot}: no test/unit with reference kernels (removed after 8370e11)")
        return []
    rows = run_unit_test_files(snapshot, _PLUGIN, ["-m", "not simulation"], only, timeout)
    for row in rows:
        estimate, bound = row.get("estimate_us"), row.get("bound")
        if estimate is not None and bound:
            row["ratio"] = estimate / float(bound)
        shown = (
            f"{estimate:10.1f} us  bound {bound}  ratio {row['ratio']:.3g}"
            if "ratio" in row
            else ""
        )
        print(f"  {row['outcome']:<7} {row['test']}  {shown} {row.get('reason', '')[:160]}")
    return rows


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("snapshots", nargs="+", type=Path, help="nki-samples checkout roots")
    parser.add_argument("--json", default="bench/results/nki_samples_perf.json")
    parser.add_argument("--only", help="run only test files whose name contains this")
    parser.add_argument("--timeout", type=float, default=900.0, help="seconds per test file")
    args = parser.parse_args()
    report = {"benchmark": "nki_samples_perf_tests_unchanged", "profile": "trn2",
              "machine": platform.processor() or platform.machine(), "runs": []}  # fmt: skip
    for snapshot in args.snapshots:
        print(f"{snapshot}:", flush=True)
        rows = run_snapshot(snapshot, args.only, args.timeout)
        report["runs"].append({"snapshot": str(snapshot), "rows": rows})
    Path(args.json).parent.mkdir(parents=True, exist_ok=True)
    Path(args.json).write_text(json.dumps(report, indent=2))
    print(f"wrote {args.json}")


if __name__ == "__main__":
    main()
