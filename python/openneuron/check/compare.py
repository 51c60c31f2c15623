"""Numerics: the neuron run's module outputs, gradients and losses against the CPU run's."""

from typing import Any

import torch

# Relative error (max |neuron - cpu| / max |cpu|) above which a module counts as divergent. fp32
# kernels that differ only in summation order measure 1e-7..1e-5 here; 16-bit outputs are
# rounded to 8 or 11 mantissa bits (bf16 ~4e-3 per rounding, compounding over layers).
TOLERANCE = {torch.float32: 1e-3, torch.bfloat16: 6e-2, torch.float16: 1e-2}


def relative_error(value: torch.Tensor, reference: torch.Tensor) -> float:
    if value.shape != reference.shape:
        return float("inf")
    scale = reference.abs().max().item() if reference.numel() else 0.0
    difference = (value - reference).abs().max().item() if reference.numel() else 0.0
    if difference != difference:  # NaN on one side
        return float("inf")
    return difference / max(scale, 1e-12)


def compare_runs(
    cpu: dict[str, Any], neuron: dict[str, Any], tolerance: float | None = None
) -> dict[str, Any]:
    """Per-module output and gradient errors in the order the modules ran, the first module
    whose output diverges, and the losses of both runs step by step."""
    reference = {m["key"]: m for m in cpu.get("modules", [])}
    modules, first = [], None
    inherited = 0.0  # once a 16-bit output has appeared, later outputs carry its rounding
    for record in neuron.get("modules", []):
        ref = reference.get(record["key"])
        if ref is None:
            continue
        error = relative_error(record["sample"], ref["sample"])
        own = TOLERANCE.get(record.get("dtype", torch.float32), 1e-3)
        inherited = max(inherited, own)
        limit = tolerance if tolerance is not None else inherited
        grad = neuron.get("grads", {}).get(record["name"])
        grad_ref = cpu.get("grads", {}).get(record["name"])
        grad_error = (
            relative_error(grad, grad_ref) if grad is not None and grad_ref is not None else None
        )
        # Gradients compound error from every later layer, hence the wider margin.
        entry = {
            "module": record["key"],
            "type": record.get("type", ""),
            "output_error": error,
            "grad_error": grad_error,
            "tolerance": limit,
            "divergent": error > limit,
            "grad_divergent": grad_error is not None and grad_error > 10 * limit,
        }
        modules.append(entry)
        if entry["divergent"] and first is None:
            first = entry
    if first is None:  # outputs agree: the culprit is where backward (last module first) diverges
        first = next((m for m in reversed(modules) if m["grad_divergent"]), None)
    cpu_losses, neuron_losses = cpu.get("losses", []), neuron.get("losses", [])
    steps = min(len(cpu_losses), len(neuron_losses))
    loss_errors = [
        abs(neuron_losses[i] - cpu_losses[i]) / max(abs(cpu_losses[i]), 1e-12) for i in range(steps)
    ]
    return {
        "modules": modules,
        "first_divergent": first,
        "max_output_error": max((m["output_error"] for m in modules), default=0.0),
        "losses": {"cpu": cpu_losses, "neuron": neuron_losses, "relative_error": loss_errors},
        "divergent": first is not None,
        "compared_modules": len(modules),
    }
