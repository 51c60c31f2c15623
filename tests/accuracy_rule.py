"""The accuracy rule compiled code is held to (design decision 15): the rule PyTorch applies to
Inductor. A compiled result passes when it is close to eager's; otherwise it must be no farther
from a float64 run of the same graph than a small multiple of eager's own distance from it.
Bit equality with eager is not asked for: a fused kernel may round differently.
"""

from __future__ import annotations

import torch

# Closeness to eager that passes outright, by the result's dtype.
TOLERANCE = {torch.float32: 1e-4, torch.bfloat16: 1e-2, torch.float16: 1e-3}


def rms_error(value: torch.Tensor, reference: torch.Tensor) -> float:
    return (value.double() - reference.double()).pow(2).mean().sqrt().item()


def accuracy_problem(
    eager: torch.Tensor, compiled: torch.Tensor, float64: torch.Tensor, tol: float | None = None
) -> str | None:
    """None when `compiled` meets the rule against `eager` and the float64 run; else why not.

    Elements where eager is not finite must be the same in compiled (inf for inf, NaN for NaN);
    elements where the float64 run overflowed are left out of the error measure.
    """
    eager, compiled, float64 = (t.detach().cpu() for t in (eager, compiled, float64))
    if eager.shape != compiled.shape or eager.dtype != compiled.dtype:
        got, want = (f"{tuple(t.shape)} {t.dtype}" for t in (compiled, eager))
        return f"compiled result is {got}, eager's {want}"
    if not eager.is_floating_point():
        return None if torch.equal(eager, compiled) else "integer result differs"
    tol = TOLERANCE.get(eager.dtype, 1e-4) if tol is None else tol
    finite = eager.isfinite()
    if not torch.equal(eager[~finite].nan_to_num(0.0), compiled[~finite].nan_to_num(0.0)) or not (
        torch.equal(eager[~finite].isnan(), compiled[~finite].isnan())
    ):
        return "non-finite elements differ from eager's"
    measured = finite & float64.isfinite() & compiled.isfinite()
    if not torch.equal(measured, finite & float64.isfinite()):
        return "compiled is not finite where eager and float64 are"
    e, c, f = eager[measured], compiled[measured], float64[measured]
    if torch.allclose(e.double(), c.double(), rtol=tol, atol=tol):
        return None
    eager_error, compiled_error = rms_error(e, f), rms_error(c, f)
    # PyTorch's multiplier: 3 for small tensors (their RMS is noisy), 2 otherwise.
    multiplier = 3.0 if f.numel() < 1000 else 2.0
    if compiled_error <= multiplier * eager_error + tol / 10:
        return None
    return (
        f"RMS error against float64 {compiled_error:.3g}, eager's {eager_error:.3g} "
        f"(allowed {multiplier} x eager's + {tol / 10:.1g}); max |compiled - eager| "
        f"{(c.double() - e.double()).abs().max().item():.3g}"
    )


def assert_accurate(eager, compiled, float64, tol: float | None = None) -> None:
    """accuracy_problem over lists of results, asserting each passes."""
    assert len(eager) == len(compiled) == len(float64)
    for k, (e, c, f) in enumerate(zip(eager, compiled, float64)):
        problem = accuracy_problem(e, c, f, tol)
        assert problem is None, f"result {k}: {problem}"
