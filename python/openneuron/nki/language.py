"""``nki.language``: tensors, memories, dtypes, loops, and tile-level math built on ``nki.isa``.

Elementwise math and reductions allocate their result in SBUF and emit the instruction the
hardware would use (Scalar engine for activations, Vector engine for two-input math and
reductions, Tensor engine for matmul and transpose).
"""

import builtins
import dataclasses
import functools
import numbers
import os

import numpy as np

from openneuron.nki import arguments as _arguments
from openneuron.nki import isa as nisa
from openneuron.nki import trace as tr
from openneuron.nki.dtypes import (  # noqa: F401  (re-exported as nl.<dtype>)
    DType,
    as_dtype,
    bfloat16,
    bool_,
    float4_e2m1fn_x4,
    float8_e4m3,
    float8_e4m3fn_x4,
    float8_e5m2,
    float8_e5m2_x4,
    float16,
    float32,
    int8,
    int16,
    int32,
    tfloat32,
    uint8,
    uint16,
    uint32,
)
from openneuron.nki.tensor import DynSlice, NkiTensor

float8_e4m3fn = float8_e4m3
bool = bool_  # noqa: A001  (NKI's name)
dtype = DType
tensor = NkiTensor
range = range  # noqa: A001


class _Memory:
    is_memory_kind = True  # a buffer compares equal to the memory it lives in

    def __init__(self, name, code):
        self.name = name
        self.code = code

    def __repr__(self):
        return f"nl.{self.name}"


sbuf = _Memory("sbuf", tr.SBUF)
psum = _Memory("psum", tr.PSUM)
hbm = _Memory("hbm", tr.HBM)
shared_hbm = _Memory("shared_hbm", tr.HBM)
private_hbm = _Memory("private_hbm", tr.HBM)


# What @dataclass with its defaults records on a class (mutable, compared by fields).
_MUTABLE_DATACLASS_PARAMS = dataclasses.dataclass(type("_Plain", (), {})).__dataclass_params__


class NKIObject:
    """Base class kernels derive their helper objects from. Every subclass is a dataclass,
    decorated or not, and plain class attributes of a subclass become its fields, so it
    takes them as keyword arguments even when it lists them without annotations."""

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        annotations = cls.__dict__.get("__annotations__", {})
        added = {}
        for name, value in list(cls.__dict__.items()):
            if name.startswith("__") or name in annotations:
                continue
            if callable(value) or isinstance(value, (property, staticmethod, classmethod)):
                continue
            added[name] = object
        if added:
            cls.__annotations__ = {**annotations, **added}
        if "__init__" not in cls.__dict__:
            # Subclasses are dataclasses without the decorator (`class D(NKIObject): B: int`
            # called as D(B=...)); a later @dataclass finds the methods made and keeps them.
            # The __init__ made is a frozen dataclass's (it assigns through object.__setattr__),
            # so a later @dataclass(frozen=True) still constructs; the class itself stays a
            # plain mutable dataclass. Below a mutable dataclass base only a mutable one can be.
            # A field listed without a default may be left out of the call and set later (the
            # library's MoE CTE kernels build DimensionSizes so and derive the rest).
            unset = [n for n in cls.__dict__.get("__annotations__", {}) if n not in cls.__dict__]
            for name in unset:
                setattr(cls, name, _UNSET)
            try:
                dataclasses.dataclass(cls, frozen=True)
                frozen = True
            except TypeError:
                dataclasses.dataclass(cls)
                frozen = False
            for name in unset:
                delattr(cls, name)
            if unset:
                cls.__init__ = _dropping_unset(cls.__init__)
            if not frozen:
                return
            del cls.__setattr__, cls.__delattr__
            cls.__hash__ = None
            cls.__dataclass_params__ = _MUTABLE_DATACLASS_PARAMS


class _Unset:
    """The default of an NKIObject field listed without one: left unset when not given."""

    def __repr__(self):
        return "<unset>"


_UNSET = _Unset()


def _dropping_unset(init):
    @functools.wraps(init)
    def construct(self, *args, **kwargs):
        init(self, *args, **kwargs)
        for name, value in list(vars(self).items()):
            if value is _UNSET:
                object.__delattr__(self, name)

    return construct


class tile_size:
    pmax = 128
    psum_fmax = 512
    gemm_stationary_fmax = 128
    gemm_moving_fmax = 512
    psum_min = 1
    bn_stats_fmax = 512
    total_available_sbuf_size = 224 * 1024


def ds(start, size, step=1):
    return DynSlice(start, size, step)


