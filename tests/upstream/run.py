"""PyTorch's device-generic test files on neuron and on cpu, side by side.

    python -m tests.upstream.run --pytorch-src PYTORCH_CHECKOUT [--files F ...]
        [--devices neuron cpu] [--json OUT] [-k EXPR] [--timeout SECONDS] [--reuse-xml]
        [--large] [--budget SECONDS]

Each (file, device) runs in its own pytest process over PYTORCH_CHECKOUT/test/FILE with
PYTORCH_TESTING_DEVICE_ONLY_FOR=<device> and the plugin tests.upstream.neuron_test_base (the
neuron device-type test base). Results come from pytest's JUnit XML. Printed per file and
device: collected / passed / failed / skipped; then the tests that fail on neuron but pass or
do not fail on cpu, matched against known_failures.json (an entry is its reason, or
{"signature": a regular expression its failure text contains, "reason": ...}). Exit status 1
when a neuron-only failure is not listed there, a listed one passes, or one fails without its
signature; 0 otherwise. --large runs the largest files (LARGE_FILES), each on its selection in
SELECTIONS; --budget ends a file's tests after so many seconds, keeping those that ran. With
--reuse-xml, a (file, device) whose XML is already in the JSON's folder is read from it
instead of run again (so the devices can run in separate processes, side by side, and be
compared after).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import time
import xml.etree.ElementTree as ElementTree
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
KNOWN_FAILURES = Path(__file__).with_name("known_failures.json")
DEFAULT_FILES = (
    "test_view_ops.py",
    "test_indexing.py",
    "test_shape_ops.py",
    "test_sort_and_select.py",
    "nn/test_pooling.py",
    "test_unary_ufuncs.py",
    "test_binary_ufuncs.py",
    "test_reductions.py",
    "test_tensor_creation_ops.py",
    "test_nn.py",
)
# The largest device-generic files (`make test-upstream-large`), run on a selection each, so a
# file fits a time budget on 2 cores; what each selection leaves out and why is beside it.
LARGE_FILES = ("test_torch.py", "test_autograd.py", "test_ops.py")
SELECTIONS = {
    # TestTorchDeviceType only: TestTorch and the vital-signs classes are CPU tests that run
    # alike in both processes, so they say nothing of the device.
    "test_torch.py": "TestTorchDeviceType",
    # The device-generic classes only (TestAutogradDeviceType, TestAutogradMultipleDispatch);
    # the other 500 tests build CPU tensors and run alike in both processes.
    "test_autograd.py": "TestAutogradDeviceType or TestAutogradMultipleDispatch",
    # TestCommon's tests of every OpInfo that check the device's kernels (out=, noncontiguous
    # inputs, method/in-place variants, the dtypes each op supports, error inputs, out= warnings,
    # bool values, NumPy references, complex32), sampled below. Left out: the Python-reference
    # tests (test_python_ref, _meta, _torch_fallback, _executor, _errors: 17,800 of its 26,183
    # tests, torch._refs against the op), the CUDA-only test_multiple_devices and
    # test_compare_cpu, and the other classes (TestFakeTensor, TestMathBits,
    # TestCompositeCompliance, TestTags, TestRefsOpsInfo), by time.
    "test_ops.py": "TestCommon and (test_out or test_noncontiguous_samples"
    " or test_variant_consistency_eager or test_dtypes or test_errors"
    " or test_non_standard_bool_values or test_numpy_ref or test_complex_half_reference)"
    " and not test_python_ref",
}
# One test in N (the same tests on both devices; a hash of the device-free name), where a
# selection is too long for its budget: test_ops.py's ~6,600 selected tests take ~5 s each on
# 2 shared cores (about 9 hours a device); one in 40 is an even sample across the OpInfos.
SAMPLES = {"test_ops.py": 40}


def _device_free_name(test_id: str, device: str) -> str:
    """A test's id with the device parts removed, so neuron's and cpu's ids compare:
    TestFooNEURON::test_bar_neuron_float32 and TestFooCPU::test_bar_cpu_float32 both give
    TestFoo::test_bar_float32."""
    cls, _, name = test_id.rpartition("::")
    cls = re.sub(f"{device.upper()}$", "", cls.rsplit(".", 1)[-1])
    name = re.sub(f"_{device}(?=_|$)", "", name)
    return f"{cls}::{name}"


def read_results(xml: Path, device: str) -> dict[str, str]:
    """{device-free test id: "passed" | "failed" | "skipped"} from one pytest JUnit XML file."""
    tests: dict[str, str] = {}
    for case in ElementTree.parse(xml).getroot().iter("testcase"):
        test_id = f"{case.get('classname')}::{case.get('name')}"
        if case.find("failure") is not None or case.find("error") is not None:
            status = "failed"
        elif case.find("skipped") is not None:
            status = "skipped"
        else:
            status = "passed"
        tests[_device_free_name(test_id, device)] = status
    return tests


def read_failure_texts(xml: Path, device: str) -> dict[str, str]:
    """{device-free test id: its failure's message and text (first 2,000 characters)} for the
    failed tests of one pytest JUnit XML file."""
    texts: dict[str, str] = {}
    for case in ElementTree.parse(xml).getroot().iter("testcase"):
        failure = case.find("failure")
        failure = failure if failure is not None else case.find("error")
        if failure is not None:
            test_id = _device_free_name(f"{case.get('classname')}::{case.get('name')}", device)
            texts[test_id] = (failure.get("message", "") + "\n" + (failure.text or ""))[:2000]
    return texts


def unmatched_signatures(listed: dict, failure_texts: dict[str, str]) -> list[str]:
    """The listed tests whose entry gives a signature (a regular expression their failure text
    must contain) and that failed with a text that does not contain it: they fail for another
    reason than the one listed. An entry that is a plain reason has no signature."""
    return sorted(
        test
        for test, entry in listed.items()
        if isinstance(entry, dict)
        and test in failure_texts
        and not re.search(entry["signature"], failure_texts[test])
    )


def _summary(tests: dict[str, str], note: str, seconds: float) -> dict:
    counts = {s: sum(1 for v in tests.values() if v == s) for s in ("passed", "failed", "skipped")}
    return {
        "collected": len(tests), **counts, "note": note,
        "seconds": round(seconds), "tests": tests,
    }  # fmt: skip


def _pass_rate(result: dict | None) -> str:
    ran = result["passed"] + result["failed"] if result else 0
    return f"{100.0 * result['passed'] / ran:.1f}%" if ran else "-"


def xml_path(out_dir: Path, file: str, device: str) -> Path:
    return out_dir / f"{file.replace('/', '_')}.{device}.xml"


PLUGIN = "tests.upstream.neuron_test_base"
# Read by the plugin: seconds after which it ends the session; and the reason it gives.
BUDGET_VARIABLE = "NEURON_UPSTREAM_BUDGET_SECONDS"
BUDGET_SPENT = "time budget of this file spent"


def selection_args(file: str, keyword: str | None) -> list[str]:
    """pytest's -k for `file`: its selection in SELECTIONS and the user's expression, both."""
    parts = [f"({k})" for k in (SELECTIONS.get(file), keyword) if k]
    return ["-k", " and ".join(parts)] if parts else []


def run_file(
    src: Path,
    file: str,
    device: str,
    out_dir: Path,
    extra: list[str],
    timeout,
    plugin=PLUGIN,
    budget: float | None = None,
):
    """One pytest process with the plugin `plugin`; returns {"collected", "passed", "failed",
    "skipped", "tests"}. With `budget` (seconds), the plugin ends the session after the test
    running when it is spent, so the XML holds what ran (noted in "note")."""
    xml = xml_path(out_dir, file, device)
    xml.unlink(missing_ok=True)
    cmd = [
        sys.executable, "-m", "pytest", str(src / "test" / file), "-p", plugin, "-q", "-p",
        "no:cacheprovider", "--noconftest",
        f"--junitxml={xml}", "-o", "junit_family=xunit1", *extra,
    ]  # fmt: skip
    env = {
        **os.environ,
        "PYTORCH_TESTING_DEVICE_ONLY_FOR": device,
        "PYTHONPATH": os.pathsep.join([str(REPO), str(REPO / "python"), str(src / "test")]),
    }
    if budget:
        env[BUDGET_VARIABLE] = str(budget)
    if file in SAMPLES:
        env["NEURON_UPSTREAM_SAMPLE"] = str(SAMPLES[file])
    started = time.monotonic()
    try:
        proc = subprocess.run(
            cmd, cwd=src / "test", env=env, capture_output=True, text=True, timeout=timeout
        )
        note = "" if proc.returncode in (0, 1) else f"pytest exit {proc.returncode}"
        if BUDGET_SPENT in proc.stdout:
            note = f"stopped after its budget of {budget:.0f} s"
        if proc.returncode not in (0, 1) and proc.stdout + proc.stderr:
            note += ": " + (proc.stdout + proc.stderr).strip().splitlines()[-1][:300]
    except subprocess.TimeoutExpired:
        note = f"timeout after {timeout} s"
    tests = read_results(xml, device) if xml.exists() else {}
    summary = _summary(tests, note, time.monotonic() - started)
    summary["failures"] = read_failure_texts(xml, device) if xml.exists() else {}
    return summary


def neuron_only_failures(neuron: dict, cpu: dict | None) -> list[str]:
    """Tests that fail on neuron where cpu passed, skipped or did not run them."""
    cpu_tests = (cpu or {}).get("tests", {})
    return sorted(
        t for t, s in neuron["tests"].items() if s == "failed" and cpu_tests.get(t) != "failed"
    )


def main(
    argv=None,
    *,
    description=__doc__,
    default_files=DEFAULT_FILES,
    known_failures=KNOWN_FAILURES,
    plugin=PLUGIN,
    default_json=REPO / "build" / "upstream" / "results.json",
) -> int:
    """The runner; tests.upstream.run_dynamo calls it with its own files, known failures,
    plugin and output."""
    parser = argparse.ArgumentParser(description=description.split("\n\n")[0])
    parser.add_argument("--pytorch-src", type=Path, default=os.environ.get("PYTORCH_SRC"))
    parser.add_argument("--files", nargs="+", default=list(default_files))
    parser.add_argument("--devices", nargs="+", default=["neuron", "cpu"])
    parser.add_argument("--json", type=Path, default=default_json)
    parser.add_argument("-k", dest="keyword", help="pytest -k expression")
    parser.add_argument("--timeout", type=float, default=3600, help="seconds per file and device")
    parser.add_argument(
        "--budget",
        type=float,
        help="seconds per file and device after which the tests stop (those run are kept)",
    )
    parser.add_argument(
        "--large",
        action="store_true",
        help=f"the largest files ({', '.join(LARGE_FILES)}), each on its selection",
    )
    parser.add_argument(
        "--reuse-xml",
        action="store_true",
        help="read a (file, device) from its JUnit XML of an earlier run where there is one",
    )
    args = parser.parse_args(argv)
    if args.pytorch_src is None or not (args.pytorch_src / "test").is_dir():
        parser.error("--pytorch-src (or PYTORCH_SRC) must name a PyTorch checkout with test/")
    if args.large:
        args.files = list(LARGE_FILES)
    args.json = args.json.resolve()  # pytest runs in the checkout's test/ folder
    out_dir = args.json.parent
    out_dir.mkdir(parents=True, exist_ok=True)
    known = json.loads(known_failures.read_text()) if known_failures.exists() else {}

    results: dict[str, dict[str, dict]] = {}
    for file in args.files:
        results[file] = {}
        for device in args.devices:
            xml = xml_path(out_dir, file, device)
            if args.reuse_xml and xml.exists():
                r = _summary(read_results(xml, device), "from an earlier run's XML", 0)
                r["failures"] = read_failure_texts(xml, device)
            else:
                extra = selection_args(file, args.keyword)
                r = run_file(
                    args.pytorch_src, file, device, out_dir, extra, args.timeout, plugin,
                    args.budget,
                )  # fmt: skip
            results[file][device] = r
            print(
                f"{file} {device}: {r['collected']} collected, {r['passed']} passed, "
                f"{r['failed']} failed, {r['skipped']} skipped ({r['seconds']} s) {r['note']}",
                flush=True,
            )

    unexpected, unexpected_passes, other_signature = [], [], []
    for file, by_device in results.items():
        if "neuron" not in by_device:
            continue
        listed = known.get(file, {})
        only = neuron_only_failures(by_device["neuron"], by_device.get("cpu"))
        by_device["neuron"]["neuron_only_failures"] = only
        unexpected += [f"{file}::{t}" for t in only if t not in listed]
        unexpected_passes += [
            f"{file}::{t}" for t in listed if by_device["neuron"]["tests"].get(t) == "passed"
        ]
        other_signature += [
            f"{file}::{t}" for t in unmatched_signatures(listed, by_device["neuron"]["failures"])
        ]
    args.json.write_text(json.dumps(results, indent=1) + "\n")
    print(
        "\n| file | neuron collected / passed / failed / skipped | cpu | neuron-only failures "
        "| pass rate neuron / cpu (passed of passed + failed) |"
    )
    print("|---|---|---|---|---|")
    for file, by_device in results.items():
        cells = [
            "{collected} / {passed} / {failed} / {skipped}".format(**by_device[d])
            if d in by_device
            else "not run"
            for d in ("neuron", "cpu")
        ]
        only = len(by_device.get("neuron", {}).get("neuron_only_failures", []))
        rates = " / ".join(_pass_rate(by_device.get(d)) for d in ("neuron", "cpu"))
        print(f"| {file} | {cells[0]} | {cells[1]} | {only} | {rates} |")
    for t in unexpected:
        print(f"UNEXPECTED FAILURE {t}")
    for t in unexpected_passes:
        print(f"UNEXPECTED PASS {t}")
    for t in other_signature:
        print(f"FAILS WITH ANOTHER SIGNATURE {t}")
    print(
        f"{len(unexpected)} unexpected failures, {len(unexpected_passes)} unexpected passes, "
        f"{len(other_signature)} with another signature"
    )
    return 1 if unexpected or unexpected_passes or other_signature else 0


if __name__ == "__main__":
    sys.exit(main())
