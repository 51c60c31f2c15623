"""``neuronxcc.nki.language``: the older generation's ``nl``.

What differs from the current ``nki.language`` (everything else is shared):

- index grids: ``nl.arange``, ``nl.mgrid`` and affine expressions of them index tensors
  (``a[i * 128 + ix, iy]``); compared, they are ``mask=`` predicates;
- ``mask=`` on loads, stores and math: a trace-time predicate over the operation's grid. All
  true, it changes nothing; all false, the operation is left out; true on a box (the usual
  boundary tile), the operation runs on that box only (a masked load or store moves just those
  elements; a masked computation computes the box and copies it into the full-size result);
  any other shape is refused as ``unsupported``;
- ``nl.fp32`` / ``nl.finfo``, ``nl.static_cast``, ``nl.floor``, ``nl.spmd_dim`` / ``nl.nc``,
  ``nl.shared_constant``, ``nl.load_transpose2d``; ``buffer`` defaults to SBUF.
"""

import builtins
import functools

import numpy as np

from openneuron.nki import isa as _isa
from openneuron.nki import language as _current
from openneuron.nki import trace as _tr
from openneuron.nki.dtypes import as_dtype as _as_dtype
from openneuron.nki.index_grid import GridExpr, Mask, arange, mgrid  # noqa: F401
from openneuron.nki.language import *  # noqa: F401,F403
from openneuron.nki.language import (  # noqa: F401  (names `import *` leaves out)
    _binary,
    _Memory,
    float32,
    int32,
    ndarray,
    psum,
    sbuf,
)
from openneuron.nki.tensor import NkiTensor as _Tensor

fp32 = float32  # the older spelling; ``nl.fp32.min`` is float32's lowest value (see finfo)


class finfo:  # noqa: N801  (NumPy's name)
    """``nl.finfo(dtype)``: ``min``, ``max``, ``eps``, ``tiny`` of a float type."""

    def __init__(self, dtype):
        info = np.finfo(_as_dtype(dtype).numpy)
        self.min, self.max = float(info.min), float(info.max)
        self.eps, self.tiny, self.bits = float(info.eps), float(info.tiny), int(info.bits)


float32.min = finfo(float32).min  # nl.fp32.min in the older kernels
float32.max = finfo(float32).max


# ---------------------------------------------------------------- masks
MASKED_OUT = _current.MASKED_OUT


def mask_box(mask, shape):
    """None when `mask` is true everywhere on a tile of `shape`, "empty" when nowhere, else
    the tuple of slices of the box where it is true (refused when the true set is no box)."""
    if mask is None or mask is True or (isinstance(mask, np.bool_) and mask):
        return None
    if mask is False or isinstance(mask, np.bool_):
        return "empty"  # a condition on loop indices alone, false here
    if not isinstance(mask, Mask):
        _tr.fail("bad-operand", f"mask= takes a comparison of index grids, got {mask!r}")
    own = mask.shape()
    values = _clipped(mask.values(own), shape)
    clipped = values.shape != tuple(own)
    full = tuple(np.broadcast_shapes(values.shape, tuple(shape[: len(own)])))
    values = np.broadcast_to(values, full)
    if values.all():
        # Whole, unless the tile was cut short: then the other operand is cut to it too.
        return tuple(slice(0, extent) for extent in full) if clipped else None
    if not values.any():
        return "empty"
    box = []
    for axis in range(values.ndim):
        other = tuple(a for a in range(values.ndim) if a != axis)
        hit = np.flatnonzero(values.any(axis=other))
        box.append(slice(int(hit[0]), int(hit[-1]) + 1))
    if not values[tuple(box)].all():
        _tr.fail("unsupported", "a mask= whose true elements do not form a box")
    return tuple(box)


def _clipped(values, shape):
    """Mask values cut to a tile that a slice past a tensor's end made shorter
    (``out[256:384]`` of 288 rows is 32 rows): what is cut must be masked off."""
    for axis in range(builtins.min(values.ndim, len(shape))):
        extent = shape[axis]
        if values.shape[axis] <= extent:
            continue
        if np.take(values, range(extent, values.shape[axis]), axis=axis).any():
            if extent == 1:
                continue  # a unit axis of the tile: the mask broadcasts over it
            _tr.fail("out-of-bounds", "a mask= lets an access reach past the tensor's end")
        values = np.take(values, range(extent), axis=axis)
    return values


def restrict(value, box):
    """`value` cut to the box where its axes are the box's (broadcast operands keep theirs)."""
    if not isinstance(value, _Tensor) or box is None:
        return value
    key = []
    for axis in range(value.ndim):
        part = box[axis] if axis < len(box) else slice(None)
        whole = part.stop - part.start
        key.append(
            part if value.shape[axis] >= part.stop and whole != value.shape[axis] else slice(None)
        )
    if value.indirect is not None:
        return _restrict_gather(value, key)
    return value[tuple(key)]