class ParDim(int):
    """``nl.par_dim(n)``: marks the partition dimension of a shape; dimensions before it are
    block dimensions (the older API's tiles of several [P, F] blocks)."""


def par_dim(size):
    return ParDim(size)


class BlockTensor:
    """A tile with leading block dimensions, ``(B..., par_dim(P), F...)``: B tiles of
    [P, F...], each its own buffer (allocated at its first use, so placement follows each
    block's live range, as the older compiler placed them). Indexing the block dimensions with
    integers gives that block as an ordinary tile; any other use of the whole is refused."""

    def __init__(self, name, memory, dtype, blocks, partitions, free):
        self.name, self.memory, self.dtype = name, memory, dtype
        self.blocks = tuple(blocks)
        self.free = tuple(free)
        self.shape = self.blocks + (partitions,) + self.free
        self.tiles = {}

    @property
    def ndim(self):
        return len(self.shape)

    def block(self, indices):
        number = 0
        for index, extent in zip(indices, self.blocks, strict=True):
            if isinstance(index, DynSlice) and index.size == 1:
                index = index.start
            if not isinstance(index, numbers.Integral):
                tr.fail(
                    "unsupported",
                    f"block dimensions of a {list(self.shape)} tile are indexed with integers "
                    f"only (got {index!r})",
                )
            index = int(index) + (extent if int(index) < 0 else 0)
            if not 0 <= index < extent:
                tr.fail("out-of-bounds", f"block {index} of {extent} in {list(self.shape)}")
            number = number * extent + index
        tile = self.tiles.get(number)
        if tile is None:
            shape = self.shape[len(self.blocks) :]
            name = f"{self.name or 'block'}[{number}]"
            tile = NkiTensor(tr.current().new_buffer(name, self.memory, self.dtype, shape))
            self.tiles[number] = tile
        return tile

    def every_block(self):
        count = 1
        for extent in self.blocks:
            count *= extent
        for number in range(count):
            indices = []
            for extent in reversed(self.blocks):
                indices.append(number % extent)
                number //= extent
            yield self.block(tuple(reversed(indices)))

    def __getitem__(self, key):
        key = key if isinstance(key, tuple) else (key,)
        count = len(self.blocks)
        if len(key) < count:  # leading block indices only: the blocks under them
            return _BlockSlice(self, tuple(key))
        tile = self.block(key[:count])
        rest = key[count:]
        return tile[rest] if rest else tile

    def __setitem__(self, key, value):
        _assign(self[key], value)

    def __repr__(self):
        return f"BlockTensor({self.name!r}, {list(self.shape)})"


class _BlockSlice(BlockTensor):
    """``blocks[i]`` of a tile with several block dimensions: the blocks under index i."""

    def __init__(self, parent, prefix):
        self.parent, self.prefix = parent, prefix
        self.name, self.memory, self.dtype = parent.name, parent.memory, parent.dtype
        self.blocks = parent.blocks[len(prefix) :]
        self.free = parent.free
        self.shape = parent.shape[len(prefix) :]

    def block(self, indices):
        return self.parent.block(self.prefix + tuple(indices))


# ---------------------------------------------------------------- loops and programs
def affine_range(*args, **kwargs):
    return range(*args)


sequential_range = static_range = affine_range


def dynamic_range(*args, **kwargs):
    # Unrolled at trace time like the others; the trip count must be known here.
    return range(*args)


def program_id(axis=0):
    ids = tr.current().program_id
    return ids[axis] if axis < len(ids) else 0


def num_programs(axes=0):
    counts = tr.current().num_programs
    if isinstance(axes, (tuple, list)):
        result = 1
        for a in axes:
            result *= counts[a] if a < len(counts) else 1
        return result
    return counts[axes] if axes < len(counts) else 1


def program_ndim():
    return len(tr.current().num_programs)


# ---------------------------------------------------------------- allocation
def _memory(buffer):
    if buffer is None:
        return tr.SBUF
    if isinstance(buffer, _Memory):
        return buffer.code
    tr.fail("bad-operand", f"buffer must be nl.sbuf, nl.psum or an HBM kind, got {buffer!r}")


