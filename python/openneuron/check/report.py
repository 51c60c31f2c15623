"""The check's report: one dictionary (also the JSON for CI) built from both runs, the lint,
the numerics comparison and the compile probe, plus the exit code for gating."""

import statistics
from typing import Any

from openneuron.check.compare import compare_runs

FAIL_CATEGORIES = ("fallback", "unsupported", "numerics", "lint", "crash", "timeout", "compile")


def _step_times(run: dict[str, Any]) -> list[float]:
    ends = [run.get("start", 0.0), *run.get("step_ends", [])]
    return [b - a for a, b in zip(ends, ends[1:], strict=False)]


def _median_step(run: dict[str, Any]) -> float | None:
    steps = _step_times(run)[1:]  # the first step includes warm-up
    return statistics.median(steps) if steps else None


def op_coverage(neuron: dict[str, Any]) -> dict[str, Any]:
    executed = neuron.get("executed_ops", {}) or {}
    fallback = neuron.get("fallback_ops", {}) or {}
    lines = neuron.get("fallback_lines", {}) or {}
    native = {op: n for op, n in executed.items() if op not in fallback}
    error = neuron.get("error") or {}
    unsupported = []
    if error.get("unsupported_op"):
        unsupported.append({"error": error.get("message", ""), "where": error.get("where")})
    return {
        "native": {"ops": len(native), "calls": sum(native.values())},
        "host_fallback": {
            "ops": len(fallback),
            "calls": sum(fallback.values()),
            "by_op": [
                {"op": op, "calls": n, "lines": sorted(set(lines.get(op, [])))}
                for op, n in sorted(fallback.items(), key=lambda i: -i[1])
            ],
        },
        "unsupported": unsupported,
    }


def performance(cpu: dict[str, Any], neuron: dict[str, Any]) -> dict[str, Any]:
    profile = neuron.get("profile") or {}
    return {
        "cpu_step_s": _median_step(cpu),
        "neuron_step_s": _median_step(neuron),
        "cpu_wall_s": cpu.get("wall_s"),
        "neuron_wall_s": neuron.get("wall_s"),
        "steps": len(neuron.get("losses", [])),
        "projected_trn2_step_us": profile.get("projected_trn2_us"),
        "projected_trn3_step_us": profile.get("projected_trn3_us"),
        "measured_device_step_us": profile.get("measured_device_us"),
        "projection_method": profile.get("method"),
        "bottlenecks": profile.get("top", []),
    }


def build_report(
    target: str,
    cpu: dict[str, Any],
    neuron: dict[str, Any],
    lint: list[dict[str, Any]],
    compile_info: dict[str, Any],
) -> dict[str, Any]:
    runs = {}
    for run in (cpu, neuron):
        runs[run.get("device", "?")] = {
            "status": run.get("status"),
            "error": run.get("error"),
            "wall_s": run.get("wall_s"),
            "notes": run.get("notes", []),
            "steps": len(run.get("losses", [])),
        }
    both_ran = cpu.get("status") in ("ok", "failed") and neuron.get("status") in ("ok", "failed")
    numerics = (
        compare_runs(cpu, neuron)
        if both_ran
        else {"divergent": False, "modules": [], "losses": {}, "first_divergent": None}
    )
    lint = list(lint)
    for where in neuron.get("float64_lines", []):
        lint.append(
            {
                "rule": "float64",
                "line": where,
                "code": "(at run time) a float64 tensor",
                "advice": "NeuronCores have no float64: it runs on the host fallback",
            }
        )
    return {
        "target": target,
        "runs": runs,
        "op_coverage": op_coverage(neuron),
        "numerics": numerics,
        "lint": lint,
        "compile": compile_info,
        "performance": performance(cpu, neuron),
    }


def triggered(report: dict[str, Any]) -> list[str]:
    """The failure categories this report shows."""
    found = []
    coverage = report["op_coverage"]
    if coverage["host_fallback"]["ops"]:
        found.append("fallback")
    if coverage["unsupported"]:
        found.append("unsupported")
    if report["numerics"].get("divergent"):
        found.append("numerics")
    if report["lint"]:
        found.append("lint")
    statuses = [run["status"] for run in report["runs"].values()]
    if "failed" in statuses or "crashed" in statuses:
        found.append("crash")
    if "timeout" in statuses:
        found.append("timeout")
    if report["compile"].get("graph_breaks"):
        found.append("compile")
    return found


def exit_code(report: dict[str, Any], fail_on: list[str]) -> int:
    """1 when any category in ``fail_on`` was found, else 0."""
    return 1 if set(triggered(report)) & set(fail_on) else 0
