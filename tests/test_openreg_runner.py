"""The OpenReg suite runner's own logic (tests/upstream/run_openreg.py): the port that renames
OpenReg's names to neuron's, and the check that holds each failure to its listed signature."""

import json

from tests.upstream import run_openreg


def test_port_renames_the_package_the_module_and_the_device():
    source = (
        "import torch_openreg\n"
        'x = torch.randn(2, device="openreg:1")\n'
        "torch.openreg.synchronize()\n"
        "assert hasattr(ProfilerActivity, 'OPENREG')\n"
        "# Cannot re-initialize OpenReg\n"
    )
    assert run_openreg.port(source) == (
        "import openneuron\n"
        'x = torch.randn(2, device="neuron:1")\n'
        "torch.neuron.synchronize()\n"
        "assert hasattr(ProfilerActivity, 'NEURON')\n"
        "# Cannot re-initialize OpenReg\n"  # prose and messages in mixed case stay as written
    )


def test_every_failure_must_be_listed_with_a_matching_signature():
    results = {
        "test_a.py": {
            "tests": {
                "T::listed_same": "failed",
                "T::listed_other": "failed",
                "T::unlisted": "failed",
                "T::listed_passes": "passed",
                "T::fine": "passed",
            },
            "failures": {
                "T::listed_same": "AssertionError: torch.float16 != torch.float32",
                "T::listed_other": "RuntimeError: segfault-ish surprise",
                "T::unlisted": "AssertionError: new",
            },
        }
    }
    known = {
        "test_a.py": {
            "T::listed_same": {"signature": r"float16 != torch\.float32", "reason": "r"},
            "T::listed_other": {"signature": "does not match", "reason": "r"},
            "T::listed_passes": {"signature": ".", "reason": "r"},
        }
    }
    unlisted, other_signature, not_failing = run_openreg.check(results, known)
    assert unlisted == ["test_a.py::T::unlisted"]
    assert other_signature == ["test_a.py::T::listed_other"]
    assert not_failing == ["test_a.py::T::listed_passes"]


def test_known_failures_each_have_a_signature_and_a_reason():
    known = json.loads(run_openreg.KNOWN_FAILURES.read_text())
    for file, entries in known.items():
        if file.startswith("_"):
            continue
        for test, entry in entries.items():
            assert entry["signature"] and len(entry["reason"]) > 20, (file, test)
