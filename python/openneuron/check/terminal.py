"""The terminal summary of a check report (rich, when the terminal is not captured, plain
text otherwise)."""

from typing import Any

from openneuron.check.report import triggered


def summary_lines(report: dict[str, Any]) -> list[str]:
    lines = [f"openneuron check: {report['target']}"]
    for device, run in report["runs"].items():
        error = run.get("error")
        text = f"  {device:<7} {run['status']:<8} {run['steps']} step(s)"
        if run.get("wall_s") is not None:
            text += f", {run['wall_s']:.2f} s"
        if error:
            where = error.get("where")
            text += f"  {error['type']}: {error['message'][:160]}"
            if where:
                text += f" (at {where['file']}:{where['line']})"
        lines.append(text)
    coverage = report["op_coverage"]
    lines.append(
        f"1. ops: {coverage['native']['ops']} native, "
        f"{coverage['host_fallback']['ops']} on the host fallback, "
        f"{len(coverage['unsupported'])} unsupported"
    )
    for entry in coverage["host_fallback"]["by_op"][:10]:
        lines.append(f"     fallback {entry['op']} x{entry['calls']}  {', '.join(entry['lines'])}")
    numerics = report["numerics"]
    first = numerics.get("first_divergent")
    lines.append(
        f"2. numerics: {numerics.get('compared_modules', 0)} module outputs compared, "
        + (
            f"first divergent: {first['module']} (error {first['output_error']:.3g})"
            if first
            else "none divergent"
        )
    )
    losses = numerics.get("losses") or {}
    for i, (a, b) in enumerate(zip(losses.get("cpu", []), losses.get("neuron", []), strict=False)):
        if i >= 5:
            break
        lines.append(f"     step {i}: loss cpu {a:.6g}  neuron {b:.6g}")
    lines.append(f"3. lint: {len(report['lint'])} finding(s)")
    for finding in report["lint"][:12]:
        lines.append(f"     line {finding['line']}: {finding['rule']}: {finding['code'][:70]}")
    lines.append(f"4. compile: {report['compile'].get('summary', '')}")
    perf = report["performance"]

    def ms(value: Any, scale: float = 1e3) -> str:
        return "n/a" if value is None else f"{value * scale:.3g} ms"

    lines.append(
        f"5. step time: cpu {ms(perf['cpu_step_s'])}, neuron (simulated) "
        f"{ms(perf['neuron_step_s'])}, projected trn2 "
        f"{ms(perf['projected_trn2_step_us'], 1e-3)}, trn3 "
        f"{ms(perf['projected_trn3_step_us'], 1e-3)}"
    )
    for row in perf.get("bottlenecks", [])[:5]:
        lines.append(
            f"     {row['name'][:40]:<40} trn2 {row['projected_trn2_us']:9.1f} us  {row['bound']}"
        )
    found = triggered(report)
    lines.append("findings: " + (", ".join(found) if found else "none"))
    return lines


def print_summary(report: dict[str, Any]) -> None:
    print("\n".join(summary_lines(report)), flush=True)
