"""torch.profiler on ``neuron``, and what each device op would take on trn2 and trn3.

``torch.profiler.profile(activities=[ProfilerActivity.CPU, ProfilerActivity.PrivateUse1])``
records every device op and copy (from the runtime's tracer, through the bridge's Kineto
activity profiler) linked to the host op that launched it. This module adds the projection:
``device_ops(prof)`` lists the device ops with their projected trn2/trn3 times,
``projection_table(prof)`` sums them per op with what bounds each, and
``export_chrome_trace(prof, path)`` writes the trace with the projections in each device event.
"""

import json
from collections import defaultdict
from typing import Any

from torch.autograd import DeviceType

from openneuron.profiler.roofline import METHOD, Projection, project

__all__ = ["METHOD", "device_ops", "export_chrome_trace", "projection_summary", "projection_table"]

_COPY_KINDS = ("HtoD", "DtoH", "DtoD")


def _copy_kind(name: str) -> str:
    if name.startswith("Memcpy "):
        kind = name.split()[1]
        return kind if kind in _COPY_KINDS else ""
    return ""


def _recorded_activities() -> dict[tuple[str, int], list[dict[str, Any]]]:
    """The bridge's record of the last profiling session (stream, bytes), by (name,
    correlation) in start order: torch keeps Kineto's per-event metadata only in the trace."""
    from openneuron import _C

    by_key: dict[tuple[str, int], list[dict[str, Any]]] = defaultdict(list)
    for activity in sorted(_C._last_device_activities(), key=lambda a: a["start_ns"]):
        by_key[(activity["name"], activity["correlation"])].append(activity)
    return by_key


class _HostOp:
    def __init__(self, name: str, input_shapes: Any, input_dtypes: Any) -> None:
        self.name, self.input_shapes, self.input_dtypes = name, input_shapes, input_dtypes


def _host_ops(prof: Any, events: Any) -> dict[int, Any]:
    """Host ops by correlation id, from the raw results: the event list drops an op nested in
    one of the same name (aten::sum inside aten::sum), which may be the one that launched."""
    results = getattr(getattr(prof, "profiler", None), "kineto_results", None)
    if results is None:
        return {e.id: e for e in events if e.device_type == DeviceType.CPU}
    return {
        e.correlation_id(): _HostOp(e.name(), e.shapes(), e.dtypes())
        for e in results.events()
        if e.device_type() == DeviceType.CPU
    }


def device_ops(prof: Any) -> list[dict[str, Any]]:
    """Every device op and copy of a finished profile, in start order: name, device, stream,
    start and end (us since the trace start), measured duration, the launching host op, bytes
    (copies), and the projected trn2/trn3 time with its bound ("compute", "memory", "launch")."""
    events = prof.events()
    host_ops = _host_ops(prof, events)
    recorded = _recorded_activities()
    result = []
    for event in sorted(events, key=lambda e: e.time_range.start):
        if event.device_type != DeviceType.PrivateUse1:
            continue
        queue = recorded.get((event.name, event.linked_correlation_id))
        meta = queue.pop(0) if queue else {}
        launcher = host_ops.get(event.linked_correlation_id)
        kind = _copy_kind(event.name)
        if kind:
            projection = project(event.name, copy_bytes=int(meta.get("bytes", 0)), copy_kind=kind)
        elif launcher is not None:
            projection = project(
                launcher.name,
                launcher.input_shapes or (),
                getattr(launcher, "input_dtypes", None) or (),
            )
        else:
            projection = project(event.name)
        result.append(
            {
                "name": event.name,
                "device": event.device_index,
                "stream": int(meta.get("stream", event.device_resource_id)),
                "start_us": event.time_range.start,
                "end_us": event.time_range.end,
                "duration_us": event.time_range.end - event.time_range.start,
                "launched_by": launcher.name if launcher is not None else None,
                "correlation": event.linked_correlation_id,
                "bytes": int(meta.get("bytes", 0)),
                "flops": projection.flops,
                "projected_trn2_us": projection.trn2_us,
                "projected_trn3_us": projection.trn3_us,
                "bound": projection.bound,
            }
        )
    result.sort(key=lambda op: op["start_us"])
    return result


def projection_summary(ops: list[dict[str, Any]], top: int = 10) -> list[dict[str, Any]]:
    """Device ops grouped by name, largest projected trn2 time first: count, measured and
    projected totals, and the bound most of its time falls under."""
    groups: dict[str, dict[str, Any]] = {}
    bound_time: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    for op in ops:
        group = groups.setdefault(
            op["name"],
            {
                "name": op["name"],
                "count": 0,
                "measured_us": 0.0,
                "projected_trn2_us": 0.0,
                "projected_trn3_us": 0.0,
            },
        )
        group["count"] += 1
        group["measured_us"] += op["duration_us"]
        group["projected_trn2_us"] += op["projected_trn2_us"]
        group["projected_trn3_us"] += op["projected_trn3_us"]
        bound_time[op["name"]][op["bound"]] += op["projected_trn2_us"]
    for name, group in groups.items():
        group["bound"] = max(bound_time[name].items(), key=lambda item: item[1])[0]
    ordered = sorted(groups.values(), key=lambda g: g["projected_trn2_us"], reverse=True)
    return ordered[:top]


def projection_table(prof: Any, top: int = 10) -> str:
    """A printable table of the top device ops by projected trn2 time."""
    ops = device_ops(prof)
    rows = projection_summary(ops, top)
    lines = [
        f"Projected device time ({METHOD})",
        f"{'op':<44} {'count':>6} {'measured us':>12} {'trn2 us':>10} {'trn3 us':>10}  bound",
    ]
    for row in rows:
        lines.append(
            f"{row['name'][:44]:<44} {row['count']:>6} {row['measured_us']:>12.1f} "
            f"{row['projected_trn2_us']:>10.1f} {row['projected_trn3_us']:>10.1f}  "
            f"{row['bound']}"
        )
    total2 = sum(op["projected_trn2_us"] for op in ops)
    total3 = sum(op["projected_trn3_us"] for op in ops)
    measured = sum(op["duration_us"] for op in ops)
    lines.append(f"{'total':<44} {len(ops):>6} {measured:>12.1f} {total2:>10.1f} {total3:>10.1f}")
    return "\n".join(lines)


def export_chrome_trace(prof: Any, path: str) -> None:
    """``prof.export_chrome_trace(path)``, with each device event's args carrying its projected
    trn2/trn3 time and bound (Perfetto and chrome://tracing show them when the event is picked)."""
    prof.export_chrome_trace(path)
    pending: dict[tuple[str, int], list[Projection]] = defaultdict(list)
    for op in device_ops(prof):
        pending[(op["name"], op["correlation"])].append(op)
    with open(path) as f:
        trace = json.load(f)
    for event in trace.get("traceEvents", []):
        args = event.get("args") or {}
        if event.get("cat") not in ("kernel", "gpu_memcpy") or "correlation" not in args:
            continue
        name = event.get("name", "")
        queue = pending.get((name, int(args.get("correlation", 0))))
        if not queue:
            continue
        op = queue.pop(0)
        args["projected trn2 us"] = round(op["projected_trn2_us"], 3)
        args["projected trn3 us"] = round(op["projected_trn3_us"], 3)
        args["projected bound"] = op["bound"]
        args["projection"] = METHOD
        event["args"] = args
    with open(path, "w") as f:
        json.dump(trace, f)
