"""Compile behaviour: whether torch.compile(backend="neuron") exists and, when it does, what
it did (graphs, graph breaks, recompiles, compile time)."""

from collections.abc import Callable
from typing import Any


def compile_available() -> bool:
    try:
        import torch._dynamo

        return "neuron" in torch._dynamo.list_backends(exclude_tags=())
    except Exception:
        return False


def probe_model(model: Callable, example_inputs: tuple) -> dict[str, Any]:
    """Compiles ``model`` with the neuron backend and explains it; a report that compile is
    not available when the backend is missing."""
    if not compile_available():
        return {
            "available": False,
            "summary": 'torch.compile(backend="neuron") is not '
            "available in this build: compile behaviour not checked",
        }
    import time

    import torch._dynamo

    info: dict[str, Any] = {"available": True}
    try:
        explanation = torch._dynamo.explain(model)(*example_inputs)
        info.update(
            graphs=explanation.graph_count,
            graph_breaks=explanation.graph_break_count,
            break_reasons=[str(r.reason) for r in explanation.break_reasons][:20],
        )
        torch._dynamo.reset()
        compiled = torch.compile(model, backend="neuron")
        started = time.perf_counter()
        compiled(*example_inputs)
        info["first_call_s"] = time.perf_counter() - started
    except Exception as error:
        info["error"] = f"{type(error).__name__}: {str(error)[:300]}"
    info.update(_metrics())
    info["summary"] = describe(info)
    return info


def _metrics() -> dict[str, Any]:
    import openneuron

    metrics: Callable | None = getattr(openneuron, "compile_metrics", None)
    if metrics is None:
        return {}
    try:
        value = metrics()
        return {"metrics": dict(value) if not isinstance(value, dict) else value}
    except Exception as error:
        return {"metrics_error": str(error)}


def describe(info: dict[str, Any]) -> str:
    if not info.get("available"):
        return info.get("summary", "compile not available")
    if "error" in info:
        return f'torch.compile(backend="neuron") failed: {info["error"]}'
    return (
        f"{info.get('graphs', '?')} graph(s), {info.get('graph_breaks', '?')} graph break(s), "
        f"first compiled call {info.get('first_call_s', 0):.2f} s"
    )


def script_compile_info(neuron_run: dict[str, Any]) -> dict[str, Any]:
    """Compile behaviour of a script: what its own torch.compile calls did in the neuron run."""
    if not compile_available():
        return {
            "available": False,
            "summary": 'torch.compile(backend="neuron") is not '
            "available in this build: compile behaviour not checked",
        }
    info = dict(neuron_run.get("compile", {}), available=True)
    info["summary"] = (
        f"{info.get('graphs', 0)} graph(s), {info.get('graph_breaks', 0)} graph "
        f"break(s), {info.get('recompiles', 0)} recompile(s) in the script's own "
        "torch.compile calls"
    )
    return info