def ndarray(shape, dtype=float32, buffer=None, name=None, address=None, **_ignored):
    """A new, uninitialised tensor (NaN until written; reading it before is an error).
    An explicit ``address`` (partition, byte) is accepted and left to the simulator's own
    placement by live range: tensors made to share memory through one address are not
    modelled as aliases."""
    if isinstance(shape, int):
        shape = (shape,)
    shape = tuple(s if isinstance(s, ParDim) else int(s) for s in shape)
    dtype = as_dtype(dtype)
    memory = _memory(buffer)
    if memory != tr.HBM and len(shape) < 2:
        shape = shape + (1,)
    trace = tr.current()
    marked = [d for d, s in enumerate(shape) if isinstance(s, ParDim)]
    if memory != tr.HBM and marked and marked[0] > 0:
        at = marked[0]
        free = tuple(int(s) for s in shape[at + 1 :]) or (1,)
        blocks = tuple(int(s) for s in shape[:at])
        return BlockTensor(name, memory, dtype, blocks, int(shape[at]), free)
    shape = tuple(int(s) for s in shape)
    return NkiTensor(trace.new_buffer(name, memory, as_dtype(dtype), shape))


empty = ndarray


def full(
    shape, fill_value, dtype=float32, buffer=None, name=None, lazy_initialization=None, **_ignored
):
    """A new tensor holding `fill_value`. ``lazy_initialization`` lets AWS's compiler defer or
    fold the fill into the first write; the values are the same, so it is accepted and the
    fill is always made (one memset, as without it)."""
    result = ndarray(shape, dtype, buffer, name)
    for tile in result.every_block() if isinstance(result, BlockTensor) else [result]:
        nisa.memset(tile, fill_value)
    return result


def zeros(shape, dtype=float32, buffer=None, name=None, lazy_initialization=None, **_ignored):
    return full(shape, 0.0, dtype, buffer, name)


def ones(shape, dtype=float32, buffer=None, name=None, lazy_initialization=None, **_ignored):
    return full(shape, 1.0, dtype, buffer, name)


def shared_identity_matrix(n, dtype=uint8, dst=None, **_ignored):
    """An [n, n] identity matrix in SBUF (into `dst` when given). One per size and dtype in a
    kernel: later calls return the same tile, as the compiler shares them."""
    dtype = as_dtype(dtype)
    trace = tr.current()
    shared = trace.__dict__.setdefault("shared_identities", {})
    key = (int(n), dtype.name)
    if dst is None and key in shared:
        return shared[key]
    result = dst if dst is not None else ndarray((n, n), dtype, sbuf, f"identity_{n}_{dtype.name}")
    diagonal_distance = ndarray((n, n), float32, sbuf, "identity_iota")
    nisa.iota(diagonal_distance, [[-1, n]], offset=0, channel_multiplier=1)  # p - i
    nisa.tensor_scalar(result, diagonal_distance, equal, 0.0)
    if dst is None:
        shared[key] = result
    return result


def shared_constant(constant, dtype=None, **_ignored):
    """An HBM tensor holding `constant`: a NumPy array, or the path of a ``.npy`` file (as
    the compiler embeds a file's contents). Bound like an input, once per launch."""
    if isinstance(constant, (str, os.PathLike)):
        try:
            values = np.load(constant, allow_pickle=False)
        except (OSError, ValueError) as error:
            tr.fail("bad-argument", f"nl.shared_constant({str(constant)!r}): {error}")
    else:
        values = np.asarray(constant)
    dtype = as_dtype(dtype if dtype is not None else values.dtype)
    trace = tr.current()
    buffer = trace.new_buffer("shared_constant", tr.HBM, dtype, values.shape, initialized=True)
    trace.constants[buffer.index] = values.astype(dtype.numpy)
    return NkiTensor(buffer)


def ndarray_like(x, dtype=None, buffer=None, name=None):
    return ndarray(x.shape, dtype or x.dtype, buffer or sbuf, name)


empty_like = ndarray_like


def zeros_like(x, dtype=None, buffer=None, name=None):
    return zeros(x.shape, dtype or x.dtype, buffer or sbuf, name)


def ones_like(x, dtype=None, buffer=None, name=None):
    return ones(x.shape, dtype or x.dtype, buffer or sbuf, name)


def full_like(x, fill_value, dtype=None, buffer=None, name=None):
    return full(x.shape, fill_value, dtype or x.dtype, buffer or sbuf, name)


# ---------------------------------------------------------------- movement
def load(src, dtype=None, **_ignored):
    """A new SBUF tile holding `src` (an HBM view), moved by DMA."""
    result = ndarray(src.shape, dtype or src.dtype, sbuf)
    nisa.dma_copy(result, src)
    return result


