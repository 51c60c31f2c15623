"""Runs one script on one device under the recorder (``python -m openneuron.check.child``), and
writes what it saw — also when the script fails — to a results file for the parent."""

import argparse
import os
import random
import runpy
import sys
import time
import traceback
from typing import Any

import torch

from openneuron.check.recorder import Recorder


def error_record(error: BaseException, script: str) -> dict[str, Any]:
    """The error's type and message and the innermost line of the user's script it passed."""
    where = None
    for frame in traceback.extract_tb(error.__traceback__):
        if os.path.abspath(frame.filename) == os.path.abspath(script):
            where = {
                "file": os.path.basename(frame.filename),
                "line": frame.lineno,
                "code": (frame.line or "").strip(),
            }
    message = str(error).strip().splitlines()
    unsupported = isinstance(error, NotImplementedError) or "not implemented for" in str(error)
    return {
        "type": type(error).__name__,
        "message": message[0][:500] if message else "",
        "where": where,
        "unsupported_op": unsupported,
    }


def profile_summary(prof: Any) -> dict[str, Any]:
    from openneuron.profiler import METHOD, device_ops, projection_summary

    ops = device_ops(prof)
    return {
        "method": METHOD,
        "device_ops": len(ops),
        "measured_device_us": sum(op["duration_us"] for op in ops),
        "projected_trn2_us": sum(op["projected_trn2_us"] for op in ops),
        "projected_trn3_us": sum(op["projected_trn3_us"] for op in ops),
        "top": projection_summary(ops, 10),
    }


def run(device: str, script: str, args: list[str], trace_path: str = "") -> dict[str, Any]:
    sys.argv = [script, *args]
    sys.path.insert(0, os.path.dirname(os.path.abspath(script)))
    torch.manual_seed(0)
    random.seed(0)
    recorder = Recorder(device, {script}, redirect=True)
    status, error = "ok", None
    started = time.perf_counter()
    try:
        with recorder:
            runpy.run_path(script, run_name="__main__")
            if device != "cpu":
                torch.neuron.synchronize()
    except SystemExit as exit_:
        if exit_.code not in (None, 0):
            status, error = (
                "failed",
                {
                    "type": "SystemExit",
                    "message": f"exit code {exit_.code}",
                    "where": None,
                    "unsupported_op": False,
                },
            )
    except BaseException as failure:  # the script's own error is a finding, not ours
        status, error = "failed", error_record(failure, script)
    result = recorder.result
    result.update(status=status, error=error, wall_s=time.perf_counter() - started)
    if "torch._dynamo" in sys.modules:  # the script compiled something: what did dynamo do
        from torch._dynamo.utils import counters

        result["compile"] = {
            "graphs": counters["stats"].get("unique_graphs", 0),
            "graph_breaks": sum(counters["graph_break"].values()),
            "break_reasons": list(counters["graph_break"])[:20],
            "recompiles": sum(counters["recompiles"].values()) if "recompiles" in counters else 0,
        }
    if recorder.kept_profile is not None:
        try:
            result["profile"] = profile_summary(recorder.kept_profile)
            if trace_path:
                from openneuron.profiler import export_chrome_trace

                export_chrome_trace(recorder.kept_profile, trace_path)
        except Exception as failure:
            result["notes"].append(f"profile summary failed: {failure}")
    return result


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--device", required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--trace", default="")
    parser.add_argument("script")
    parser.add_argument("args", nargs=argparse.REMAINDER)
    options = parser.parse_args()
    result = run(options.device, options.script, options.args, options.trace)
    torch.save(result, options.out)
    sys.stdout.flush()
    os._exit(0)  # the script's threads or atexit handlers must not hang the parent


if __name__ == "__main__":
    main()
