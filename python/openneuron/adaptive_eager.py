"""Adaptive eager: eager pointwise ops on a stream are held back and run fused.

While on, consecutive pointwise ops (arithmetic, activations, comparisons, their in-place and
``out=`` forms) on one stream are recorded into a segment instead of being queued one by one.
A segment ends when anything else reaches the stream (any other op, a copy or host read such as
``.item()``/``.cpu()``/printing, an event, ``synchronize``), when the next op has another shape
or touches memory the segment sees another way, or at 48 ops. It is then lowered to the graph
compiler's IR, optimised by the same pipeline as ``torch.compile``, cached by its signature and
queued as one fused kernel. Results are bitwise those of plain eager, for every op it records (the
fused kernel runs each op's own kernel loop tile by tile); allocation happens at the op call, as
in eager, so memory statistics are unchanged at every observation point. With
``torch.use_deterministic_algorithms(True)`` it stays on: it changes no op's arithmetic.
"""

from __future__ import annotations

from . import _C


class adaptive_eager:  # noqa: N801 - used like a function, as torch.no_grad is
    """``openneuron.adaptive_eager(True)`` turns adaptive eager on for the process; used as a
    context manager (``with openneuron.adaptive_eager():``) it restores the previous setting on
    exit. ``OPENNEURON_ADAPTIVE_EAGER=1`` turns it on at start."""

    def __init__(self, enabled: bool = True):
        self._previous = _C._adaptive_eager_enabled()
        _C._adaptive_eager_set_enabled(bool(enabled))

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        _C._adaptive_eager_set_enabled(self._previous)
        return False


def adaptive_eager_enabled() -> bool:
    return _C._adaptive_eager_enabled()


def adaptive_eager_metrics() -> dict:
    """Counts since the last reset: ops recorded, segments flushed, segments run fused and the
    ops in them, single-op segments, cache hits, compiles, fallbacks (segments the compiler
    declined, run op by op; ``last_fallback`` says why), results never stored because their
    tensor was freed first, and why segments ended."""
    metrics = _C._adaptive_eager_metrics()
    metrics["last_fallback"] = _C._adaptive_eager_last_fallback()
    return metrics


def reset_adaptive_eager_metrics() -> None:
    _C._adaptive_eager_reset_metrics()