def store(dst, value, **_ignored):
    """Writes an SBUF tile (or number) to `dst` (an HBM view) by DMA."""
    if not isinstance(value, NkiTensor):
        value = full(dst.shape, value, dst.dtype)
    nisa.dma_copy(dst, value)


def copy(x, dtype=None, **_ignored):
    result = ndarray(x.shape, dtype or x.dtype, sbuf)
    nisa.tensor_copy(result, x)
    return result


copy._act = nisa.ACTIVATION_FUNCTIONS["copy"]  # as an activation function: the identity


def _assign(view, value):
    """`view[...] = value`: a DMA when either side is in HBM, else an engine copy."""
    if value is view or (isinstance(value, NkiTensor) and _same_view(value, view)):
        return  # `t[...] += x` writes back the view it already updated
    if isinstance(value, NkiTensor) and value.pending_matmul == MASKED_OUT:
        return
    if hasattr(type(value), "fold_into"):  # the older API's nl.loop_reduce
        value.fold_into(view)
        return
    if (
        isinstance(value, NkiTensor)
        and value.pending_matmul not in (None, MASKED_OUT)
        and view.memory == tr.PSUM
        and value.shape == view.shape
    ):
        # `psum_tile[...] = nisa.nc_matmul(...)` (older API): the matmul writes there itself.
        trace = tr.current()
        fields = trace.instructions[value.pending_matmul][2]
        fields["dst"], fields["flags"] = view, 0
        trace.matmul_written.add((view.buffer.index, view.start_partition, view.offset))
        value.pending_matmul = None
        return
    if not isinstance(value, NkiTensor):
        nisa.memset(view, value)
    elif view.memory == tr.HBM or value.memory == tr.HBM:
        nisa.dma_copy(view, value)
    elif value.shape != view.shape and value.size == view.size:
        nisa.tensor_copy(view, value.reshape(view.shape) if value._is_contiguous() else value)
    else:
        tr.current().assignment_copies.append(nisa.tensor_copy(view, value))


def _same_view(a, b):
    return (a.buffer is b.buffer and a.shape == b.shape and a.strides == b.strides
            and a.offset == b.offset and a.start_partition == b.start_partition)  # fmt: skip


# ---------------------------------------------------------------- tensor engine
def transpose(x, dtype=None, **_ignored):
    """x[P,F] transposed on the Tensor engine, into PSUM (an x in PSUM is staged to SBUF)."""
    x = copy(x) if x.memory == tr.PSUM else x
    result = ndarray((x.free_size, x.partitions), dtype or x.dtype, psum)
    nisa.nc_transpose(result, x.reshape(x.partitions, x.free_size) if x.ndim != 2 else x)
    return result


def matmul(x, y, transpose_x=False, **_ignored):
    """x @ y into a new fp32 PSUM tile (x.T @ y when transpose_x: x is then [K, M]).
    ``psum_tile += nl.matmul(...)`` accumulates into psum_tile with the same instruction."""
    if not transpose_x:
        x = transpose(x)
    # The Tensor engine reads SBUF: an operand in PSUM (a transpose's result) is staged first.
    x = copy(x) if x.memory == tr.PSUM else x
    y = copy(y) if y.memory == tr.PSUM else y
    result = ndarray((x.free_size, y.free_size), float32, psum)
    index = nisa.nc_matmul(result, x, y, accumulate=False)
    result.pending_matmul = index
    return result


# pending_matmul of a result whose call a mask left out: assigning or adding it does nothing.
MASKED_OUT = -1


def _accumulate(target, other):
    """`target += other`: folds a fresh matmul into target's PSUM accumulation."""
    if isinstance(other, NkiTensor) and other.pending_matmul == MASKED_OUT:
        return target
    trace = tr.current()
    if (
        isinstance(other, NkiTensor)
        and other.pending_matmul not in (None, MASKED_OUT)
        and target.memory == tr.PSUM
    ):
        opcode, engine, fields = trace.instructions[other.pending_matmul]
        fields["dst"] = target
        key = (target.buffer.index, target.start_partition, target.offset)
        accumulate = key in trace.matmul_written
        trace.matmul_written.add(key)
        fields["flags"] = 1 if accumulate else 0
        other.pending_matmul = None
        return target
    nisa.tensor_tensor(target, target, other, add) if isinstance(
        other, NkiTensor
    ) else nisa.tensor_scalar(target, target, add, other)
    return target


