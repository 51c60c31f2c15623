"""Counters behind ``openneuron.compile_metrics()``."""

from __future__ import annotations

import threading
from collections import Counter

_lock = threading.Lock()
_counts: Counter = Counter()
_compile_ms: list[float] = []
_lowering_fallbacks: Counter = Counter()
_repairs_at_reset = [0]


def record(**increments: int) -> None:
    with _lock:
        _counts.update(increments)


def record_compile_ms(ms: float) -> None:
    with _lock:
        _compile_ms.append(ms)


def record_lowering_fallback(reason: str) -> None:
    with _lock:
        _lowering_fallbacks[reason] += 1


def compile_metrics() -> dict:
    """What the ``neuron`` compiler has done in this process.

    ``graphs``: graphs compiled (forward, backward and inference graphs count separately);
    ``cache_hits_memory`` / ``cache_hits_disk`` / ``cache_errors``; ``cache_hits_aot``
    (compiled graphs found in AOTAutograd's persistent cache, so neither traced by AOTAutograd
    nor lowered again, and not counted in ``graphs``); ``compile_ms`` (total, ours:
    lowering, passes and program building; Dynamo and AOTAutograd tracing are not included);
    ``fused_kernels``, ``fused_ops`` (elementwise ops inside them), ``extern_calls`` (ATen
    calls in compiled programs), ``gemm_epilogues`` (matrix products and convolutions that run
    with their elementwise consumer fused, counted among ``fused_kernels``; ``bmm_epilogues`` and
    ``conv_epilogues`` count the bmm and convolution ones among them; ``widened_epilogues`` the
    bf16/fp16 ones whose body reads the fp32 product and rounds once; ``sibling_gemms`` the
    matrix products merged with a sibling that reads the same input), ``fused_reductions``
    (sum/mean/amax fused with their elementwise producers, also among ``fused_kernels``);
    ``lowering_fallbacks``:
    graphs run uncompiled, by reason;
    ``layout_repairs``: ATen results copied into the layout their meta kernel promised;
    ``graph_breaks``: Dynamo's graph breaks by reason; ``recompiles``: frames Dynamo compiled
    again (a guard failed, e.g. a new static shape).
    """
    from torch._dynamo.utils import counters

    with _lock:
        result = dict(_counts)
        result.setdefault("graphs", 0)
        result.setdefault("cache_hits_memory", 0)
        result.setdefault("cache_hits_disk", 0)
        result.setdefault("cache_errors", 0)
        result.setdefault("cache_hits_aot", 0)
        result.setdefault("gemm_epilogues", 0)
        result.setdefault("bmm_epilogues", 0)
        result.setdefault("conv_epilogues", 0)
        result.setdefault("widened_epilogues", 0)
        result.setdefault("sibling_gemms", 0)
        result.setdefault("fused_reductions", 0)
        result["compile_ms"] = sum(_compile_ms)
        result["lowering_fallbacks"] = dict(_lowering_fallbacks)
    result["graph_breaks"] = dict(counters.get("graph_break", {}))
    result.setdefault("recompiles", 0)
    from openneuron import _C

    result["layout_repairs"] = int(_C._compiler_layout_repairs()) - _repairs_at_reset[0]
    return result


def reset_compile_metrics() -> None:
    """Zeroes our counters and Dynamo's (``torch._dynamo.utils.counters``)."""
    from torch._dynamo.utils import counters

    with _lock:
        _counts.clear()
        _compile_ms.clear()
        _lowering_fallbacks.clear()
    counters.clear()
    from openneuron import _C

    _repairs_at_reset[0] = int(_C._compiler_layout_repairs())
