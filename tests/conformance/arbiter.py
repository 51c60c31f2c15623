"""The float64 arbiter: when a neuron value misses the CPU's beyond tolerance, is it at least
as close to the exact (float64) result as the CPU's value is, at every element?

    |neuron - exact| <= |cpu - exact| + atol + rtol * |exact|     (finite CPU elements)
    neuron == cpu                                                  (CPU element is +-inf)
    neuron finite                                                  (CPU element finite)

and NaN exactly where the CPU has NaN. The second line closes the hole where CPU's element is
infinite and float64's finite: there the first bound is infinite and would accept any value.
This never lets neuron be less accurate than the CPU anywhere; it only stops demanding that
neuron reproduce the CPU's own rounding error where that error exceeds the tolerance.
It does not apply to ops whose result depends on the dtype's limits (a float64 run has other
limits, so "closer to float64" says nothing there): DTYPE_LIMIT_OPS.
"""

from __future__ import annotations

from typing import Any

import torch
from torch.testing._comparison import default_tolerances

ARBITRATED_DTYPES = (torch.float32, torch.float16, torch.bfloat16)
RULE = "float64 arbiter"

# Ops whose values depend on the dtype's range or resolution (finfo), not only on the math.
DTYPE_LIMIT_OPS = {
    "nan_to_num": "replaces inf by the dtype's largest finite value",
    "nextafter": "the next value representable in the dtype",
    "frexp": "mantissa and exponent of the dtype's representation",
}


def _flatten(value: Any) -> list[Any]:
    if isinstance(value, (list, tuple)) and not isinstance(value, torch.Size):
        return [leaf for v in value for leaf in _flatten(v)]
    return [value]


def _same_plain_value(a: Any, e: Any) -> bool:
    if isinstance(a, float) and isinstance(e, float) and a != a and e != e:
        return True
    if isinstance(a, torch.Tensor):
        return False
    try:
        return bool(a == e)
    except Exception:
        return False


def tensor_closer(a: torch.Tensor, e: torch.Tensor, r: torch.Tensor, rtol, atol) -> bool:
    """The rule for one tensor: a (neuron), e (CPU), r (float64 reference)."""
    if not (e.dtype in ARBITRATED_DTYPES and a.dtype == e.dtype and a.shape == e.shape):
        return False
    if not isinstance(r, torch.Tensor) or r.shape != e.shape:
        return False
    dtype_rtol, dtype_atol = default_tolerances(e.dtype)
    rt, at = max(rtol, dtype_rtol), max(atol, dtype_atol)
    a64 = a.detach().cpu().to(torch.float64)
    e64 = e.detach().cpu().to(torch.float64)
    r64 = r.detach().cpu().to(torch.float64)
    if not torch.equal(a64.isnan(), e64.isnan()):
        return False
    infinite = e64.isinf()
    if not torch.equal(a64.isinf(), infinite) or not torch.equal(a64[infinite], e64[infinite]):
        return False  # infinities exactly where the CPU's are, of the same sign
    finite = e64.isfinite()
    bound = (e64 - r64).abs() + at + rt * r64.abs()
    return bool(((a64 - r64).abs() <= bound)[finite].all())


def closer_than_cpu(actual: Any, expected: Any, exact: Any, rtol: float, atol: float) -> bool:
    """True if every tensor of actual (neuron) is at least as close to exact (float64) as the
    matching tensor of expected (CPU), elementwise; plain values must be equal."""
    got, want, truth = _flatten(actual), _flatten(expected), _flatten(exact)
    if not len(got) == len(want) == len(truth):
        return False
    for a, e, r in zip(got, want, truth, strict=True):
        if not isinstance(e, torch.Tensor):
            if not _same_plain_value(a, e):
                return False
            continue
        if not isinstance(a, torch.Tensor) or not tensor_closer(a, e, r, rtol, atol):
            return False
    return True