# ---------------------------------------------------------------- elementwise math
def _op(name):
    """The nl function `name`: an ALU operator, an activation function, or both (abs)."""
    alu = nisa.ALU_OPERATORS.get(name)
    act = nisa.ACTIVATION_FUNCTIONS.get(name)

    def function(*args, dtype=None, **kwargs):
        for key, value in kwargs.items():
            if not (key == "mask" and value is None):
                tr.fail(
                    "unknown-argument",
                    f"nl.{name}() got the keyword argument {key}={value!r}, which it does not "
                    "take (it takes: dtype)",
                )
        if act is not None and (alu is None or len(args) == 1):
            x = args[0]
            result = ndarray(x.shape, dtype or x.dtype, sbuf)
            nisa.activation(result, function, x)
            return result
        return _binary(function, args[0], args[1], dtype=dtype)

    function.__name__ = name
    function._alu = alu
    function._act = act
    return function


def _result_dtype(a, b):
    dtypes = [t.dtype for t in (a, b) if isinstance(t, NkiTensor)]
    if float32 in dtypes:
        return float32
    return dtypes[0]


def _binary(op, a, b, dtype=None):
    a_tile, b_tile = isinstance(a, NkiTensor), isinstance(b, NkiTensor)
    if not a_tile and not b_tile:
        tr.fail("bad-operand", f"{op.__name__} needs at least one tensor")
    reference = a if a_tile else b
    if a_tile and b_tile and b.partitions == a.partitions and b.free_size == 1 and a.free_size > 1:
        b_tile = False  # per-partition operand
    elif (
        a_tile and b_tile and a.partitions == b.partitions and a.free_size == 1 and b.free_size > 1
    ):
        a_tile = False
        reference = b
    out_dtype = dtype or _result_dtype(a, b)
    if dtype is None and op.__name__ == "divide" and not out_dtype.is_float:
        out_dtype = float32  # true division, as in NumPy: integers give a float quotient
    shape = reference.shape
    if a_tile and b_tile and a.shape != b.shape and a.ndim == b.ndim and a.size != b.size:
        shape = tuple(builtins.max(x, y) for x, y in zip(a.shape, b.shape, strict=True))
    result = ndarray(shape, out_dtype, sbuf)
    if a_tile and b_tile:
        if a.shape != b.shape:
            broadcastable = a.ndim == b.ndim and builtins.all(
                x == y or 1 in (x, y) for x, y in zip(a.shape[1:], b.shape[1:], strict=True)
            )
            if a.partitions != b.partitions or (a.free_size != b.free_size and not broadcastable):
                tr.fail(
                    "shape-mismatch",
                    f"{op.__name__} of {list(a.shape)} and "
                    f"{list(b.shape)}: the hardware does not broadcast "
                    "across partitions",
                )
            if b.size == a.size:
                b = b.reshape(a.shape)
            else:  # free dimensions of size 1 broadcast (by a stride-0 view)
                a, b = a.broadcast_to(shape), b.broadcast_to(shape)
        nisa.tensor_tensor(result, a, b, op)
    elif a_tile:
        nisa.tensor_scalar(result, a, op, b)
    else:
        nisa.tensor_scalar(result, b, op, a, reverse0=True)
    return result


# Codes from nisa.ALU_OPERATORS and nisa.ACTIVATION_FUNCTIONS, by name.
add = _op("add")
subtract = _op("subtract")
multiply = _op("multiply")
divide = _op("divide")
maximum = _op("maximum")
minimum = _op("minimum")
power = _op("power")
mod = fmod = _op("mod")
abs_max = _op("abs_max")
equal = _op("equal")
not_equal = _op("not_equal")
greater_equal = _op("greater_equal")
greater = _op("greater")
less_equal = _op("less_equal")
less = _op("less")
logical_and = _op("logical_and")
logical_or = _op("logical_or")
logical_xor = _op("logical_xor")
bitwise_and = _op("bitwise_and")
bitwise_or = _op("bitwise_or")
bitwise_xor = _op("bitwise_xor")

identity = _op("copy")
exp = _op("exp")
log = _op("log")
tanh = _op("tanh")
sigmoid = _op("sigmoid")
relu = _op("relu")
gelu = _op("gelu")
gelu_apprx_tanh = _op("gelu_apprx_tanh")
silu = _op("silu")
sqrt = _op("sqrt")
rsqrt = _op("rsqrt")
reciprocal = _op("reciprocal")
square = _op("square")
# As an ALU operator (tensor_scalar's op0) abs is abs_max: |x| for the operand 0 kernels give.
abs = _op("abs")  # noqa: A001  (NKI's name)
sin = _op("sin")
cos = _op("cos")
softplus = _op("softplus")
erf = _op("erf")
sign = _op("sign")
negative = _op("negative")
mish = _op("mish")
arctan = _op("arctan")
gelu_apprx_sigmoid = _op("gelu_apprx_sigmoid")
gelu_apprx_sigmoid_dx = _op("gelu_apprx_sigmoid_dx")
silu_dx = _op("silu_dx")


