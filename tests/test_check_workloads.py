"""`openneuron check` on the representative workloads W1-W5 (bench/check_workload.py): each runs
natively with no host fallback, no module diverges beyond its dtype's tolerance, losses agree,
and a projected trn2/trn3 step time is reported."""

import json
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TOOL = os.path.join(os.path.dirname(sys.executable), "openneuron")


# W4 in bf16 (its fp32 variant is the same model with tighter numerics, covered by W3's checks).
@pytest.mark.parametrize("name", ["mlp", "cnn", "gpt2", "bert-bf16", "llama"])
def test_check_workload(tmp_path, name):
    script = os.path.join(ROOT, "bench", "check_workload.py")
    completed = subprocess.run(
        [
            TOOL,
            "check",
            script,
            name,
            "--steps",
            "2",
            "--out",
            str(tmp_path),
            "--fail-on",
            "fallback,unsupported,numerics,crash,timeout",
            "--timeout",
            "300",
        ],
        capture_output=True,
        text=True,
        timeout=700,
    )
    with open(tmp_path / "report.json") as f:
        report = json.load(f)
    assert {run["status"] for run in report["runs"].values()} == {"ok"}, report["runs"]
    assert report["op_coverage"]["host_fallback"]["ops"] == 0
    assert report["op_coverage"]["native"]["ops"] > 10
    assert report["numerics"]["compared_modules"] > 3
    assert report["numerics"]["first_divergent"] is None, report["numerics"]["first_divergent"]
    assert report["performance"]["projected_trn2_step_us"] > 0
    assert completed.returncode == 0, completed.stdout[-2000:]
