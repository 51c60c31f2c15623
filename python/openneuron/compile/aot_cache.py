"""AOTAutograd's persistent cache, set up for our backend.

PyTorch keys AOTAutograd's cache by the Dynamo graph, its inputs and its own configuration,
not by the backend that compiles it: our identity (compiler version, the sources of the
lowering, the backend's options) goes into ``torch.compiler.config.cache_key_tag``. Our
compiled graphs are stored inside the entry itself ("bundled"), since only Inductor's can be
found through the FX graph cache. A second process that traces the same model then skips
AOTAutograd's tracing and partitioning and our lowering and passes. Dynamo's own bytecode
tracing has no cross-process cache in PyTorch 2.13 outside its experimental precompile mode.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import logging
from pathlib import Path

import torch

from openneuron.compile import cache

# Where PyTorch notes, at INFO or with a traceback, an entry it could not load.
_TORCH_LOGGERS = ("torch._functorch._aot_autograd.autograd_cache", "torch._inductor.codecache")
# The sources whose change alters what a stored graph means.
_SOURCES = ("lower.py", "decompositions.py", "backend.py", "output_code.py")


@functools.cache
def _sources_digest() -> str:
    digest = hashlib.sha256()
    for name in _SOURCES:
        digest.update((Path(__file__).parent / name).read_bytes())
    return digest.hexdigest()[:16]


def backend_tag(options: dict) -> str:
    """What distinguishes our compiled graphs from Inductor's and from each other's options."""
    return (
        f"openneuron compiler {cache.COMPILER_VERSION} build {cache.build_identity()} "
        f"sources {_sources_digest()} "
        f"options {sorted(options.items())!r}"
    )


class _UnreadableEntries(logging.Filter):
    """Collects PyTorch's notes that a cache entry could not be loaded (reported instead as one
    line each) and passes on the other records the logger would have shown anyway."""

    def __init__(self, shown_level: int):
        super().__init__()
        self.shown_level = shown_level
        self.reasons: list[str] = []

    def filter(self, record: logging.LogRecord) -> bool:
        if "unable to load" in record.getMessage():
            cause = record.exc_info[1] if record.exc_info else None
            reason = f"{type(cause).__name__}: {cause}" if cause else record.getMessage()
            self.reasons.append(reason)
            return False
        return record.levelno >= self.shown_level


@contextlib.contextmanager
def for_backend(options: dict):
    """Within: AOTAutograd's cache stores and finds our compiled graphs under our tag. With
    ``options={"cache": False}`` or ``OPENNEURON_CACHE_DIR=""`` it is neither read nor written.
    An entry that cannot be loaded is reported once and the graph compiled again."""
    if not options.get("cache", True) or cache.cache_dir() is None:
        with torch._functorch.config.patch(enable_autograd_cache=False):
            yield
        return
    user_tag = torch.compiler.config.cache_key_tag
    loggers = [logging.getLogger(name) for name in _TORCH_LOGGERS]
    watchers = [_UnreadableEntries(logger.getEffectiveLevel()) for logger in loggers]
    previous_levels = [logger.level for logger in loggers]
    for logger, watcher in zip(loggers, watchers, strict=True):
        logger.addFilter(watcher)
        logger.setLevel(min(logging.INFO, logger.getEffectiveLevel()))
    try:
        with (
            # The entry is saved once the backward is compiled: do that now, within the patch,
            # not lazily at the first backward call.
            torch._functorch.config.patch(
                bundled_autograd_cache=True, force_non_lazy_backward_lowering=True
            ),
            torch.compiler.config.patch(cache_key_tag=f"{user_tag}|{backend_tag(options)}"),
        ):
            yield
    finally:
        reasons = []
        for logger, watcher, level in zip(loggers, watchers, previous_levels, strict=True):
            logger.removeFilter(watcher)
            logger.setLevel(level)
            reasons += watcher.reasons
        for reason in reasons:
            from openneuron.compile import metrics

            metrics.record(cache_errors=1)
            cache.warn_once(
                f"aot:{reason}",
                f"openneuron compile cache: an AOTAutograd cache entry is unusable ({reason}); "
                "compiling again",
            )
