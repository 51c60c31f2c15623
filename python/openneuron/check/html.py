"""The self-contained HTML report: summary, op coverage, numerics (loss curves, per-module
error), lint, compile and time breakdown, with inline SVG charts and no external resources."""

from html import escape
from typing import Any

from openneuron.check.report import triggered
from openneuron.check.svg import bar_chart, line_chart

_STYLE = """body{font-family:sans-serif;margin:24px;max-width:1000px;color:#222}
table{border-collapse:collapse;margin:8px 0}td,th{border:1px solid #ccc;padding:3px 8px;
font-size:13px;text-align:left}.bad{color:#b00}.ok{color:#070}code{font-size:12px}"""


def _table(headers: list[str], rows: list[list[Any]]) -> str:
    if not rows:
        return "<p>none</p>"
    head = "".join(f"<th>{escape(h)}</th>" for h in headers)
    body = "".join(
        "<tr>" + "".join(f"<td>{escape(str(c))}</td>" for c in row) + "</tr>" for row in rows
    )
    return f"<table><tr>{head}</tr>{body}</table>"


def _fmt(value: Any, unit: str = "", scale: float = 1.0) -> str:
    return "n/a" if value is None else f"{value * scale:.3g}{unit}"


def render_html(report: dict[str, Any]) -> str:
    found = triggered(report)
    parts = [
        f"<!doctype html><html><head><meta charset='utf-8'><title>openneuron check: "
        f"{escape(report['target'])}</title><style>{_STYLE}</style></head><body>",
        f"<h1>openneuron check: {escape(report['target'])}</h1>",
        "<p>Findings: "
        + (
            ", ".join(f"<b class='bad'>{escape(f)}</b>" for f in found)
            if found
            else "<b class='ok'>none</b>"
        )
        + "</p>",
    ]
    parts.append("<h2>Runs</h2>")
    parts.append(
        _table(
            ["device", "status", "steps", "wall s", "error"],
            [
                [
                    device,
                    run["status"],
                    run["steps"],
                    _fmt(run["wall_s"]),
                    (
                        f"{run['error']['type']}: {run['error']['message']}"
                        + (
                            f" (at {run['error']['where']['file']}:{run['error']['where']['line']})"
                            if run["error"].get("where")
                            else ""
                        )
                    )
                    if run.get("error")
                    else "",
                ]
                for device, run in report["runs"].items()
            ],
        )
    )

    coverage = report["op_coverage"]
    parts.append("<h2>1. Op coverage</h2>")
    parts.append(
        _table(
            ["native ops", "native calls", "host-fallback ops", "fallback calls", "unsupported"],
            [
                [
                    coverage["native"]["ops"],
                    coverage["native"]["calls"],
                    coverage["host_fallback"]["ops"],
                    coverage["host_fallback"]["calls"],
                    len(coverage["unsupported"]),
                ]
            ],
        )
    )
    parts.append(
        _table(
            ["host-fallback op", "calls", "source lines"],
            [
                [o["op"], o["calls"], ", ".join(o["lines"])]
                for o in coverage["host_fallback"]["by_op"]
            ],
        )
    )

    numerics = report["numerics"]
    parts.append("<h2>2. Numerics</h2>")
    first = numerics.get("first_divergent")
    parts.append(
        f"<p>First divergent module: <b class='{'bad' if first else 'ok'}'>"
        f"{escape(first['module']) if first else 'none'}</b></p>"
    )
    losses = numerics.get("losses") or {}
    parts.append(
        line_chart(
            {"cpu": losses.get("cpu", []), "neuron": losses.get("neuron", [])}, "Loss per step"
        )
    )
    modules = numerics.get("modules", [])[:60]
    threshold = max((m["tolerance"] for m in modules), default=0.0)
    parts.append(
        bar_chart(
            [(m["module"], m["output_error"]) for m in modules],
            "Per-module relative output error (log scale, dashed: tolerance)",
            log_scale=True,
            threshold=threshold,
        )
    )
    parts.append(
        _table(
            ["module", "output error", "gradient error", "divergent"],
            [
                [
                    m["module"],
                    f"{m['output_error']:.3g}",
                    "" if m["grad_error"] is None else f"{m['grad_error']:.3g}",
                    "yes" if m["divergent"] else "",
                ]
                for m in modules
            ],
        )
    )

    parts.append("<h2>3. Portability lint</h2>")
    parts.append(
        _table(
            ["rule", "line", "code", "advice"],
            [[f["rule"], f["line"], f["code"], f["advice"]] for f in report["lint"]],
        )
    )

    compile_info = report["compile"]
    parts.append("<h2>4. Compile</h2>")
    parts.append(f"<p>{escape(compile_info.get('summary', ''))}</p>")

    perf = report["performance"]
    parts.append("<h2>5. Performance</h2>")
    parts.append(
        _table(
            [
                "cpu step",
                "neuron step (simulated device)",
                "projected trn2 step",
                "projected trn3 step",
            ],
            [
                [
                    _fmt(perf["cpu_step_s"], " ms", 1e3),
                    _fmt(perf["neuron_step_s"], " ms", 1e3),
                    _fmt(perf["projected_trn2_step_us"], " ms", 1e-3),
                    _fmt(perf["projected_trn3_step_us"], " ms", 1e-3),
                ]
            ],
        )
    )
    if perf.get("projection_method"):
        parts.append(f"<p><small>Projection: {escape(perf['projection_method'])}</small></p>")
    bottlenecks = perf.get("bottlenecks", [])
    parts.append(
        bar_chart(
            [(b["name"], b["projected_trn2_us"]) for b in bottlenecks],
            "Projected trn2 time per op (us, one step)",
        )
    )
    parts.append(
        _table(
            ["op", "count", "measured us", "trn2 us", "trn3 us", "bound"],
            [
                [
                    b["name"],
                    b["count"],
                    f"{b['measured_us']:.1f}",
                    f"{b['projected_trn2_us']:.1f}",
                    f"{b['projected_trn3_us']:.1f}",
                    b["bound"],
                ]
                for b in bottlenecks
            ],
        )
    )
    parts.append("</body></html>")
    return "\n".join(parts)
