"""The trace a kernel builds while it runs: buffers, instructions in issue order, source lines.

A kernel is plain Python: loops unroll and every ``nisa``/``nl`` call appends instructions to
the current trace, each tagged with the kernel's source line.
"""

import os
import sys
import threading

from openneuron.nki.errors import KernelTraceError

HBM, SBUF, PSUM = 0, 1, 2  # the simulator's Memory codes
MEMORY_NAMES = {HBM: "hbm", SBUF: "sbuf", PSUM: "psum"}

# Engines (the simulator's Engine codes).
TENSOR, VECTOR, SCALAR, GPSIMD, DMA = 0, 1, 2, 3, 4

# Opcodes (the simulator's Opcode codes).
(
    MATMUL,
    TRANSPOSE,
    TENSOR_TENSOR,
    TENSOR_SCALAR,
    TENSOR_REDUCE,
    TENSOR_COPY,
    MEMSET,
    SELECT,
    TENSOR_TENSOR_SCAN,
    BN_STATS,
    BN_AGGR,
    ACTIVATION,
    IOTA,
    AFFINE_SELECT,
    PARTITION_REDUCE,
    DMA_COPY,
    MAX8,
    FIND_INDEX8,
    STREAM_SHUFFLE,
    NONZERO_WITH_COUNT,
    MATCH_REPLACE8,
    RANGE_SELECT,
    CORE_BARRIER,
    DMA_COMPUTE,
    N_GATHER,
    TENSOR_COPY_PREDICATED,
    QUANTIZE_MX,
    MATMUL_MX,
) = range(28)

_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))
_local = threading.local()


def kernel_frame():
    """The innermost frame outside this package: the kernel line that made the call."""
    frame = sys._getframe(1)
    while frame is not None and frame.f_code.co_filename.startswith(_PACKAGE_DIR):
        frame = frame.f_back
    return frame


def kernel_line() -> int:
    frame = kernel_frame()
    return frame.f_lineno if frame is not None else 0


class Buffer:
    """One allocation: an HBM tensor or an on-chip tile (partitions × bytes per partition)."""

    __slots__ = ("index", "name", "memory", "dtype", "shape", "line", "initialized", "array")

    def __init__(self, index, name, memory, dtype, shape, line, initialized=False):
        self.index = index
        self.name = name
        self.memory = memory
        self.dtype = dtype
        self.shape = tuple(int(s) for s in shape)
        self.line = line
        self.initialized = initialized
        self.array = None  # the host array bound to an input

    def __eq__(self, other):
        """Equal to itself, and to the memory it lives in: kernels test ``t.buffer == nl.sbuf``
        or ``t.buffer in (nl.hbm, nl.shared_hbm, nl.private_hbm)`` (the three HBM kinds are
        one memory here)."""
        if getattr(other, "is_memory_kind", False):
            return self.memory == other.code
        return self is other

    __hash__ = object.__hash__

    def encode(self):
        count = 1
        for s in self.shape:
            count *= s
        if self.memory == HBM:
            return (
                self.name,
                HBM,
                self.dtype.code,
                1,
                count * self.dtype.itemsize,
                self.line,
                self.initialized,
            )
        partitions = self.shape[0] if self.shape else 1
        free = count // max(partitions, 1)
        return (
            self.name,
            self.memory,
            self.dtype.code,
            partitions,
            free * self.dtype.itemsize,
            self.line,
            self.initialized,
        )


class Trace:
    """Buffers and instructions of one kernel launch (one program id)."""

    def __init__(self, source: str, program_id=(0,), num_programs=(1,), profile="trn2"):
        self.source = source
        self.buffers = []
        self.instructions = []  # (opcode, engine, fields dict)
        self.program_id = tuple(program_id)
        self.num_programs = tuple(num_programs)
        self.profile = profile
        self.matmul_written = set()  # PSUM regions a matmul already wrote (accumulate=None)
        self.constants = {}  # HBM buffer index -> host array (nl.shared_constant)
        # On-chip buffer index -> the box a masked older-API call wrote (the rest is unwritten).
        self.valid_boxes = {}
        # Instructions that copy a tile assignment's value into place (copy_forwarding.py).
        self.assignment_copies = []

    def new_buffer(self, name, memory, dtype, shape, initialized=False):
        line = kernel_line()
        index = len(self.buffers)
        buffer = Buffer(index, name or f"t{index}", memory, dtype, shape, line, initialized)
        self.buffers.append(buffer)
        return buffer

    def emit(self, opcode, engine, **fields):
        fields["line"] = kernel_line()
        self.instructions.append((opcode, engine, fields))
        return len(self.instructions) - 1


def current() -> Trace:
    trace = getattr(_local, "trace", None)
    if trace is None:
        raise KernelTraceError(
            "no-kernel",
            kernel_line(),
            "NKI calls run only inside a kernel launched with nki.simulate, a @nki.jit call "
            "or openneuron.nki.estimate",
        )
    return trace


class tracing:
    """Makes `trace` the current one for the duration of a with-block."""

    def __init__(self, trace: Trace):
        self.trace = trace

    def __enter__(self):
        self.previous = getattr(_local, "trace", None)
        _local.trace = self.trace
        return self.trace

    def __exit__(self, *exc):
        _local.trace = self.previous
        return False


def fail(rule: str, message: str):
    """Raises a KernelTraceError at the kernel's current line."""
    line = kernel_line()
    source = current_source()
    raise KernelTraceError(rule, line, f"{source}:{line}: [{rule}] {message}")


def current_source() -> str:
    trace = getattr(_local, "trace", None)
    return trace.source if trace is not None else "<kernel>"
