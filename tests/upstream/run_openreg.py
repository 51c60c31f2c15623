"""OpenReg's own test suite (PyTorch's reference PrivateUse1 backend) run against neuron.

    python -m tests.upstream.run_openreg --pytorch-src PYTORCH_CHECKOUT [--files F ...]
        [--json OUT] [-k EXPR] [--timeout SECONDS]

The test files are read from PYTORCH_CHECKOUT/test/cpp_extensions/open_registration_extension/
torch_openreg/tests/ and ported at run time by a mechanical substitution, nothing else changed:
``torch_openreg`` (OpenReg's Python package) becomes ``openneuron`` (ours), ``OPENREG`` becomes
``NEURON`` and ``openreg`` becomes ``neuron`` (so ``torch.openreg`` is ``torch.neuron`` and
``device="openreg:1"`` is ``device="neuron:1"``). The ported copies are written next to the JSON
output, never into this repository. Each file runs in its own pytest process; results come from
its JUnit XML (its output is in FILE.log beside it). Every failure must match an entry of
known_failures_openreg.json: the test's id and a regular expression its failure text must
contain (its signature), with the reason. Exit status 1 when a failure is not listed, fails
with another signature, or a listed test passes.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import subprocess
import sys
import time
import xml.etree.ElementTree as ElementTree
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
KNOWN_FAILURES = Path(__file__).with_name("known_failures_openreg.json")
SUITE = Path("test/cpp_extensions/open_registration_extension/torch_openreg/tests")

# Applied in this order; each is a plain, case-sensitive text replacement.
EXIT_GRACE_SECONDS = 30

SUBSTITUTIONS = (("torch_openreg", "openneuron"), ("OPENREG", "NEURON"), ("openreg", "neuron"))


def port(text: str) -> str:
    """An OpenReg test file's text with OpenReg's names replaced by neuron's."""
    for old, new in SUBSTITUTIONS:
        text = text.replace(old, new)
    return text


def read_cases(xml: Path) -> dict[str, tuple[str, str]]:
    """{"Class::test": (status, failure text)} from one pytest JUnit XML file."""
    cases: dict[str, tuple[str, str]] = {}
    for case in ElementTree.parse(xml).getroot().iter("testcase"):
        test_id = f"{case.get('classname', '').rsplit('.', 1)[-1]}::{case.get('name')}"
        problem = case.find("failure")
        if problem is None:
            problem = case.find("error")
        if problem is not None:
            text = f"{problem.get('message', '')}\n{problem.text or ''}"
            cases[test_id] = ("failed", text)
        elif case.find("skipped") is not None:
            cases[test_id] = ("skipped", case.find("skipped").get("message", ""))
        else:
            cases[test_id] = ("passed", "")
    return cases


def run_file(ported: Path, out_dir: Path, extra: list[str], timeout: float) -> dict:
    """One pytest process over a ported file; its cases, counts and a note."""
    xml = out_dir / f"{ported.stem}.xml"
    xml.unlink(missing_ok=True)
    cmd = [
        sys.executable, "-m", "pytest", str(ported), "-q", "-p", "no:cacheprovider",
        "--noconftest", "-p", "openneuron", f"--junitxml={xml}", "-o", "junit_family=xunit1",
        *extra,
    ]  # fmt: skip
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO / "python"), str(REPO)])}
    started = time.monotonic()
    note = ""
    log = out_dir / f"{ported.stem}.log"
    # Its own session, so that the process and whatever it spawned can be stopped together.
    with log.open("w") as log_file:
        proc = subprocess.Popen(
            cmd, cwd=ported.parent, env=env, stdout=log_file, stderr=subprocess.STDOUT,
            start_new_session=True,
        )  # fmt: skip
    written_at = None
    while proc.poll() is None:
        time.sleep(1)
        if written_at is None and xml.exists():
            written_at = time.monotonic()
        waited = time.monotonic() - started
        # A test that leaves child processes waiting (test_ipc.py's consumers, on a backend
        # without device IPC) keeps pytest from exiting after it wrote its results.
        if written_at is not None and time.monotonic() - written_at > EXIT_GRACE_SECONDS:
            note = f"stopped {EXIT_GRACE_SECONDS} s after writing its results (children left)"
        elif waited > timeout:
            note = f"timeout after {timeout} s"
        else:
            continue
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        break
    if not note and proc.returncode not in (0, 1, 5):  # 5: every test skipped
        tail = log.read_text(errors="replace").strip().splitlines()
        note = f"pytest exit {proc.returncode}" + (f": {tail[-1][:300]}" if tail else "")
    cases = read_cases(xml) if xml.exists() else {}
    counts = {
        s: sum(1 for v, _ in cases.values() if v == s) for s in ("passed", "failed", "skipped")
    }
    return {
        "collected": len(cases), **counts, "note": note,
        "seconds": round(time.monotonic() - started),
        "tests": {t: status for t, (status, _) in cases.items()},
        "failures": {t: text[:2000] for t, (status, text) in cases.items() if status == "failed"},
    }  # fmt: skip


