"""The NKI Library's own test suite, unchanged, on the simulated NeuronCore.

    python -m bench.nki.library_tests PATH/TO/nki-library [--sample N] [--timeout S]
        [--json bench/results/nki_library_tests.json] [test paths ...]

Runs the suite's own CPU simulation mode (``pytest --test-mode simulation``) in the checkout,
one test file per child process, with ``bench.nki.nki_library_plugin``, which points that
mode at openneuron's simulator. Nothing of the library is copied or changed. The suite's test
dependencies are in ``bench/nki/requirements-nki-library-tests.txt``. Prints pass / fail /
skip counts and the failure reasons grouped by count, and writes every test's row (outcome,
reason, estimated latency, the cycle figure the test carries where it has one) as JSON.
``--sample N`` runs the first N parameter sets of each test function (the suite has about
5,000 cases; the simulation mode itself skips the large-shape ones unless ``--all-sizes``).
Where a passed case carries a cycle figure, the estimate is compared with it (a table, and
``fidelity`` in the JSON: per case and the median |error| per kernel).
"""

import argparse
import collections
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def test_files(checkout, selection):
    files = []
    for entry in selection or ["test/integration"]:
        path = checkout / entry
        files += sorted(path.rglob("test_*.py")) if path.is_dir() else [path]
    return [f.relative_to(checkout) for f in files]


def run_file(
    checkout, test_file, sample, timeout, lines, all_sizes=False, keyword=None, platform=None
):
    """One child pytest on one file; returns its rows (a crash leaves the test it was in)."""
    command = [sys.executable, "-m", "pytest", "-p", "bench.nki.nki_library_plugin"]
    command += ["-p", "no:cacheprovider", "--test-mode", "simulation", "-q", "--no-header"]
    command += ["--tb=no", "--show-capture=no", "--continue-on-collection-errors"]
    command += ["--openneuron-report", str(lines), "--openneuron-timeout", str(timeout)]
    command += ["--openneuron-sample", str(sample), str(test_file)]
    if keyword:
        command += ["-k", keyword]
    if platform:
        command += ["--platform-target", platform]  # the suite's own option (trn2 by default)
    env = dict(os.environ)
    if all_sizes:
        env["NKILIB_SIMULATION_RUN_ALL"] = "1"  # the suite's own switch: keep large shapes
    paths = [str(REPO / "python"), str(REPO), env.get("PYTHONPATH", "")]
    env["PYTHONPATH"] = os.pathsep.join(p for p in paths if p)
    env.setdefault("OPENBLAS_NUM_THREADS", "1")
    lines.write_text("")
    done = subprocess.run(command, cwd=checkout, env=env, capture_output=True, text=True)
    rows, started = [], None
    for line in lines.read_text().splitlines():
        row = json.loads(line)
        if row["outcome"] == "started":
            started = row["test"]
        else:
            rows.append(row)
            started = None if row["test"] == started else started
    if started is not None and done.returncode not in (0, 1):
        reason = f"the test process ended with status {done.returncode} inside this test"
        rows.append({"test": started, "outcome": "crashed", "reason": reason})
    return rows


def summarise(rows):
    counts = collections.Counter(r["outcome"] for r in rows)
    print("\n" + ", ".join(f"{n} {k}" for k, n in counts.most_common()))
    reasons = collections.Counter(
        (r["outcome"], r["reason"].splitlines()[0][:150] if r["reason"] else "")
        for r in rows
        if r["outcome"] != "passed"
    )
    for (outcome, reason), n in reasons.most_common(60):
        print(f"{n:5d} {outcome:<16} {reason}")
    table = fidelity(rows)
    if not table["cases"]:
        print("\nno case that ran carries a published cycle figure: no fidelity comparison")
        return table
    print("\ntest | estimated ns | published figure | error (figure read as ps)")
    for case in table["cases"]:
        print(
            f"{case['test']} | {case['estimated_ns']:.0f} | {case['published']:.0f} | "
            f"{case['error_pct']:+.1f}%"
        )
    for kernel, median in table["median_abs_error_pct_by_kernel"].items():
        print(f"{kernel}: median |error| {median:.1f}% over its cases")
    return table


def _first_number(value):
    for item in value if isinstance(value, (list, tuple)) else [value]:
        if isinstance(item, (int, float)) and not isinstance(item, bool):
            return float(item)
    return None


def fidelity(rows):
    """Our estimate beside the figure the test carries, for every passed case with both.
    The suite does not state the figure's unit; it is read as picoseconds (the reading that
    fits, see docs/nki.md), and the error is (estimate - figure) / figure."""
    cases = []
    for r in rows:
        published = None
        for value in (r.get("published_cycles") or {}).values():
            published = published or _first_number(value)
        if r["outcome"] != "passed" or not r.get("latency_ns") or not published:
            continue
        error = (r["latency_ns"] * 1000.0 - published) / published * 100.0
        kernel = r["test"].split("::")[0].rsplit("/", 1)[-1]
        cases.append(
            {
                "test": r["test"],
                "kernel": kernel,
                "estimated_ns": r["latency_ns"],
                "published": published,
                "error_pct": error,
            }
        )
    by_kernel = collections.defaultdict(list)
    for case in cases:
        by_kernel[case["kernel"]].append(abs(case["error_pct"]))
    medians = {k: statistics.median(v) for k, v in sorted(by_kernel.items())}
    return {"cases": cases, "median_abs_error_pct_by_kernel": medians}


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("checkout", type=Path)
    parser.add_argument("--sample", type=int, default=0, help="cases per test function")
    parser.add_argument("--timeout", type=float, default=120, help="seconds per test")
    parser.add_argument("--json", type=Path, default=REPO / "bench/results/nki_library_tests.json")
    parser.add_argument(
        "--all-sizes",
        action="store_true",
        help="run the large-shape cases the simulation mode skips (its NKILIB_SIMULATION_RUN_ALL)",
    )
    parser.add_argument("-k", dest="keyword", help="pytest -k expression selecting cases")
    parser.add_argument(
        "--platform-target", help="the suite's target (trn2, trn3: MX kernels run on trn3 only)"
    )
    parser.add_argument("selection", nargs="*", help="test files or folders in the checkout")
    args = parser.parse_intermixed_args()
    checkout = args.checkout.resolve()
    if not (checkout / "test" / "conftest.py").is_file():
        sys.exit(f"{args.checkout} is not an NKI Library checkout (no test/conftest.py)")
    rows = []
    with tempfile.TemporaryDirectory() as scratch:
        lines = Path(scratch) / "rows.jsonl"
        for test_file in test_files(checkout, args.selection):
            file_rows = run_file(
                checkout,
                test_file,
                args.sample,
                args.timeout,
                lines,
                args.all_sizes,
                args.keyword,
                args.platform_target,
            )
            passed = sum(r["outcome"] == "passed" for r in file_rows)
            print(f"{test_file}: {passed} of {len(file_rows)} passed", flush=True)
            rows += file_rows
            args.json.parent.mkdir(parents=True, exist_ok=True)
            args.json.write_text(json.dumps({"checkout": str(args.checkout), "tests": rows}))
    table = summarise(rows)
    report = {"checkout": str(args.checkout), "tests": rows, "fidelity": table}
    args.json.write_text(json.dumps(report))


if __name__ == "__main__":
    main()