def _restrict_gather(value, key):
    """A gathered view (an index tile's rows) cut to `key`: its rows take the matching
    rows of the index tile."""
    shape, offset = [], value.offset
    for axis, part in enumerate(key):
        start, stop, _ = part.indices(value.shape[axis])
        shape.append(stop - start)
        offset += start * value.strides[axis]
    kind, index, stride, bound = value.indirect
    rows = key[0].indices(value.shape[0])
    if kind == 2 and rows[:2] != (0, value.shape[0]):
        index = index[rows[0] : rows[1]]
    view = _Tensor(value.buffer, value.dtype, tuple(shape), value.strides, offset,
                   value.start_partition)  # fmt: skip
    view.indirect = (kind, index, stride, bound)
    return view


def masked(function, result_buffer=sbuf):
    """`function` (a tile-returning call) under ``mask=``: run on the mask's box and copied into
    a full-size result when the box is partial."""

    def call(*args, mask=None, **kwargs):
        tiles = [a for a in list(args) + list(kwargs.values()) if isinstance(a, _Tensor)]
        inherited = _inherited_box(tiles)
        if mask is None and inherited is None:
            return function(*args, **kwargs)
        reference = builtins.max(tiles, key=lambda t: t.size)
        box = mask_box(mask, reference.shape)
        box = inherited if box is None else box
        if box is None:
            return function(*args, **kwargs)
        if box == "empty":  # left out: `+=` and `[...] =` of this result do nothing
            skipped = ndarray(
                reference.shape, kwargs.get("dtype") or reference.dtype, result_buffer
            )
            skipped.pending_matmul = MASKED_OUT
            return skipped
        part = function(
            *[restrict(a, box) for a in args], **{k: restrict(v, box) for k, v in kwargs.items()}
        )
        shape = tuple(
            reference.shape[a]
            if a < len(box) and part.shape[a] == box[a].stop - box[a].start
            else part.shape[a]
            for a in range(part.ndim)
        )
        whole = ndarray(shape, part.dtype, _memory_of(part))
        _isa.tensor_copy(restrict(whole, box), part)
        _tr.current().valid_boxes[whole.buffer.index] = box
        return whole

    call.__name__ = getattr(function, "__name__", "masked")
    call.__doc__ = function.__doc__
    call._alu = getattr(function, "_alu", None)
    call._act = getattr(function, "_act", None)
    return call


def _inherited_box(tiles):
    """The box a masked call left valid in one of `tiles` (whole tiles only): later calls
    without a mask compute just that box, since the hardware's values outside it are
    whatever the memory held and a masked store never writes them."""
    boxes = _tr.current().valid_boxes
    for tile in tiles:
        box = boxes.get(tile.buffer.index)
        if box is not None and tile.shape == tile.buffer.shape and tile.offset == 0:
            return box
    return None


def _memory_of(tile):
    return psum if tile.memory == _tr.PSUM else sbuf


# ---------------------------------------------------------------- movement
def load(src, mask=None, dtype=None, **_ignored):
    """A new SBUF tile holding `src`; under a partial mask only the box is moved."""
    box = mask_box(mask, src.shape)
    result = ndarray(src.shape, dtype or src.dtype, sbuf)
    if box == "empty":
        return result
    _isa.dma_copy(restrict(result, box), restrict(src, box))
    if box is not None:
        _tr.current().valid_boxes[result.buffer.index] = box
    return result


def store(dst, value, mask=None, **_ignored):
    """Writes `value` to `dst` (HBM); under a partial mask only the box is written."""
    box = mask_box(mask, dst.shape)
    if box == "empty":
        return
    if box is None and isinstance(value, _Tensor):
        box = _inherited_box([value])
    if not isinstance(value, _Tensor):
        value = _current.full(dst.shape, value, dst.dtype)
    elif value.memory == _tr.PSUM:
        value = _current.copy(value)  # the DMA engines cannot read PSUM: staged through SBUF
    _current.store(restrict(dst, box), restrict(value, box))


def load_transpose2d(src, mask=None, dtype=None, **_ignored):
    """src [F, P] in HBM loaded as a [P, F] SBUF tile (by the DMA engines)."""
    if mask_box(mask, src.shape) is not None:
        _tr.fail("unsupported", "load_transpose2d under a partial mask")
    rows, columns = src.shape[-2], src.shape[-1]
    result = ndarray((columns, rows), dtype or src.dtype, sbuf)
    _isa.dma_transpose(result, src)
    return result


def static_cast(x, dtype, **_ignored):
    """`x` converted to `dtype` (a Vector-engine copy); outside a kernel, a NumPy array
    converted on the host (tests prepare inputs this way)."""
    if not isinstance(x, _Tensor):
        return np.asarray(x).astype(_as_dtype(dtype).numpy)
    result = ndarray(x.shape, dtype, sbuf)
    _isa.tensor_copy(result, x)
    return result


def floor(x, dtype=None, mask=None, **_ignored):
    """⌊x⌋: x − fmod(x, 1), less one where that remainder is negative."""

    def compute(x, dtype=None):
        remainder = _binary(_current.mod, x, 1.0, dtype=float32)
        whole = _binary(_current.subtract, x, remainder, dtype=float32)
        negative = _binary(_current.less, remainder, 0.0, dtype=float32)
        return _binary(_current.subtract, whole, negative, dtype=dtype or x.dtype)

    return masked(compute)(x, dtype=dtype, mask=mask)


