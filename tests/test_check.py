"""`openneuron check` on scripts with known problems (through the console script, as a user runs
it) and the Python API `openneuron.check(model, example_inputs)`: op coverage with source lines,
numerics with the first divergent module, lint, compile, performance, failures, exit codes."""

import json
import os
import subprocess
import sys

import pytest
import torch
from torch import nn

import openneuron
from openneuron.check import exit_code, triggered

SCRIPTS = os.path.join(os.path.dirname(__file__), "check_scripts")
TOOL = os.path.join(os.path.dirname(sys.executable), "openneuron")


def run_check(tmp_path, script, *options):
    out = tmp_path / "report"
    completed = subprocess.run(
        [TOOL, "check", script, "--out", str(out), *options],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert "Traceback" not in completed.stderr, completed.stderr  # never the tool's own
    with open(out / "report.json") as f:
        report = json.load(f)
    assert (out / "report.html").exists()
    return completed, report, out


@pytest.fixture(scope="module")
def known_problems(tmp_path_factory):
    return run_check(
        tmp_path_factory.mktemp("known"),
        os.path.join(SCRIPTS, "known_problems.py"),
        "--fail-on",
        "numerics",
    )


def test_reports_host_fallback_ops_with_the_users_source_line(known_problems):
    _, report, _ = known_problems
    coverage = report["op_coverage"]
    assert coverage["native"]["ops"] > 5
    fallback = {entry["op"]: entry for entry in coverage["host_fallback"]["by_op"]}
    assert "known_problems.py:41" in fallback["aten::linalg_matrix_exp"]["lines"]
    assert fallback["aten::linalg_matrix_exp"]["calls"] >= 4


def test_finds_the_deliberately_wrong_layer(known_problems):
    completed, report, _ = known_problems
    numerics = report["numerics"]
    assert numerics["first_divergent"]["module"] == "Model.scale#0"
    errors = {m["module"]: m["output_error"] for m in numerics["modules"]}
    assert errors["Model.inp#0"] < 1e-5 and errors["Model.act#0"] < 1e-5
    assert errors["Model.scale#0"] == pytest.approx(0.05, rel=1e-3)
    assert len(numerics["losses"]["cpu"]) == len(numerics["losses"]["neuron"]) == 4
    assert completed.returncode == 1  # --fail-on numerics


def test_lints_cuda_float64_and_custom_function(known_problems):
    _, report, _ = known_problems
    found = {(f["rule"], f["line"]) for f in report["lint"]}
    assert {
        ("hard-coded-cuda", 9),
        ("torch-cuda-call", 9),
        ("custom-autograd-function", 12),
        ("float64", 56),
    } <= found
    assert ("float64", "known_problems.py:56") in found  # also seen at run time


def test_reports_performance_and_projection(known_problems):
    completed, report, out = known_problems
    performance = report["performance"]
    assert performance["cpu_step_s"] > 0 and performance["neuron_step_s"] > 0
    assert performance["projected_trn2_step_us"] > 0
    assert "roofline" in performance["projection_method"]
    assert performance["bottlenecks"][0]["bound"] in ("compute", "memory", "launch")
    assert "projected trn2" in completed.stdout
    with open(out / "trace.json") as f:
        assert any(e.get("cat") == "kernel" for e in json.load(f)["traceEvents"])


def test_script_that_raises_halfway(tmp_path):
    completed, report, _ = run_check(
        tmp_path, os.path.join(SCRIPTS, "raises_halfway.py"), "--fail-on", "crash"
    )
    for run in report["runs"].values():
        assert run["status"] == "failed" and run["steps"] == 3
        assert run["error"]["message"] == "data loader ran dry at step 3"
        assert run["error"]["where"]["line"] == 17
    assert not report["numerics"]["divergent"]  # the steps that ran still agree
    assert completed.returncode == 1
    assert "data loader ran dry" in completed.stdout


def test_graph_break_script_reports_compile(tmp_path):
    _, report, _ = run_check(tmp_path, os.path.join(SCRIPTS, "graph_break.py"))
    compile_info = report["compile"]
    if compile_info["available"]:
        assert compile_info["graph_breaks"] >= 1
    else:
        assert "not available" in compile_info["summary"]
        assert report["runs"]["neuron"]["error"]["where"]["line"] == 15


def test_timeout_and_broken_script_are_reported(tmp_path):
    completed, report, _ = run_check(
        tmp_path, os.path.join(SCRIPTS, "sleeps.py"), "--timeout", "3", "--fail-on", "timeout"
    )
    assert {run["status"] for run in report["runs"].values()} == {"timeout"}
    assert completed.returncode == 1
    broken = tmp_path / "broken.py"
    broken.write_text("import torch\ndef oops(:\n")
    completed, report, _ = run_check(tmp_path, str(broken))
    assert report["runs"]["neuron"]["error"]["type"] == "SyntaxError"
    assert report["runs"]["neuron"]["error"]["where"]["line"] == 2
    assert completed.returncode == 0  # no --fail-on: reported, not gated


def test_unknown_fail_on_category_is_a_usage_error(tmp_path):
    completed = subprocess.run(
        [TOOL, "check", "x.py", "--fail-on", "typo"], capture_output=True, text=True, timeout=60
    )
    assert completed.returncode == 2 and "typo" in completed.stderr


class WrongOnDevice(nn.Module):
    """An activation with a deliberate bug on the accelerator only."""

    def forward(self, x):
        return torch.relu(x) if x.device.type == "cpu" else torch.relu(x) + 0.01


def small_model(wrong=False):
    torch.manual_seed(0)
    return nn.Sequential(
        nn.Linear(8, 16), WrongOnDevice() if wrong else nn.ReLU(), nn.Linear(16, 2)
    )


def test_python_api_on_a_clean_model():
    report = openneuron.check(small_model(), torch.randn(4, 8), steps=3)
    assert report["runs"]["cpu"]["status"] == report["runs"]["neuron"]["status"] == "ok"
    assert report["numerics"]["first_divergent"] is None
    assert report["op_coverage"]["host_fallback"]["ops"] == 0
    assert len(report["numerics"]["losses"]["neuron"]) == 3
    assert exit_code(report, ["numerics", "fallback"]) == 0


def test_python_api_finds_a_wrong_layer_and_writes_reports(tmp_path):
    loss_fn = lambda out, x: out.pow(2).mean()  # noqa: E731
    report = openneuron.check(
        small_model(wrong=True),
        (torch.randn(4, 8),),
        loss_fn=loss_fn,
        steps=2,
        out_dir=str(tmp_path),
    )
    assert report["numerics"]["first_divergent"]["module"] == "Sequential.1#0"
    assert "numerics" in triggered(report)
    assert "<svg" in (tmp_path / "report.html").read_text()


def test_python_api_reports_a_crash_on_one_device():
    class FailsOnDevice(nn.Module):
        def forward(self, x):
            if x.device.type != "cpu":
                raise RuntimeError("no kernel for this on the device")
            return x.sum()

    report = openneuron.check(FailsOnDevice(), torch.randn(3, requires_grad=True), steps=1)
    assert report["runs"]["cpu"]["status"] == "ok"
    assert report["runs"]["neuron"]["status"] == "failed"
    assert "no kernel" in report["runs"]["neuron"]["error"]["message"]
