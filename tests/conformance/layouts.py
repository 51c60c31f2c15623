"""The CPU layout rule: where PyTorch's CPU kernel gives different values for the same inputs
in different memory layouts, the CPU defines no single value there, and a neuron element that
equals (within tolerance) the CPU's value for one of those layouts passes.

Such elements exist: complex multiplication overflowing to infinity (the CPU's vectorized
and scalar loops round the cross terms differently, e.g. inf+0j vs inf+3.2e14j) and several
activation gradients (elu, celu, selu, hardtanh, relu6,
hardshrink, softshrink) treat a NaN input differently in the CPU's vectorized loop, which runs
over contiguous stretches, and its scalar loop, which runs over strided tensors and the tail
of a contiguous one (elu's gradient at NaN is NaN in one and the incoming gradient in the
other). Candidates are the CPU's results for the sample as given, made contiguous and made
non-contiguous; every element must match one of them, so a value no CPU layout produces
still fails.
"""

from __future__ import annotations

from typing import Any

import torch
from torch.testing._comparison import default_tolerances

RULE = "CPU layout-dependent"


def _flatten(value: Any) -> list[Any]:
    if isinstance(value, (list, tuple)) and not isinstance(value, torch.Size):
        return [leaf for v in value for leaf in _flatten(v)]
    return [value]


def _wide(t: torch.Tensor) -> torch.Tensor:
    return t.detach().cpu().to(torch.complex128 if t.is_complex() else torch.float64)


def _layout_values(a: torch.Tensor, candidates: list) -> list[torch.Tensor] | None:
    usable = [
        _wide(c) for c in candidates
        if isinstance(c, torch.Tensor) and c.dtype == a.dtype and c.shape == a.shape
    ]  # fmt: skip
    if len(usable) != len(candidates) or a.dtype == torch.bool:
        return None
    return usable


def tensor_matches_a_layout(a: torch.Tensor, candidates: list, rtol: float, atol: float) -> bool:
    """Every element of a (neuron) is close to the same element of some candidate (the CPU's
    result in one layout), NaN matching NaN."""
    cands = _layout_values(a, candidates)
    if cands is None:
        return False
    dtype_rtol, dtype_atol = default_tolerances(a.dtype)
    rt, at = max(rtol, dtype_rtol), max(atol, dtype_atol)
    a64 = _wide(a)
    ok = torch.zeros(a64.shape, dtype=torch.bool)
    for c in cands:
        ok |= torch.isclose(a64, c, rtol=rt, atol=at, equal_nan=True)
    return bool(ok.all())


def matches_a_cpu_layout(actual: Any, candidates: list, rtol: float, atol: float) -> bool:
    """True if each tensor of actual matches, elementwise, the CPU's results of some layout
    (candidates: one output structure per layout, the sample's own first), and the CPU's
    layouts disagree somewhere (else this is the plain comparison, which already failed)."""
    got = _flatten(actual)
    per_layout = [_flatten(c) for c in candidates]
    if len(per_layout) < 2 or any(len(outputs) != len(got) for outputs in per_layout):
        return False
    disagree = False
    for i, a in enumerate(got):
        column = [outputs[i] for outputs in per_layout]
        if not isinstance(a, torch.Tensor) or not tensor_matches_a_layout(a, column, rtol, atol):
            return False
        values = _layout_values(a, column)
        disagree |= not all(_same(values[0], v) for v in values[1:])
    return disagree


def _same(x: torch.Tensor, y: torch.Tensor) -> bool:
    """Equal, NaN matching NaN (componentwise for complex)."""
    if x.is_complex():
        x, y = torch.view_as_real(x), torch.view_as_real(y)
    return torch.equal(x.isnan(), y.isnan()) and torch.equal(x.nan_to_num(), y.nan_to_num())
