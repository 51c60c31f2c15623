"""``openneuron check``: is a workload ready to move to a NeuronCore?

It runs the workload on CPU and on ``neuron`` and reports op coverage (native, host fallback,
unsupported, with the user's source lines), numerics (per-module output and gradient error, the
first divergent module, both loss curves), a portability lint, compile behaviour, and step times
measured here and projected for trn2/trn3. ``check(model, example_inputs)`` is the Python API;
``openneuron check SCRIPT [args]`` (or ``python -m openneuron.check``) checks a script.
"""

import inspect
import json
import os
from collections.abc import Callable
from typing import Any

from openneuron.check.compile_probe import probe_model, script_compile_info
from openneuron.check.html import render_html
from openneuron.check.lint import lint_file
from openneuron.check.report import FAIL_CATEGORIES, build_report, exit_code, triggered
from openneuron.check.runner import run_model, run_script

__all__ = ["FAIL_CATEGORIES", "check", "check_script", "exit_code", "triggered", "write_outputs"]


def write_outputs(report: dict[str, Any], out_dir: str) -> dict[str, str]:
    """Writes report.json and report.html into ``out_dir``; returns their paths."""
    os.makedirs(out_dir, exist_ok=True)
    paths = {
        "json": os.path.join(out_dir, "report.json"),
        "html": os.path.join(out_dir, "report.html"),
    }
    with open(paths["json"], "w") as f:
        json.dump(report, f, indent=1, default=str)
    with open(paths["html"], "w") as f:
        f.write(render_html(report))
    return paths


def _source_file(model: Any) -> str | None:
    try:
        return inspect.getsourcefile(type(model))
    except (TypeError, OSError):
        return None


def check(
    model: Any,
    example_inputs: Any,
    loss_fn: Callable | None = None,
    steps: int = 3,
    out_dir: str | None = None,
) -> dict[str, Any]:
    """Checks ``model`` on ``example_inputs`` (a tensor or a tuple): ``steps`` training steps
    (SGD) on CPU and on neuron with ``loss_fn(output, *inputs)`` or, without it, the mean of the
    first output. Returns the report dictionary (see report.build_report); with ``out_dir``
    also writes report.json and report.html there."""
    import torch

    inputs = example_inputs if isinstance(example_inputs, tuple) else (example_inputs,)
    source = _source_file(model)
    user_files = {source} if source else set()
    cpu = run_model("cpu", model, inputs, loss_fn, steps, user_files)
    neuron = run_model("neuron", model, inputs, loss_fn, steps, user_files)
    lint = [f.to_dict() for f in lint_file(source)] if source and source.endswith(".py") else []
    try:
        replica = __import__("copy").deepcopy(model).to("neuron")
        compile_info = probe_model(
            replica, tuple(t.to("neuron") if isinstance(t, torch.Tensor) else t for t in inputs)
        )
    except Exception as error:
        compile_info = {"available": False, "summary": f"compile probe failed: {error}"}
    report = build_report(type(model).__name__, cpu, neuron, lint, compile_info)
    if out_dir:
        write_outputs(report, out_dir)
    return report


def _unrunnable(script: str) -> Callable[[str], dict[str, Any]] | None:
    """For a script that cannot start (missing, or not valid Python), the result of either run,
    without starting one."""
    try:
        with open(script, encoding="utf-8", errors="replace") as f:
            compile(f.read(), script, "exec")
        return None
    except OSError as error:
        failure = {"type": type(error).__name__, "message": str(error), "where": None}
    except SyntaxError as error:
        failure = {
            "type": "SyntaxError",
            "message": error.msg,
            "where": {
                "file": os.path.basename(script),
                "line": error.lineno,
                "code": (error.text or "").strip(),
            },
        }
    failure["unsupported_op"] = False
    return lambda device: {
        "device": device,
        "status": "failed",
        "error": dict(failure),
        "wall_s": 0.0,
        "notes": [],
    }


def check_script(
    script: str,
    args: list[str],
    timeout_s: float = 600.0,
    out_dir: str | None = None,
    progress: Callable | None = None,
) -> dict[str, Any]:
    """Checks a script: runs it once on CPU and once on neuron (each in a child process with
    ``timeout_s``), lints its source and builds the report; ``progress(stage)`` is called as
    each stage starts. A broken script, a crash or a timeout on either device is part of the
    report; the report is always built."""
    script = os.path.abspath(script)
    stage = progress or (lambda name: None)
    stage("lint")
    lint = [f.to_dict() for f in lint_file(script)] if os.path.exists(script) else []
    trace = os.path.join(out_dir, "trace.json") if out_dir else ""
    if out_dir:
        os.makedirs(out_dir, exist_ok=True)
    broken = _unrunnable(script)
    stage("cpu")
    cpu = broken("cpu") if broken else run_script("cpu", script, args, timeout_s)
    stage("neuron")
    neuron = (
        broken("neuron")
        if broken
        else run_script("neuron", script, args, timeout_s, trace_path=trace)
    )
    stage("report")
    report = build_report(os.path.basename(script), cpu, neuron, lint, script_compile_info(neuron))
    if trace and os.path.exists(trace):
        report["trace"] = trace
    if out_dir:
        write_outputs(report, out_dir)
    return report


class _CallableModule(type(os)):
    """Lets ``openneuron.check(model, example_inputs)`` call check() on the package itself."""

    def __call__(self, *args: Any, **kwargs: Any) -> dict[str, Any]:
        return check(*args, **kwargs)


__import__("sys").modules[__name__].__class__ = _CallableModule
