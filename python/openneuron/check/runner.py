"""Runs a script on CPU and on neuron (each in its own process, with a timeout) and runs a model
in this process for the Python API; each run's outcome is a result dictionary, whatever
happened."""

import copy
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from typing import Any

import torch

from openneuron.check.recorder import Recorder

_STDERR_TAIL = 2000


def run_script(
    device: str, script: str, args: list[str], timeout_s: float, trace_path: str = ""
) -> dict[str, Any]:
    """One run of ``script`` on ``device`` in a child process. A timeout or a crash of the
    child itself (a signal, an interpreter failure) comes back as a result with that status."""
    with tempfile.TemporaryDirectory() as scratch:
        out = os.path.join(scratch, "result.pt")
        command = [sys.executable, "-m", "openneuron.check.child", "--device", device, "--out", out]
        if trace_path:
            command += ["--trace", trace_path]
        command += [script, *args]
        started = time.perf_counter()
        try:
            completed = subprocess.run(command, capture_output=True, text=True, timeout=timeout_s)
        except subprocess.TimeoutExpired as expired:
            return {
                "device": device,
                "status": "timeout",
                "wall_s": time.perf_counter() - started,
                "error": {
                    "type": "Timeout",
                    "message": f"no result after {timeout_s:g} s",
                    "where": None,
                    "unsupported_op": False,
                },
                "stdout": (expired.stdout or "")[-_STDERR_TAIL:]
                if isinstance(expired.stdout, str)
                else "",
            }
        if os.path.exists(out):
            result = torch.load(out, weights_only=False)
            result["stdout"] = completed.stdout[-_STDERR_TAIL:]
            return result
        return {
            "device": device,
            "status": "crashed",
            "wall_s": time.perf_counter() - started,
            "error": {
                "type": "ProcessCrash",
                "message": f"the run ended with code {completed.returncode}: "
                + completed.stderr.strip()[-_STDERR_TAIL:],
                "where": None,
                "unsupported_op": False,
            },
        }


def _to_device(value: Any, device: str) -> Any:
    if isinstance(value, torch.Tensor):
        return value.to(device)
    if isinstance(value, (list, tuple)):
        return type(value)(_to_device(v, device) for v in value)
    if isinstance(value, dict):
        return {k: _to_device(v, device) for k, v in value.items()}
    return value


def _first_tensor(value: Any) -> torch.Tensor | None:
    if isinstance(value, torch.Tensor):
        return value
    if isinstance(value, dict):
        value = list(value.values())
    if isinstance(value, (list, tuple)):
        for item in value:
            found = _first_tensor(item)
            if found is not None:
                return found
    return None


def run_model(
    device: str,
    model: torch.nn.Module,
    example_inputs: tuple,
    loss_fn: Callable | None,
    steps: int,
    user_files: set[str],
    lr: float = 1e-3,
) -> dict[str, Any]:
    """``steps`` training steps (forward, loss, backward, SGD) of a copy of ``model`` on
    ``device``; without ``loss_fn`` the loss is the mean of the first output."""
    from openneuron.check.child import error_record

    recorder = Recorder(device, user_files)
    status, error = "ok", None
    started = time.perf_counter()
    try:
        torch.manual_seed(0)
        replica = copy.deepcopy(model).to(device)
        inputs = _to_device(tuple(example_inputs), device)
        parameters = list(replica.parameters())
        optimizer = torch.optim.SGD(parameters, lr=lr) if parameters else None
        with recorder:
            for _ in range(steps):
                output = replica(*inputs)
                loss = loss_fn(output, *inputs) if loss_fn else _first_tensor(output).float().mean()
                if optimizer is not None:
                    optimizer.zero_grad()
                loss.backward()
                if optimizer is not None:
                    optimizer.step()
            if device != "cpu":
                torch.neuron.synchronize()
    except Exception as failure:
        status, error = "failed", error_record(failure, next(iter(user_files), ""))
    result = recorder.result
    result.update(status=status, error=error, wall_s=time.perf_counter() - started)
    if recorder.kept_profile is not None:
        from openneuron.check.child import profile_summary

        try:
            result["profile"] = profile_summary(recorder.kept_profile)
        except Exception as failure:
            result["notes"].append(f"profile summary failed: {failure}")
    return result
