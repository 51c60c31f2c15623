"""Compiled-graph caches: in memory by IR signature, and on disk as data.

A disk entry is the optimised IR text (never code) behind a small header: format version,
versions of torch and of the compiler, and a SHA-256 of the payload. A truncated, corrupted
or stale entry is reported once and recompiled; a directory that cannot be written leaves the
cache memory-only, also reported once.
"""

from __future__ import annotations

import functools
import hashlib
import os
import tempfile
import warnings
from pathlib import Path

import torch

FORMAT = "openneuron-compiled-graph 1"
# Bump when the IR's meaning or the passes change, so older entries count as stale.
COMPILER_VERSION = "2"

_memory: dict[str, object] = {}
_warned: set[str] = set()


def warn_once(key: str, message: str) -> None:
    """Warns with `message` the first time `key` is seen (until clear_memory())."""
    if key not in _warned:
        _warned.add(key)
        warnings.warn(message, RuntimeWarning, stacklevel=3)


def cache_dir() -> Path | None:
    """``OPENNEURON_CACHE_DIR``, else ``~/.cache/openneuron/compile``; ``""`` disables it."""
    configured = os.environ.get("OPENNEURON_CACHE_DIR")
    if configured == "":
        return None
    if configured:
        return Path(configured)
    return Path.home() / ".cache" / "openneuron" / "compile"


@functools.cache
def build_identity() -> str:
    """A digest of the compiled extension: the passes that produced a stored program live in
    it, so a rebuilt or upgraded backend (COMPILER_VERSION unchanged or not) never reads a
    program another build optimised."""
    from openneuron import _C

    digest = hashlib.sha256()
    with open(_C.__file__, "rb") as library:
        for block in iter(lambda: library.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()[:16]


def signature(ir_text: str) -> str:
    """The cache key of a lowered graph (its IR and options) for this build of the backend."""
    return hashlib.sha256(f"{build_identity()}\n{ir_text}".encode()).hexdigest()


def memory_get(key: str):
    return _memory.get(key)


def memory_put(key: str, value) -> None:
    _memory[key] = value


def clear_memory() -> None:
    """Forgets the compiled graphs held in memory, and which bad entries were reported."""
    _memory.clear()
    _warned.clear()


def _header() -> str:
    return f"{FORMAT}\ntorch {torch.__version__}\ncompiler {COMPILER_VERSION}\n"


def disk_get(key: str) -> tuple[str | None, str | None]:
    """(optimised IR, None) on a hit; (None, reason) for a bad entry; (None, None) if absent."""
    directory = cache_dir()
    if directory is None:
        return None, None
    path = directory / f"{key}.ir"
    try:
        data = path.read_text()
    except FileNotFoundError:
        return None, None
    except (OSError, UnicodeDecodeError) as error:
        return None, f"unreadable ({error})"
    header = _header()
    if not data.startswith(FORMAT + "\n"):
        return None, "not a compiled-graph entry (corrupted or truncated)"
    if not data.startswith(header):
        return None, "stale (written by another torch or compiler version)"
    rest = data[len(header) :]
    digest_line, _, payload = rest.partition("\n")
    if (
        not digest_line.startswith("sha256 ")
        or digest_line[7:] != hashlib.sha256(payload.encode()).hexdigest()
    ):
        return None, "corrupted or truncated (checksum mismatch)"
    return payload, None


def report_bad_entry(key: str, reason: str) -> None:
    warn_once(
        f"bad:{key}:{reason}",
        f"openneuron compile cache: entry {key[:16]} is {reason}; recompiling",
    )


def disk_put(key: str, optimised_ir: str) -> None:
    directory = cache_dir()
    if directory is None:
        return
    data = _header() + "sha256 " + hashlib.sha256(optimised_ir.encode()).hexdigest() + "\n"
    data += optimised_ir
    try:
        directory.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile("w", dir=directory, delete=False, suffix=".tmp") as f:
            f.write(data)
            temporary = f.name
        os.replace(temporary, directory / f"{key}.ir")  # readers never see a partial entry
    except OSError as error:
        warn_once(
            f"unwritable:{directory}",
            f"openneuron compile cache: cannot write {directory} ({error}); "
            "caching compiled graphs in memory only",
        )
