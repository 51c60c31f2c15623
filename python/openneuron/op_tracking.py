"""Which ops ran on the device natively and which through the host (CPU) fallback."""

import contextlib
from collections.abc import Iterator

from openneuron import _C


def get_fallback_ops() -> dict[str, int]:
    """Ops that ran on the host fallback since the last clear, with their run counts."""
    return dict(_C._get_fallback_ops())


def get_widened_ops() -> dict[str, dict[str, str]]:
    """Host-fallback runs whose CPU kernel lacked an input dtype and that ran at a wider one
    since the last clear: ``{op: {dtype: widened_to}}``, e.g.
    ``{"aten::histc": {"torch.int32": "torch.float64"}}``."""
    return {op: dict(dtypes) for op, dtypes in _C._get_widened_fallbacks().items()}


def get_executed_ops() -> dict[str, int]:
    """Every op that ran on a neuron device (native or fallback), with its run counts."""
    return dict(_C._get_executed_ops())


def clear_op_tracking() -> None:
    """Forgets the counts of executed and fallback ops."""
    _C._clear_op_tracking()


@contextlib.contextmanager
def strict(enabled: bool = True) -> Iterator[None]:
    """Within the block, an op without a native kernel raises instead of falling back
    (the same switch as ``OPENNEURON_STRICT=1``)."""
    previous = _C._is_strict()
    _C._set_strict(enabled)
    try:
        yield
    finally:
        _C._set_strict(previous)