def check(results: dict, known: dict) -> tuple[list[str], list[str], list[str]]:
    """(unlisted failures, failures whose text does not match their signature, listed tests
    that did not fail), each as "file::test"."""
    unlisted, other_signature, not_failing = [], [], []
    for file, result in results.items():
        listed = known.get(file, {})
        for test, text in result["failures"].items():
            entry = listed.get(test)
            if entry is None:
                unlisted.append(f"{file}::{test}")
            elif not re.search(entry["signature"], text):
                other_signature.append(f"{file}::{test}")
        for test in listed:
            if result["tests"].get(test) in ("passed", "skipped"):
                not_failing.append(f"{file}::{test}")
    return unlisted, other_signature, not_failing


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pytorch-src", type=Path, default=os.environ.get("PYTORCH_SRC"))
    parser.add_argument("--files", nargs="+", help="test file names (default: every test_*.py)")
    parser.add_argument("--json", type=Path, default=REPO / "build" / "upstream-openreg" / "r.json")
    parser.add_argument("-k", dest="keyword", help="pytest -k expression")
    parser.add_argument("--timeout", type=float, default=900, help="seconds per file")
    args = parser.parse_args(argv)
    suite = args.pytorch_src / SUITE if args.pytorch_src else None
    if suite is None or not suite.is_dir():
        parser.error(f"--pytorch-src (or PYTORCH_SRC) must name a PyTorch checkout with {SUITE}")
    files = args.files or sorted(p.name for p in suite.glob("test_*.py"))
    out_dir = args.json.resolve().parent
    ported_dir = out_dir / "ported"
    ported_dir.mkdir(parents=True, exist_ok=True)
    known = json.loads(KNOWN_FAILURES.read_text())
    extra = ["-k", args.keyword] if args.keyword else []

    results = {}
    for file in files:
        ported = ported_dir / file
        ported.write_text(port((suite / file).read_text()))
        r = results[file] = run_file(ported, out_dir, extra, args.timeout)
        print(
            f"{file}: {r['collected']} collected, {r['passed']} passed, {r['failed']} failed, "
            f"{r['skipped']} skipped ({r['seconds']} s) {r['note']}",
            flush=True,
        )
    args.json.resolve().write_text(json.dumps(results, indent=1) + "\n")
    total = {s: sum(r[s] for r in results.values()) for s in ("passed", "failed", "skipped")}
    print(f"total: {total['passed']} passed, {total['failed']} failed, {total['skipped']} skipped")
    unlisted, other_signature, not_failing = check(results, {f: known.get(f, {}) for f in files})
    for t in unlisted:
        print(f"UNEXPECTED FAILURE {t}")
    for t in other_signature:
        print(f"FAILS WITH ANOTHER SIGNATURE {t}")
    for t in not_failing:
        print(f"UNEXPECTED PASS {t}")
    print(
        f"{len(unlisted)} unexpected failures, {len(other_signature)} with another signature, "
        f"{len(not_failing)} unexpected passes"
    )
    return 1 if unlisted or other_signature or not_failing else 0


if __name__ == "__main__":
    sys.exit(main())
