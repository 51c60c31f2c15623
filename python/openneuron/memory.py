"""Device memory statistics and cache control, with the keys of ``torch.cuda.memory_stats``."""

from typing import Any

from openneuron import _C


def _index(device: Any) -> int:
    from openneuron.device import _index as device_index

    return device_index(device)


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
