"""Device memory statistics and cache control, with the keys of ``torch.cuda.memory_stats``."""

from typing import Any

from openneuron import _C
from openneuron.device_selection import device_index as _index


def memory_stats(device: Any = None) -> dict[str, int]:
    """Caching-allocator statistics of ``device``, sorted by key."""
    return dict(sorted(_C._memory_stats(_index(device)).items()))


def memory_allocated(device: Any = None) -> int:
    """Bytes currently held by tensors on ``device``."""
    return _C._memory_stats(_index(device))["allocated_bytes.all.current"]


def max_memory_allocated(device: Any = None) -> int:
    return _C._memory_stats(_index(device))["allocated_bytes.all.peak"]


def memory_reserved(device: Any = None) -> int:
    """Bytes of device memory the caching allocator holds (in use or cached)."""
    return _C._memory_stats(_index(device))["reserved_bytes.all.current"]


def max_memory_reserved(device: Any = None) -> int:
    return _C._memory_stats(_index(device))["reserved_bytes.all.peak"]


def reset_peak_memory_stats(device: Any = None) -> None:
    _C._reset_peak_memory_stats(_index(device))


def reset_accumulated_memory_stats(device: Any = None) -> None:
    _C._reset_accumulated_memory_stats(_index(device))


def empty_cache() -> None:
    """Returns cached, unused device memory of every device to the capacity pool."""
    if _C._is_initialized():
        _C._empty_cache()


def mem_get_info(device: Any = None) -> tuple[int, int]:
    """(free, total) bytes of ``device``: capacity not reserved by the allocator, and capacity."""
    return tuple(_C._mem_get_info(_index(device)))


def _format_count(value: int) -> str:
    return str(value)


def _format_bytes(value: int) -> str:
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(value) < 1024 or unit == "TiB":
            return f"{value} {unit}" if unit == "B" else f"{value:.2f} {unit}"
        value /= 1024
    return str(value)


def memory_summary(device: Any = None, abbreviated: bool = False) -> str:
    """A printable table of the caching allocator's statistics, laid out as
    ``torch.cuda.memory_summary``: current, peak, total allocated and total freed, for all
    blocks and for the small and large pools (``abbreviated`` keeps the "all" rows)."""
    stats = memory_stats(device)
    rows = [
        ("Allocated memory", "allocated_bytes", _format_bytes),
        ("Active memory", "active_bytes", _format_bytes),
        ("Requested memory", "requested_bytes", _format_bytes),
        ("Device reserved memory", "reserved_bytes", _format_bytes),
        ("Allocations", "allocation", _format_count),
        ("Active allocs", "active", _format_count),
        ("Device reserved segments", "segment", _format_count),
    ]
    pools = (
        [("all", "")]
        if abbreviated
        else [("all", ""), ("large_pool", "  from large pool"), ("small_pool", "  from small pool")]
    )
    width = 75
    lines = ["=" * width]
    index = _index(device)
    title = f" neuron:{index} memory summary"
    lines.append(f"|{title:<{width - 2}}|")
    lines.append("|" + "-" * (width - 2) + "|")
    header = (
        f"{'Metric':<28}|{'Cur Usage':>11} |{'Peak Usage':>11} |{'Tot Alloc':>10} |{'Tot Freed':>9}"
    )
    lines.append(f"|{header:<{width - 2}}|")
    for label, key, fmt in rows:
        lines.append("|" + "-" * (width - 2) + "|")
        for pool, suffix in pools:
            name = label if pool == "all" else suffix
            values = [
                stats.get(f"{key}.{pool}.{field}", 0)
                for field in ("current", "peak", "allocated", "freed")
            ]
            cells = [fmt(v) for v in values]
            row = f"{name:<28}|{cells[0]:>11} |{cells[1]:>11} |{cells[2]:>10} |{cells[3]:>9}"
            lines.append(f"|{row:<{width - 2}}|")
    lines.append("|" + "-" * (width - 2) + "|")
    for key in ("num_alloc_retries", "num_ooms"):
        row = f"{key}: {stats.get(key, 0)}"
        lines.append(f"|{row:<{width - 2}}|")
    lines.append("=" * width)
    return "\n".join(lines) + "\n"


def _record_memory_history(
    enabled: Any = "all",
    context: Any = "all",
    stacks: str = "python",
    max_entries: int = 100000,
    device: Any = None,
) -> None:
    """Starts (or with ``enabled=None``/``False`` stops) recording every device allocation and
    free with the Python stack that made it, as ``torch.cuda.memory._record_memory_history``.
    ``context=None`` records no stacks. The history covers every neuron device."""
    on = enabled not in (None, False)
    with_stacks = context is not None and stacks != "none"
    _C._record_memory_history(on, with_stacks, int(max_entries))


def _snapshot(device: Any = None) -> dict[str, Any]:
    """The allocator's segments and blocks and the recorded history, in the dictionary format
    of ``torch.cuda.memory._snapshot`` (``segments``, ``device_traces``), so
    ``torch.cuda._memory_viz`` renders it."""
    return _C._memory_snapshot()


def _dump_snapshot(filename: str = "dump_snapshot.pickle") -> None:
    """Writes ``_snapshot()`` as a pickle that https://pytorch.org/memory_viz and
    ``python -m torch.cuda._memory_viz`` read."""
    import pickle

    with open(filename, "wb") as f:
        pickle.dump(_snapshot(), f)
