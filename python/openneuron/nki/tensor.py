"""Tensors as a kernel sees them: views (access patterns) over an HBM, SBUF or PSUM buffer.

On-chip tensors have the partition dimension first; its stride counts partitions and slicing it
moves the start partition. HBM tensors are flat row-major memory. Slicing, integer indexing,
``reshape`` and ``ap`` make new views without moving data.
"""

import builtins

from openneuron.nki import arguments as _arguments
from openneuron.nki import index_grid
from openneuron.nki import trace as tr
from openneuron.nki.dtypes import as_dtype


class DynSlice:
    """``nl.ds(start, size)``: `size` elements from `start`."""

    def __init__(self, start, size, step=1):
        self.start = int(start)
        self.size = int(size)
        self.step = int(step)


def _row_major(shape, on_chip):
    strides = [0] * len(shape)
    stride = 1
    for d in range(len(shape) - 1, -1, -1):
        strides[d] = stride
        stride *= shape[d]
    if on_chip and shape:
        strides[0] = 1  # one partition per index
    return strides


class NkiTensor:
    """A view: buffer, dtype, shape, strides (elements; partitions for on-chip dim 0), offset."""

    __slots__ = (
        "buffer",
        "dtype",
        "shape",
        "strides",
        "offset",
        "start_partition",
        "pending_matmul",
        "indirect",
        "__weakref__",
    )

    def __init__(self, buffer, dtype=None, shape=None, strides=None, offset=0, start_partition=0):
        self.buffer = buffer
        self.dtype = dtype or buffer.dtype
        self.shape = tuple(buffer.shape if shape is None else shape)
        on_chip = buffer.memory != tr.HBM
        self.strides = tuple(_row_major(self.shape, on_chip) if strides is None else strides)
        self.offset = offset
        self.start_partition = start_partition
        self.pending_matmul = None  # index of the nc_matmul that produced this fresh tile
        # A run-time offset from .ap(scalar_offset= / vector_offset=): (kind, index tile,
        # stride, bound), kind 1 scalar or 2 vector; only dma_copy takes such a view.
        self.indirect = None

    # ---- description
    @property
    def on_chip(self) -> bool:
        return self.buffer.memory != tr.HBM

    @property
    def memory(self) -> int:
        return self.buffer.memory

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def name(self) -> str:
        return self.buffer.name

    @property
    def partitions(self) -> int:
        return self.shape[0] if self.shape else 1

    @property
    def free_size(self) -> int:
        size = 1
        for s in self.shape[1:]:
            size *= s
        return size

    @property
    def size(self) -> int:
        size = 1
        for s in self.shape:
            size *= s
        return size

    def __repr__(self) -> str:
        return (
            f"NkiTensor({self.buffer.name!r}, {tr.MEMORY_NAMES[self.memory]}, "
            f"{self.dtype.name}, {list(self.shape)})"
        )

    def __len__(self) -> int:
        return self.shape[0]

    # ---- views
    def _view(self, shape, strides, offset, start_partition, dtype=None):
        if self.indirect is not None:
            tr.fail(
                "unsupported",
                f"a view of {self!r}, whose access pattern has a run-time offset: "
                "pass it to dma_copy as it is",
            )
        return NkiTensor(self.buffer, dtype or self.dtype, shape, strides, offset, start_partition)

    def __getitem__(self, key):
        keys = key if isinstance(key, tuple) else (key,)
        if any(isinstance(k, NkiTensor) for k in keys):
            return self._gathered(keys)
        if index_grid.is_grid_key(key):
            return index_grid.view_of(self, key)  # the older API's nl.arange / nl.mgrid
        if not isinstance(key, tuple):
            key = (key,)
        if any(k is Ellipsis for k in key):
            at = key.index(Ellipsis)
            fill = (slice(None),) * (self.ndim - len(key) + 1)
            key = key[:at] + fill + key[at + 1 :]
        if len(key) > self.ndim:
            tr.fail("bad-index", f"{len(key)} indices for a {self.ndim}-D tensor {self!r}")
        shape, strides = [], []
        offset, start = self.offset, self.start_partition
        for d in range(self.ndim):
            k = key[d] if d < len(key) else slice(None)
            size, stride = self.shape[d], self.strides[d]
            partition_dim = d == 0 and self.on_chip
            if isinstance(k, DynSlice):
                begin, count, step = k.start, k.size, k.step
                if begin < 0 or begin + (count - 1) * step >= size or count < 1:
                    tr.fail(
                        "out-of-bounds",
                        f"nl.ds({begin}, {count}) outside dimension {d} of size {size} of {self!r}",
                    )
            elif isinstance(k, slice):
                begin, stop, step = k.indices(size)
                count = max(0, (stop - begin + (step - (1 if step > 0 else -1))) // step)
                if count == 0:
                    tr.fail(
                        "out-of-bounds",
                        f"empty slice {k} of dimension {d} (size {size}) of {self!r}",
                    )
            else:
                index = int(k)
                if index < 0:
                    index += size
                if not 0 <= index < size:
                    tr.fail(
                        "out-of-bounds",
                        f"index {int(k)} outside dimension {d} of size {size} of {self!r}",
                    )
                if partition_dim:
                    start += index * stride
                    shape.append(1)
                    strides.append(1)
                else:
                    offset += index * stride
                continue
            if partition_dim:
                start += begin * stride
            else:
                offset += begin * stride
            shape.append(count)
            strides.append(stride * step)
        if not shape:
            shape, strides = [1], [1]
        if self.on_chip and len(shape) == 1 and self.ndim > 1:
            shape, strides = shape + [1], strides + [1]  # a tile keeps a free dimension
        return self._view(tuple(shape), tuple(strides), offset, start)

    def _is_contiguous(self) -> bool:
        first = 1 if self.on_chip else 0
        expected = 1
        for d in range(self.ndim - 1, first - 1, -1):
            if self.shape[d] != 1 and self.strides[d] != expected:
                return False
            expected *= self.shape[d]
        return True

    def reshape(self, *shape, **keywords):
        """A view of the same elements in `shape` (positional ints, one tuple, or
        ``shape=``; one -1 is inferred); the view must be contiguous."""
        if keywords:
            if shape or set(keywords) != {"shape"}:
                tr.fail(
                    "unknown-argument",
                    f"reshape() takes the shape positionally or as shape=, got {sorted(keywords)}",
                )
            shape = (keywords["shape"],)
        if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
            shape = tuple(shape[0])
        shape = [int(s) for s in shape]
        if -1 in shape:
            known = 1
            for s in shape:
                if s != -1:
                    known *= s
            shape[shape.index(-1)] = self.size // known
        count = 1
        for s in shape:
            count *= s
        if count != self.size:
            tr.fail("shape-mismatch", f"cannot reshape {list(self.shape)} to {shape}")
        if not self._is_contiguous():
            tr.fail("bad-view", f"reshape needs a contiguous view, {self!r} is strided")
        if self.on_chip and shape[0] != self.partitions:
            tr.fail(
                "bad-view",
                f"reshape of an on-chip tile keeps its {self.partitions} partitions, got {shape}",
            )
        return self._view(
            tuple(shape), tuple(_row_major(shape, self.on_chip)), self.offset, self.start_partition
        )

    view = reshape

    def ap(
        self,
        pattern,
        offset=0,
        dtype=None,
        scalar_offset=None,
        vector_offset=None,
        indirect_dim=None,
        **_ignored,
    ):
        """An explicit access pattern: ``pattern`` is [[step, count], ...] in elements of
        ``dtype``, ``offset`` from this view's first element. On-chip memory is addressed as
        NKI does, partition-major: the first pair's step is a multiple of the partition pitch
        (the buffer's elements per partition).

        A run-time offset indexes dimension ``indirect_dim`` (default 0) of this (HBM) view by
        values read from SBUF when a ``dma_copy`` runs: ``scalar_offset`` (one integer, a [1, 1]
        tile) adds value × that dimension's stride; ``vector_offset`` (a [P, 1] tile) gives
        row i of the pattern's first dimension the start value[i] × stride. Values must lie
        in [0, shape[indirect_dim])."""
        dtype = as_dtype(dtype) if dtype is not None else self.dtype
        indirect = None
        if scalar_offset is not None or vector_offset is not None:
            indirect = self._indirect(scalar_offset, vector_offset, indirect_dim, dtype)
            if isinstance(indirect, int):  # a Python int: a static offset after all
                offset = int(offset) + indirect
                indirect = None
        base = self.offset * self.dtype.itemsize
        if base % dtype.itemsize:
            tr.fail("bad-view", f"offset of {self!r} is not aligned to {dtype.name}")
        shape = [int(count) for _, count in pattern]
        strides = [int(step) for step, _ in pattern]
        offset = base // dtype.itemsize + int(offset)
        start = self.start_partition
        if self.on_chip:
            pitch = self.buffer.encode()[4] // dtype.itemsize
            start += offset // pitch
            offset %= pitch
            step = strides[0]
            if shape[0] == 1:
                strides[0] = 1
            elif step % pitch == 0 and step:
                strides[0] = step // pitch
            else:
                tr.fail(
                    "partition-stride",
                    f"access pattern {pattern} on {self!r}: the "
                    f"partition step {step} is not a multiple of the partition pitch {pitch}",
                )
        view = self._view(tuple(shape), tuple(strides), offset, start, dtype)
        view.indirect = indirect
        return view

    def _gathered(self, keys):
        """The older API's indirect index, ``hbm[b, index_tile, grid]``: row i of the view
        starts at ``index_tile[i]`` along the tile's dimension (a DMA gather, or a scatter as
        a destination); the other indices are grids, integers or full slices."""
        dims = [d for d, k in enumerate(keys) if isinstance(k, NkiTensor)]
        if len(dims) != 1:
            tr.fail("unsupported", f"{len(dims)} index tiles in one index of {self!r} (one is)")
        dim, tile = dims[0], keys[dims[0]]
        if not tile.on_chip or tile.free_size != 1:
            tr.fail(
                "bad-operand",
                f"an index tile is an on-chip [P, 1] tile of integers, got {tile!r}",
            )
        grids = [k for k in keys if isinstance(k, index_grid.GridExpr)]
        ndim = builtins.max([2] + [g.ndim for g in grids])
        rows = index_grid.GridExpr(ndim, {}, {0: tile.partitions}, 0)
        view = index_grid.view_of(self, keys[:dim] + (rows,) + keys[dim + 1 :])
        view.indirect = self._indirect(None, tile, dim, self.dtype)
        return view

    def _indirect(self, scalar_offset, vector_offset, indirect_dim, dtype):
        """(kind, index tile, stride, bound) of a run-time offset, or an int for a static one."""
        if scalar_offset is not None and vector_offset is not None:
            tr.fail("bad-view", "an access pattern takes scalar_offset or vector_offset, not both")
        if indirect_dim is None:
            # Not stated by the API reference we have; every call in AWS's NKI Library that
            # names it passes 0, and the one that omits it indexes a [n, 1] table by row.
            indirect_dim = 0
        if self.on_chip:
            tr.fail(
                "unsupported",
                f"run-time offsets on an on-chip access pattern ({self!r}) are not simulated: "
                "the DMA's HBM side takes them",
            )
        dim = int(indirect_dim)
        if not 0 <= dim < self.ndim:
            tr.fail("bad-view", f"indirect_dim {dim} outside the {self.ndim} dims of {self!r}")
        if (self.strides[dim] * self.dtype.itemsize) % dtype.itemsize:
            tr.fail("bad-view", f"dimension {dim} of {self!r} is not a whole number of {dtype}")
        stride = self.strides[dim] * self.dtype.itemsize // dtype.itemsize
        index = scalar_offset if scalar_offset is not None else vector_offset
        if scalar_offset is not None and isinstance(index, int):
            if not 0 <= index < self.shape[dim]:
                tr.fail(
                    "out-of-bounds",
                    f"scalar_offset {index} outside dimension {dim} "
                    f"(size {self.shape[dim]}) of {self!r}",
                )
            return index * stride
        if not isinstance(index, NkiTensor):
            tr.fail(
                "bad-operand",
                f"a run-time offset is an SBUF tile of integers, got {type(index).__name__}",
            )
        kind = 1 if scalar_offset is not None else 2
        return (kind, index, stride, self.shape[dim])

    def bitcast(self, dtype):
        dtype = as_dtype(dtype)
        ratio = self.dtype.itemsize / dtype.itemsize
        if self.strides[-1] != 1 or self.shape[-1] * ratio != int(self.shape[-1] * ratio):
            tr.fail("bad-view", f"cannot reinterpret {self!r} as {dtype.name}")
        shape = self.shape[:-1] + (int(self.shape[-1] * ratio),)
        strides = tuple(
            int(s * ratio) if (d or not self.on_chip) else s
            for d, s in enumerate(self.strides[:-1])
        ) + (1,)
        return self._view(shape, strides, int(self.offset * ratio), self.start_partition, dtype)

    @property
    def T(self):
        if self.ndim != 2 or self.on_chip:
            tr.fail("bad-view", "only 2-D HBM views can be transposed in place (.T)")
        return self._view(self.shape[::-1], self.strides[::-1], self.offset, self.start_partition)

    def encode(self):
        """15 ints: buffer, dtype, start partition, offset, rank, sizes[5], strides[5]."""
        if self.ndim > 5:
            tr.fail(
                "bad-operand",
                f"{self!r} has {self.ndim} dimensions; the hardware walks "
                "at most 5 (partition + 4 free)",
            )
        sizes = list(self.shape) + [1] * (5 - self.ndim)
        strides = list(self.strides) + [0] * (5 - self.ndim)
        return (
            [self.buffer.index, self.dtype.code, self.start_partition, self.offset, self.ndim]
            + sizes
            + strides
        )


NkiTensor.ap = _arguments.reject_unknown(NkiTensor.ap, "ap")