def logical_not(x, dtype=None):
    return _binary(equal, x, 0.0, dtype=dtype or x.dtype)


def invert(x, dtype=None):
    return _binary(bitwise_xor, x, -1, dtype=dtype)


def where(condition, x, y, dtype=None):
    ref = condition
    if not isinstance(x, NkiTensor):
        x = full(ref.shape, x, dtype or (y.dtype if isinstance(y, NkiTensor) else float32))
    if not isinstance(y, NkiTensor):
        y = full(ref.shape, y, dtype or x.dtype)
    result = ndarray(ref.shape, dtype or x.dtype, sbuf)
    nisa.select(result, condition, x, y)
    return result


# ---------------------------------------------------------------- reductions
def _reduce(op, x, axis, dtype=None, keepdims=False, negate=False):
    axes = (axis,) if isinstance(axis, int) else tuple(axis)
    axes = tuple(a % x.ndim for a in axes)
    if axes == (0,):
        result = ndarray((1,) + x.shape[1:], dtype or x.dtype, sbuf)
        nisa.tensor_partition_reduce(result, op, x)
        return result
    kept = [x.shape[d] for d in range(x.ndim) if d not in axes]
    if keepdims:
        shape = tuple(1 if d in axes else x.shape[d] for d in range(x.ndim))
    else:
        shape = tuple(kept) if len(kept) > 1 else (kept[0], 1)
    result = ndarray(shape, dtype or x.dtype, sbuf)
    flat = (
        result.reshape(kept + ([1] if len(kept) == 1 else []))
        if result.shape != tuple(kept)
        else result
    )
    nisa.tensor_reduce(flat, op, x, axes, negate=negate)
    return result


def sum(x, axis, dtype=None, keepdims=False, **_ignored):  # noqa: A001
    return _reduce(add, x, axis, dtype, keepdims)


def max(x, axis, dtype=None, keepdims=False, **_ignored):  # noqa: A001
    return _reduce(maximum, x, axis, dtype, keepdims)


def min(x, axis, dtype=None, keepdims=False, **_ignored):  # noqa: A001
    return _reduce(minimum, x, axis, dtype, keepdims)


def prod(x, axis, dtype=None, keepdims=False, **_ignored):
    return _reduce(multiply, x, axis, dtype, keepdims)


def all(x, axis, dtype=None, keepdims=False, **_ignored):  # noqa: A001
    return _reduce(logical_and, x, axis, dtype, keepdims)


def any(x, axis, dtype=None, keepdims=False, **_ignored):  # noqa: A001
    return _reduce(logical_or, x, axis, dtype, keepdims)


def mean(x, axis, dtype=None, keepdims=False, **_ignored):
    total = _reduce(add, x, axis, float32, keepdims)
    axes = (axis,) if isinstance(axis, int) else tuple(axis)
    count = 1
    for a in axes:
        count *= x.shape[a % x.ndim]
    result = ndarray(total.shape, dtype or x.dtype, sbuf)
    nisa.tensor_scalar(result, total, multiply, 1.0 / count)
    return result


def softmax(x, axis=-1, dtype=None, **_ignored):
    """exp(x - max) / sum along the free axis `axis` (Vector reduce, Scalar exp with a fused
    row sum, Vector reciprocal and scale)."""
    if (axis % x.ndim) != x.ndim - 1 or x.ndim != 2:
        tr.fail("unsupported", "nl.softmax over the last axis of a 2-D tile only")
    row_max = _reduce(maximum, x, 1, float32, negate=True)  # -max, as the bias
    exps = ndarray(x.shape, float32, sbuf)
    sums = ndarray((x.partitions, 1), float32, sbuf)
    nisa.activation(exps, exp, x, bias=row_max, reduce_op=add, reduce_res=sums)
    inverse = ndarray((x.partitions, 1), float32, sbuf)
    nisa.reciprocal(inverse, sums)
    result = ndarray(x.shape, dtype or x.dtype, sbuf)
    nisa.tensor_scalar(result, exps, multiply, inverse)
    return result


def _is_number(value):
    return isinstance(value, numbers.Number)


_arguments.wrap_module(globals(), "nl")
