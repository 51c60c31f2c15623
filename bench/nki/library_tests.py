"""The NKI Library's own test suite, unchanged, on the simulated NeuronCore.

    python -m bench.nki.library_tests PATH/TO/nki-library [--sample N] [--timeout S]
        [--json bench/results/nki_library_tests.json] [pytest selection ...]

Runs ``pytest test/integration --test-mode simulation`` in the checkout (the suite's own CPU
simulation mode) with ``bench.nki.nki_library_plugin``, which points that mode at openneuron's
simulator. Nothing of the library is copied or changed. The suite's test dependencies are in
``bench/nki/requirements-nki-library-tests.txt``. Prints pass / fail / skipped counts and the
failure reasons grouped by count, and writes every test's row (outcome, reason, estimated
latency, published cycle figure where the test carries one) as JSON.
"""

import argparse
import collections
import json
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def run(checkout, sample, timeout, report, extra):
    command = [
        sys.executable,
        "-m",
        "pytest",
        "-p",
        "bench.nki.nki_library_plugin",
        "-p",
        "no:cacheprovider",
        "--test-mode",
        "simulation",
        "--openneuron-report",
        str(report),
        "--openneuron-timeout",
        str(timeout),
        "--openneuron-sample",
        str(sample),
        "-q",
        "--no-header",
        "-rN",
        "--continue-on-collection-errors",
        "--tb=no",
        "--show-capture=no",
        *(extra or ["test/integration"]),
    ]
    env = dict(os.environ)
    paths = [str(REPO / "python"), str(REPO), env.get("PYTHONPATH", "")]
    env["PYTHONPATH"] = os.pathsep.join(p for p in paths if p)
    env.setdefault("OPENBLAS_NUM_THREADS", "1")
    return subprocess.run(command, cwd=checkout, env=env).returncode


def summarise(report):
    rows = json.loads(Path(report).read_text())["tests"]
    counts = collections.Counter(r["outcome"] for r in rows)
    print("\n" + ", ".join(f"{n} {k}" for k, n in counts.most_common()))
    reasons = collections.Counter(
        (r["outcome"], r["reason"].splitlines()[0][:150] if r["reason"] else "")
        for r in rows
        if r["outcome"] != "passed"
    )
    for (outcome, reason), n in reasons.most_common(40):
        print(f"{n:5d} {outcome:<16} {reason}")
    timed = [r for r in rows if r.get("latency_ns") and r.get("published_cycles")]
    for r in timed:
        print(
            f"{r['test']}: estimated {r['latency_ns'] / 1e3:.1f} us, "
            f"published {r['published_cycles']}"
        )


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("checkout", type=Path)
    parser.add_argument("--sample", type=int, default=0, help="cases per test function")
    parser.add_argument("--timeout", type=float, default=120, help="seconds per test")
    parser.add_argument("--json", type=Path, default=REPO / "bench/results/nki_library_tests.json")
    parser.add_argument("selection", nargs="*", help="pytest arguments (default test/integration)")
    args = parser.parse_intermixed_args()
    if not (args.checkout / "test" / "conftest.py").is_file():
        sys.exit(f"{args.checkout} is not an NKI Library checkout (no test/conftest.py)")
    run(args.checkout.resolve(), args.sample, args.timeout, args.json.resolve(), args.selection)
    summarise(args.json)


if __name__ == "__main__":
    main()