# ---------------------------------------------------------------- allocation
def _with_sbuf_default(function):
    def call(shape, *args, buffer=None, **kwargs):
        return function(shape, *args, buffer=buffer or sbuf, **kwargs)

    call.__name__ = function.__name__
    return call


def shared_constant(constant, dtype=None, **_ignored):
    """An HBM tensor holding `constant` (a NumPy array), made once per launch."""
    values = np.asarray(constant)
    dtype = _as_dtype(dtype if dtype is not None else values.dtype)
    trace = _tr.current()
    buffer = trace.new_buffer("shared_constant", _tr.HBM, dtype, values.shape, initialized=True)
    trace.constants[buffer.index] = values.astype(dtype.numpy)
    return _Tensor(buffer)


class LoopReduction:
    """What ``nl.loop_reduce(x, op, loop_indices)`` returns: assigned to a tile view
    (``acc[...] = nl.loop_reduce(...)``), it folds x into it, view = op(x, view), one Vector
    instruction per iteration (the loops unroll, so the indices only name them)."""

    def __init__(self, x, op, dtype, box):
        self.x, self.op, self.dtype, self.box = x, op, dtype, box

    def fold_into(self, view):
        if self.box == "empty":
            return
        target = restrict(view, self.box)
        _isa.tensor_tensor(target, restrict(self.x, self.box), target, self.op)

    def __getattr__(self, name):
        _tr.fail(
            "unsupported",
            "nl.loop_reduce's result is assigned to the accumulating tile "
            "(acc[...] = nl.loop_reduce(...)); it is not a tile itself",
        )


def loop_reduce(x, op, loop_indices=None, dtype=None, mask=None, **_ignored):
    return LoopReduction(x, op, dtype, mask_box(mask, x.shape))


# ---------------------------------------------------------------- SPMD grids
class nc(int):  # noqa: N801
    """``nl.nc(n)``: n NeuronCores of a logical core along one launch dimension."""


def spmd_dim(*dims):
    """``nl.spmd_dim(a, nl.nc(2), ...)``: one launch dimension of ∏ dims programs (program ids
    run one after another here, as with ``kernel[n]``)."""
    count = 1
    for d in dims:
        count *= int(d)
    return count


# ---------------------------------------------------------------- math under masks
def _spreading(function):
    """A two-operand call of this generation: a one-partition tile meeting a tile of more
    partitions is spread over them first (broadcast_to: the Tensor engine copies it to each
    partition), as the compiler does for the SBUF scalars these kernels pass."""

    @functools.wraps(function)
    def call(x, y, *args, **kwargs):
        if isinstance(x, _Tensor) and isinstance(y, _Tensor) and x.on_chip and y.on_chip:
            if x.partitions == 1 < y.partitions and x.free_size == y.free_size:
                x = x.broadcast_to((y.partitions, *x.shape[1:]))
            elif y.partitions == 1 < x.partitions and y.free_size == x.free_size:
                y = y.broadcast_to((x.partitions, *y.shape[1:]))
        return function(x, y, *args, **kwargs)

    return call


_TWO_OPERANDS = {
    "add", "subtract", "multiply", "divide", "maximum", "minimum", "power", "mod", "fmod",
    "abs_max", "equal", "not_equal", "greater_equal", "greater", "less_equal", "less",
    "logical_and", "logical_or", "logical_xor", "bitwise_and", "bitwise_or", "bitwise_xor",
}  # fmt: skip


def _wrap_math():
    names = [
        "add", "subtract", "multiply", "divide", "maximum", "minimum", "power", "mod", "fmod",
        "abs_max", "equal", "not_equal", "greater_equal", "greater", "less_equal", "less",
        "logical_and", "logical_or", "logical_xor", "bitwise_and", "bitwise_or", "bitwise_xor",
        "exp", "log", "tanh", "sigmoid", "relu", "gelu", "gelu_apprx_tanh", "silu", "sqrt",
        "rsqrt", "reciprocal", "square", "abs", "sin", "cos", "softplus", "erf", "sign",
        "negative", "mish", "arctan", "gelu_apprx_sigmoid", "gelu_apprx_sigmoid_dx", "silu_dx",
        "copy", "identity", "sum", "max", "min", "prod", "all", "any", "mean", "softmax",
        "matmul", "transpose", "where", "logical_not", "invert",
    ]  # fmt: skip
    namespace = globals()
    for name in names:
        function = getattr(_current, name)
        if name in _TWO_OPERANDS:
            function = _spreading(function)
        buffer = psum if name in ("matmul", "transpose") else sbuf
        namespace[name] = masked(function, buffer)


_wrap_math()
zeros = _with_sbuf_default(_current.zeros)
ones = _with_sbuf_default(_current.ones)
full = _with_sbuf_default(_current.full)
