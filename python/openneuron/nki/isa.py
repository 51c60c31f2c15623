"""``nki.isa``: one call per NeuronCore instruction, destination first (current NKI API).

Each call checks what it can see at trace time (argument kinds) and appends one instruction to
the kernel's trace; the simulator checks the hardware rules and runs it.
"""

import enum
import numbers

from openneuron.nki import arguments as _arguments
from openneuron.nki import trace as tr
from openneuron.nki.tensor import NkiTensor


class engine:
    """Engines an instruction may be placed on."""

    tensor = tr.TENSOR
    vector = tr.VECTOR
    scalar = tr.SCALAR
    activation = tr.SCALAR
    gpsimd = tr.GPSIMD
    sync = tr.DMA
    unknown = None


tensor_engine = engine.tensor
vector_engine = engine.vector
scalar_engine = engine.scalar
activation_engine = engine.scalar
gpsimd_engine = engine.gpsimd
unknown_engine = None


class nc_version(enum.IntEnum):
    """NeuronCore generations; members compare equal to their numbers and have a ``.name``
    (``gen3``), as the library's test harness reads it."""

    gen2 = 2
    gen3 = 3  # Trainium2
    gen4 = 4  # Trainium3


def get_nc_version():
    return nc_version.gen4 if _trace().profile == "trn3" else nc_version.gen3


class dge_mode:
    none, swdge, hwdge, unknown = 0, 1, 2, 3


class oob_mode:
    error, skip = 0, 1


class dma_engine:
    """Which queues carry a transfer (the DMA rings or GpSimd's); the timing model shares
    one DMA bandwidth, so the choice changes no result."""

    dma, gpsimd_dma = 0, 1


_OOB_SKIP = oob_mode.skip


class matmul_perf_mode:
    none = "none"
    double_row = "double_row"


class reduce_cmd:
    idle, reset, reduce, reset_reduce = 0, 1, 2, 3


class constants:
    """The enums under ``nki.isa.constants`` (``from nki.isa import constants``), the same
    classes as at the top of ``nki.isa``."""

    engine = engine
    nc_version = nc_version
    dge_mode = dge_mode
    dma_engine = dma_engine
    oob_mode = oob_mode
    matmul_perf_mode = matmul_perf_mode
    reduce_cmd = reduce_cmd


# The engines' operator encodings by nki.language name: the ALU operators of the Vector and
# GpSimd engines (the simulator's AluOp) and the Scalar engine's activation functions (its
# ActivationFunction). nki.language's functions carry them as `_alu` and `_act`.
ALU_OPERATORS = {
    "add": 1,
    "subtract": 2,
    "multiply": 3,
    "divide": 4,
    "maximum": 5,
    "minimum": 6,
    "power": 7,
    "mod": 8,
    "abs_max": 9,
    "equal": 10,
    "not_equal": 11,
    "greater_equal": 12,
    "greater": 13,
    "less_equal": 14,
    "less": 15,
    "logical_and": 16,
    "logical_or": 17,
    "logical_xor": 18,
    "bitwise_and": 19,
    "bitwise_or": 20,
    "bitwise_xor": 21,
    "abs": 9,
}
ACTIVATION_FUNCTIONS = {
    "copy": 0,
    "exp": 1,
    "log": 2,
    "tanh": 3,
    "sigmoid": 4,
    "relu": 5,
    "gelu": 6,
    "gelu_apprx_tanh": 7,
    "silu": 8,
    "sqrt": 9,
    "rsqrt": 10,
    "reciprocal": 11,
    "square": 12,
    "abs": 13,
    "sin": 14,
    "cos": 15,
    "softplus": 16,
    "erf": 17,
    "sign": 18,
    "negative": 19,
    "mish": 20,
    "arctan": 21,
    "gelu_apprx_sigmoid": 22,
    "gelu_apprx_sigmoid_dx": 23,
    "silu_dx": 24,
}
# Other spellings of those names (NumPy's ufuncs, nki.language's aliases).
_OPERATOR_ALIASES = {
    "true_divide": "divide",
    "fmod": "mod",
    "max": "maximum",
    "min": "minimum",
    "sum": "add",
    "identity": "copy",
}


def _trace():
    return tr.current()


def alu_code(op) -> int:
    """The ALU code of an operator given as an nl function, a NumPy ufunc or a name."""
    if op is None:
        return 0
    code = getattr(op, "_alu", None)
    if code is not None:
        return code
    code = ALU_OPERATORS.get(_operator_name(op))
    if code is not None:
        return code
    tr.fail("bad-operand", f"{op!r} is not an ALU operator")


def activation_code(op) -> int:
    code = getattr(op, "_act", None)
    if code is not None:
        return code
    code = ACTIVATION_FUNCTIONS.get(_operator_name(op))
    if code is not None:
        return code
    tr.fail("bad-operand", f"{op!r} is not an activation function of the Scalar engine")


def _operator_name(op):
    name = getattr(op, "__name__", op if isinstance(op, str) else None)
    return _OPERATOR_ALIASES.get(name, name) if isinstance(name, str) else None


def _tensor(value, what):
    if not isinstance(value, NkiTensor):
        tr.fail("bad-operand", f"{what} must be a tensor, got {type(value).__name__}")
    return value


def _is_scalar(value):
    return (
        isinstance(value, numbers.Number) and not isinstance(value, bool) or isinstance(value, bool)
    )


def _note_reads(*tensors):
    # A PSUM result read by another engine ends its accumulation group.
    trace = _trace()
    for t in tensors:
        if isinstance(t, NkiTensor) and t.memory == tr.PSUM and trace.matmul_written:
            index = t.buffer.index
            trace.matmul_written = {k for k in trace.matmul_written if k[0] != index}


def emit(
    opcode,
    engine_code,
    dst=None,
    dst2=None,
    src0=None,
    src1=None,
    src2=None,
    src3=None,
    alu0=0,
    alu1=0,
    function=0,
    flags=0,
    reduce_dims=1,
    pattern=(0, 0, 0, 0),
    imm0=0.0,
    imm1=0.0,
    imm2=0.0,
    indirect=None,
):
    if opcode not in (tr.MATMUL, tr.MATMUL_MX):
        _note_reads(src0, src1, src2, src3)
    for t in (dst, dst2, src0, src1, src2, src3):
        if isinstance(t, NkiTensor) and t.indirect is not None and indirect is None:
            tr.fail(
                "unsupported",
                "an access pattern with a run-time offset (scalar_offset / vector_offset) is "
                "an operand of dma_copy only",
            )
    return _trace().emit(
        opcode,
        engine_code,
        dst=dst,
        dst2=dst2,
        src0=src0,
        src1=src1,
        src2=src2,
        src3=src3,
        alu0=alu0,
        alu1=alu1,
        function=function,
        flags=flags,
        reduce_dims=reduce_dims,
        pattern=tuple(pattern),
        imm0=float(imm0),
        imm1=float(imm1),
        imm2=float(imm2),
        indirect=indirect,
    )


# ---------------------------------------------------------------- Tensor engine
def nc_matmul(
    dst,
    stationary,
    moving,
    is_stationary_onezero=False,
    is_moving_onezero=False,
    is_transpose=False,
    accumulate=None,
    tile_position=(),
    tile_size=(),
    perf_mode=None,
    name=None,
    **_ignored,
):
    """dst[M,N] (+)= stationary[K,M].T @ moving[K,N]. With accumulate=None a matmul adds to
    what an earlier matmul wrote to the same PSUM tile, until another engine reads it.
    is_transpose=True is the Tensor engine's transpose mode: dst = stationary.T, bit for bit,
    with `moving` the identity the array multiplies by (kernels pass one; it is not read)."""
    _tensor(dst, "dst"), _tensor(stationary, "stationary"), _tensor(moving, "moving")
    if is_transpose:
        return nc_transpose(dst, stationary)
    if perf_mode == matmul_perf_mode.double_row and stationary.ndim == 3 and moving.ndim == 3:
        # [K, 2, M] and [K, 2, N]: both rows of a partition contract (2K terms). Run as two
        # accumulating passes; the hardware's one double-rate pass is faster than this costs.
        nc_matmul(dst, stationary[:, 0, :], moving[:, 0, :], accumulate=accumulate)
        return nc_matmul(dst, stationary[:, 1, :], moving[:, 1, :], accumulate=True)
    flags = 1 if _accumulates(dst, accumulate) else 0
    return emit(tr.MATMUL, tr.TENSOR, dst=dst, src0=stationary, src1=moving, flags=flags)


def _accumulates(dst, accumulate):
    """Whether a matmul into `dst` adds to it: `accumulate`, or when None, whether an earlier
    matmul wrote the same PSUM tile (and no other engine has read it since)."""
    trace = _trace()
    key = (dst.buffer.index, dst.start_partition, dst.offset)
    if accumulate is None:
        accumulate = key in trace.matmul_written
    trace.matmul_written.add(key)
    return accumulate


def nc_matmul_mx(
    dst,
    stationary,
    moving,
    stationary_scale,
    moving_scale,
    tile_position=None,
    tile_size=None,
    accumulate=None,
    name=None,
    **_ignored,
):
    """dst[M,N] (+)= the MX product of stationary [K, M] and moving [K, N] (fp8/fp4 _x4 types,
    four values an element), each value times 2^(scale - 127) of its group of 8 partitions x
    4 values (uint8 scales, laid out as quantize_mx writes them). NeuronCore-v4 (trn3) only.
    accumulate as nc_matmul's; tile_position/tile_size (row tiling) do not change the result."""
    _tensor(dst, "dst"), _tensor(stationary, "stationary"), _tensor(moving, "moving")
    accumulate = _accumulates(dst, accumulate)
    return emit(
        tr.MATMUL_MX,
        tr.TENSOR,
        dst=dst,
        src0=stationary,
        src1=moving,
        src2=_tensor(stationary_scale, "stationary_scale"),
        src3=_tensor(moving_scale, "moving_scale"),
        flags=1 if accumulate else 0,
    )


def quantize_mx(dst, src, dst_scale, name=None, **_ignored):
    """dst [P, F/4] (float8_e4m3fn_x4 / float8_e5m2_x4) = src [P, F] (bf16/fp16) quantized in
    groups of 8 partitions x 4 values, each group's uint8 scale written to dst_scale at
    partition 32*(g//4) + g%4 of group row g. NeuronCore-v4 (trn3) only."""
    return emit(
        tr.QUANTIZE_MX,
        tr.VECTOR,
        dst=_tensor(dst, "dst"),
        dst2=_tensor(dst_scale, "dst_scale"),
        src0=_tensor(src, "src"),
    )


def nc_transpose(dst, data, engine=None, name=None, **_ignored):
    """dst[F,P] = data[P,F]: on the Tensor engine into PSUM, or the Vector engine (≤ 32×32)."""
    _tensor(dst, "dst"), _tensor(data, "data")
    if engine is None:
        engine = tr.TENSOR if dst.memory == tr.PSUM else tr.VECTOR
    return emit(tr.TRANSPOSE, engine, dst=dst, src0=data)


# ---------------------------------------------------------------- Scalar engine
def activation(
    dst,
    op,
    data,
    bias=None,
    scale=1.0,
    reduce_op=None,
    reduce_res=None,
    reduce_cmd=None,
    name=None,
    **_ignored,
):
    """dst = op(data * scale + bias); with reduce_op, reduce_res[p] = reduction of the row."""
    _tensor(dst, "dst"), _tensor(data, "data")
    fields = dict(dst=dst, src0=data, function=activation_code(op))
    if isinstance(bias, NkiTensor):
        fields["src1"] = bias
    elif bias is not None:
        fields["imm1"] = float(bias)
    if isinstance(scale, NkiTensor):
        fields["src2"] = scale
    else:
        fields["imm0"] = float(scale)
    if reduce_op is not None:
        fields["alu1"] = alu_code(reduce_op)
        fields["dst2"] = _tensor(reduce_res, "reduce_res")
    return emit(tr.ACTIVATION, tr.SCALAR, **fields)


def activation_reduce(
    dst, op, data, reduce_op, reduce_res, bias=None, scale=1.0, name=None, **_ignored
):
    return activation(
        dst, op, data, bias=bias, scale=scale, reduce_op=reduce_op, reduce_res=reduce_res
    )


# ---------------------------------------------------------------- Vector engine
def tensor_tensor(dst, data1, data2, op, engine=None, name=None, **_ignored):
    _tensor(dst, "dst"), _tensor(data1, "data1"), _tensor(data2, "data2")
    return emit(
        tr.TENSOR_TENSOR,
        tr.VECTOR if engine is None else engine,
        dst=dst,
        src0=data1,
        src1=data2,
        alu0=alu_code(op),
    )


def tensor_scalar(
    dst,
    data,
    op0,
    operand0,
    reverse0=False,
    op1=None,
    operand1=None,
    reverse1=False,
    engine=None,
    name=None,
    **_ignored,
):
    """dst = (data op0 operand0) op1 operand1; operands are numbers or [P,1] tiles."""
    _tensor(dst, "dst"), _tensor(data, "data")
    fields = dict(
        dst=dst,
        src0=data,
        alu0=alu_code(op0),
        alu1=alu_code(op1),
        flags=(2 if reverse0 else 0) | (4 if reverse1 else 0),
    )
    if isinstance(operand0, NkiTensor):
        fields["src1"] = operand0
    else:
        fields["imm0"] = float(operand0)
    if op1 is not None:
        if isinstance(operand1, NkiTensor):
            fields["src2"] = operand1
        else:
            fields["imm1"] = float(operand1)
    return emit(tr.TENSOR_SCALAR, tr.VECTOR if engine is None else engine, **fields)


def scalar_tensor_tensor(
    dst, data, op0, operand0, op1, operand1, reverse0=False, reverse1=False, name=None, **_ignored
):
    """dst = (data op0 operand0) op1 operand1 with operand1 a tile: two Vector instructions,
    the intermediate kept in fp32, in a scratch tile when dst is narrower or when dst shares
    a buffer with operand1 (``dst = data * s + dst`` accumulates: writing the intermediate into
    dst first would overwrite the operand it adds)."""
    from openneuron.nki.dtypes import float32

    middle = dst
    shares_operand1 = isinstance(operand1, NkiTensor) and operand1.buffer is dst.buffer
    if dst.dtype is not float32 or shares_operand1:
        scratch = _trace().new_buffer(None, tr.SBUF, float32, dst.shape)
        middle = NkiTensor(scratch)
    tensor_scalar(middle, data, op0, operand0, reverse0=reverse0)
    if reverse1:
        return tensor_tensor(dst, operand1, middle, op1)
    return tensor_tensor(dst, middle, operand1, op1)


def _reduce_view(data, axis):
    """`data` with the reduced free axes moved last, and how many they are."""
    axes = (axis,) if isinstance(axis, int) else tuple(axis)
    axes = sorted(a % data.ndim for a in axes)
    if 0 in axes:
        tr.fail(
            "bad-operand",
            "tensor_reduce reduces free axes only; the partition axis 0 "
            "needs tensor_partition_reduce",
        )
    kept = [d for d in range(data.ndim) if d not in axes]
    order = kept + axes
    view = NkiTensor(
        data.buffer,
        data.dtype,
        tuple(data.shape[d] for d in order),
        tuple(data.strides[d] for d in order),
        data.offset,
        data.start_partition,
    )
    return view, len(axes)


def tensor_reduce(dst, op, data, axis, negate=False, keepdims=False, name=None, **_ignored):
    _tensor(dst, "dst"), _tensor(data, "data")
    view, count = _reduce_view(data, axis)
    return emit(
        tr.TENSOR_REDUCE,
        tr.VECTOR,
        dst=dst,
        src0=view,
        alu0=alu_code(op),
        reduce_dims=count,
        flags=8 if negate else 0,
    )


def tensor_partition_reduce(dst, op, data, name=None, **_ignored):
    return emit(
        tr.PARTITION_REDUCE,
        tr.GPSIMD,
        dst=_tensor(dst, "dst"),
        src0=_tensor(data, "data"),
        alu0=alu_code(op),
    )


def tensor_tensor_scan(
    dst, data0, data1, initial, op0, op1, reverse0=False, reverse1=False, name=None, **_ignored
):
    fields = dict(
        dst=_tensor(dst, "dst"),
        src0=_tensor(data0, "data0"),
        src1=_tensor(data1, "data1"),
        alu0=alu_code(op0),
        alu1=alu_code(op1),
    )
    if isinstance(initial, NkiTensor):
        fields["src2"] = initial
    else:
        fields["imm0"] = float(initial)
    return emit(tr.TENSOR_TENSOR_SCAN, tr.VECTOR, **fields)


def tensor_copy(dst, src, engine=None, name=None, dtype=None, **_ignored):
    """dst = src converted to dst's dtype. ``dtype`` (which the current API still takes, as
    the matmul tutorial passes it) names the type the value passes through: equal to dst's,
    it changes nothing; otherwise the copy rounds to it first (a second copy, through a
    scratch tile), so the result is what a cast to `dtype` then to dst's dtype gives."""
    dst, src = _tensor(dst, "dst"), _tensor(src, "src")
    engine = tr.VECTOR if engine is None else engine
    if dtype is not None:
        from openneuron.nki.dtypes import as_dtype

        dtype = as_dtype(dtype)
        if dtype is not dst.dtype:
            middle = NkiTensor(_trace().new_buffer(None, tr.SBUF, dtype, dst.shape))
            emit(tr.TENSOR_COPY, engine, dst=middle, src0=src)
            src = middle
    return emit(tr.TENSOR_COPY, engine, dst=dst, src0=src)


def memset(dst, value, engine=None, name=None, **_ignored):
    return emit(
        tr.MEMSET,
        tr.VECTOR if engine is None else engine,
        dst=_tensor(dst, "dst"),
        imm0=float(value),
    )


def reciprocal(dst, data, name=None, **_ignored):
    return tensor_scalar(dst, data, "divide", 1.0, reverse0=True)


def select(dst, predicate, on_true, on_false, name=None, **_ignored):
    return emit(
        tr.SELECT,
        tr.VECTOR,
        dst=_tensor(dst, "dst"),
        src0=_tensor(predicate, "pred"),
        src1=_tensor(on_true, "on_true"),
        src2=_tensor(on_false, "on_false"),
    )


def bn_stats(dst, data, name=None, **_ignored):
    return emit(tr.BN_STATS, tr.VECTOR, dst=_tensor(dst, "dst"), src0=_tensor(data, "data"))


def bn_aggr(dst, data, name=None, **_ignored):
    return emit(tr.BN_AGGR, tr.VECTOR, dst=_tensor(dst, "dst"), src0=_tensor(data, "data"))


# ---------------------------------------------------------------- GpSimd engine
def _pattern_steps(dst, pattern):
    steps = [int(step) for step, _ in pattern]
    counts = [int(count) for _, count in pattern]
    if counts != list(dst.shape[1:]):
        if dst.free_size == _product(counts) and dst._is_contiguous():
            dst = dst.reshape([dst.partitions] + counts)
        else:
            tr.fail("shape-mismatch", f"pattern {pattern} does not describe dst {dst!r}")
    if len(steps) > 4:
        tr.fail("bad-operand", "a pattern has at most 4 free dimensions")
    return dst, steps + [0] * (4 - len(steps))


def _product(values):
    result = 1
    for v in values:
        result *= v
    return result


def iota(dst, pattern, offset=0, channel_multiplier=0, name=None, **_ignored):
    """dst[p, i...] = offset + channel_multiplier * p + Σ step_k * i_k."""
    dst, steps = _pattern_steps(_tensor(dst, "dst"), pattern)
    return emit(tr.IOTA, tr.GPSIMD, dst=dst, pattern=steps, imm0=offset, imm1=channel_multiplier)


def affine_select(
    dst,
    pattern,
    channel_multiplier,
    on_true_tile,
    on_false_value,
    cmp_op=None,
    offset=0,
    name=None,
    **_ignored,
):
    """dst = on_true_tile where (offset + channel_multiplier*p + Σ step*i) cmp_op 0, else
    on_false_value."""
    dst, steps = _pattern_steps(_tensor(dst, "dst"), pattern)
    data = _tensor(on_true_tile, "on_true_tile")
    if data.shape != dst.shape:
        data = data.reshape(dst.shape)
    return emit(
        tr.AFFINE_SELECT,
        tr.GPSIMD,
        dst=dst,
        src0=data,
        pattern=steps,
        alu0=alu_code(cmp_op if cmp_op is not None else "greater_equal"),
        imm0=offset,
        imm1=channel_multiplier,
        imm2=on_false_value,
    )


# ---------------------------------------------------------------- DMA
def dma_copy(dst, src, dst_rmw_op=None, oob_mode=None, dge_mode=None, name=None, **_ignored):
    if dst_rmw_op is not None:
        tr.fail("unsupported", "dma_copy with dst_rmw_op (DMA compute) is not simulated")
    dst, src = _tensor(dst, "dst"), _tensor(src, "src")
    if dst.indirect is not None and src.indirect is not None:
        tr.fail("unsupported", "dma_copy with run-time offsets on both dst and src")
    moved = dst if dst.indirect is not None else src
    indirect = None
    if moved.indirect is not None:
        kind, index, stride, bound = moved.indirect
        skip = oob_mode == _OOB_SKIP
        indirect = (kind, int(moved is dst), int(skip), stride, bound, index)
    return emit(tr.DMA_COPY, tr.DMA, dst=dst, src0=src, indirect=indirect)


# Instruction flags of dma_transpose's DMAs. The DMA engines reorder the elements themselves
# (AWS's hardware-DGE transpose), so the cost model takes a transfer's descriptors from its
# contiguous side (a plain copy with the same scatter pays a descriptor per element). An
# on-chip source becomes one DMA per partition: those pieces are one transfer, spread over
# every engine, each after the first marked as continuing it (no waiting on the one before).
_DMA_TRANSPOSE = 32
_TRANSFER_PIECE = 64
_CONTINUES_TRANSFER = 128


def dma_transpose(dst, src, axes=None, dge_mode=None, name=None, **_ignored):
    """dst = src with its dimensions permuted by ``axes`` (default: the first and last
    swapped), by the DMA engines."""
    _tensor(dst, "dst"), _tensor(src, "src")
    if src.on_chip:
        if axes is None:
            axes = (src.ndim - 1,) + tuple(range(1, src.ndim - 1)) + (0,)
        return _on_chip_dma_transpose(dst, src, tuple(int(a) for a in axes))
    if axes is None:
        axes = _DEFAULT_TRANSPOSE_AXES.get(src.ndim)
        if axes is None:
            tr.fail("unsupported", f"dma_transpose of a {src.ndim}-D view {list(src.shape)}")
    axes = tuple(int(a) for a in axes)
    if sorted(axes) != list(range(src.ndim)):
        tr.fail("bad-operand", f"dma_transpose axes {axes} for a {src.ndim}-D src")
    # From HBM the permutation is a strided read: the DMA walks it and dst in row-major order.
    view = NkiTensor(
        src.buffer,
        src.dtype,
        tuple(src.shape[a] for a in axes),
        tuple(src.strides[a] for a in axes),
        src.offset,
        src.start_partition,
    )
    return emit(tr.DMA_COPY, tr.DMA, dst=dst, src0=view, flags=_DMA_TRANSPOSE)


# The permutation dma_transpose applies when given no axes, by the source's rank.
_DEFAULT_TRANSPOSE_AXES = {2: (1, 0), 3: (2, 1, 0), 4: (3, 1, 2, 0)}


def dma_compute(dst, srcs, reduce_op=None, scales=None, unique_indices=True, name=None, **_ignored):
    """dst = srcs[0] * scales[0] + srcs[1] * scales[1] + ... (up to three sources; scales
    default to 1.0), computed in fp32 by the DMA engines and rounded once to dst's dtype;
    every operand in HBM or SBUF, walked in row-major order. reduce_op must be add."""
    _tensor(dst, "dst")
    srcs = list(srcs)
    for k, src in enumerate(srcs):
        _tensor(src, f"srcs[{k}]")
        if src.indirect is not None:
            tr.fail("unsupported", "dma_compute with a run-time offset (read-modify-write)")
    if not 1 <= len(srcs) <= 3:
        tr.fail("unsupported", f"dma_compute of {len(srcs)} sources: 1 to 3 are simulated")
    if reduce_op is not None and alu_code(reduce_op) != ALU_OPERATORS["add"]:
        tr.fail("unsupported", f"dma_compute with reduce_op={reduce_op!r}: only add is")
    scales = [1.0] * len(srcs) if scales is None else [float(v) for v in scales]
    if len(scales) != len(srcs):
        tr.fail("bad-operand", f"dma_compute has {len(srcs)} sources and {len(scales)} scales")
    fields = {f"src{k}": src for k, src in enumerate(srcs)}
    fields.update({f"imm{k}": scale for k, scale in enumerate(scales)})
    return emit(tr.DMA_COMPUTE, tr.DMA, dst=dst, **fields)


def _on_chip_dma_transpose(dst, src, axes):
    """dst[i_0, ..] = src[i_axes[0], ..] for an on-chip src: one DMA per src partition p, moving
    that partition's elements to where dst holds index p of src's partition axis."""
    if sorted(axes) != list(range(src.ndim)) or dst.ndim != src.ndim:
        tr.fail(
            "bad-operand", f"dma_transpose axes {axes} for {src.ndim}-D src and {dst.ndim}-D dst"
        )
    if any(dst.shape[k] != src.shape[a] for k, a in enumerate(axes)):
        tr.fail(
            "shape-mismatch",
            f"dma_transpose of {list(src.shape)} by axes {axes} gives "
            f"{[src.shape[a] for a in axes]}, dst is {list(dst.shape)}",
        )
    at = list(axes).index(0)  # where src's partition axis lands in dst
    rest = [k for k in range(dst.ndim) if k != at]
    for p in range(src.shape[0]):
        src_row = NkiTensor(
            src.buffer,
            src.dtype,
            (1,) + tuple(src.shape[axes[k]] for k in rest),
            (1,) + tuple(src.strides[axes[k]] for k in rest),
            src.offset,
            src.start_partition + p * src.strides[0],
        )
        if at == 0 and dst.on_chip:
            dst_part = NkiTensor(
                dst.buffer,
                dst.dtype,
                (1,) + tuple(dst.shape[k] for k in rest),
                (1,) + tuple(dst.strides[k] for k in rest),
                dst.offset,
                dst.start_partition + p * dst.strides[0],
            )
        else:
            dst_part = NkiTensor(
                dst.buffer,
                dst.dtype,
                tuple(dst.shape[k] for k in rest),
                tuple(dst.strides[k] for k in rest),
                dst.offset + p * dst.strides[at],
                dst.start_partition,
            )
        flags = _DMA_TRANSPOSE | _TRANSFER_PIECE | (_CONTINUES_TRANSFER if p > 0 else 0)
        emit(tr.DMA_COPY, tr.DMA, dst=dst_part, src0=src_row, flags=flags)


def max8(dst, src, name=None, **_ignored):
    """dst[P, 8] = the 8 largest values of each partition of src (8 to 16384 elements), in
    descending order, as fp32 converted to dst's dtype."""
    _tensor(dst, "dst"), _tensor(src, "src")
    return emit(tr.MAX8, tr.VECTOR, dst=dst, src0=src)


def nc_find_index8(dst, data, vals, name=None, **_ignored):
    """dst[P, 8] (uint16 or uint32) = for each of the 8 values vals[p, :], the index of the
    first element of partition p of data equal to it (row-major over data's free axes), or
    all ones when none is."""
    _tensor(dst, "dst"), _tensor(data, "data"), _tensor(vals, "vals")
    return emit(tr.FIND_INDEX8, tr.VECTOR, dst=dst, src0=data, src1=vals)


def tensor_scalar_reduce(
    dst, data, op0, operand0, reduce_op, reduce_res, reverse0=False, name=None, **_ignored
):
    """dst = data op0 operand0, and reduce_res[p] = reduce_op over that row (of the fp32
    values, before dst's rounding): one Vector instruction, as on the hardware."""
    _tensor(dst, "dst"), _tensor(data, "data")
    fields = dict(
        dst=dst,
        dst2=_tensor(reduce_res, "reduce_res"),
        src0=data,
        alu0=alu_code(op0),
        alu1=alu_code(reduce_op),
        flags=2 if reverse0 else 0,
    )
    if isinstance(operand0, NkiTensor):
        fields["src1"] = operand0
    else:
        fields["imm0"] = float(operand0)
    return emit(tr.TENSOR_SCALAR, tr.VECTOR, **fields)


def nc_stream_shuffle(dst, src, shuffle_mask, name=None, **_ignored):
    """dst partition 32q + i = src partition 32q + shuffle_mask[i] in each quadrant of 32
    (255: left as it was), on the Vector engine."""
    dst, src = _tensor(dst, "dst"), _tensor(src, "src")
    mask = [int(m) for m in shuffle_mask]
    if len(mask) != 32 or any(not (0 <= m < 32 or m == 255) for m in mask):
        tr.fail("bad-operand", f"shuffle_mask is 32 partitions in 0..31 or 255, got {mask}")
    words = [sum(mask[8 * w + b] << (8 * b) for b in range(8)) for w in range(4)]
    words = [w - (1 << 64) if w >= 1 << 63 else w for w in words]  # as int64
    return emit(tr.STREAM_SHUFFLE, tr.VECTOR, dst=dst, src0=src, pattern=words)


def nonzero_with_count(dst, src, index_offset=0, padding_val=-1, name=None, **_ignored):
    """On partitions 0, 16, ..., 112 of src [P, F] (the one each GpSimd core reads): dst's
    same partition [F + 1] = the indices (plus index_offset) of the nonzero elements in order,
    padding_val up to F, then their count. dst's other partitions are left as they were."""
    dst, src = _tensor(dst, "dst"), _tensor(src, "src")
    return emit(
        tr.NONZERO_WITH_COUNT,
        tr.GPSIMD,
        dst=dst,
        src0=src,
        imm0=float(index_offset),
        imm1=float(padding_val),
    )


def core_barrier(data=None, cores=None, name=None, **_ignored):
    """Waits until every program of the launch reaches this barrier (the programs of an LNC=2
    launch share HBM and run at once). In a one-program launch there is nothing to wait for
    (its own accesses are ordered by their dependencies) and no instruction is emitted."""
    trace = _trace()
    programs = 1
    for n in trace.num_programs:
        programs *= n
    if programs > 1:
        emit(tr.CORE_BARRIER, tr.GPSIMD)


# Instruction flag: a DMA that moves never-written bytes along instead of failing on them.
_CARRIES_UNWRITTEN = 16


def sendrecv(
    src, dst, send_to_rank, recv_from_rank, pipe_id=0, dma_engine=None, name=None, **_ignored
):
    """Exchanges tiles between the programs (cores) of a launch: `src` goes to program
    `send_to_rank`, `dst` receives what program `recv_from_rank` sent. Carried through HBM the
    programs share: each writes `src` to its own slot of a tensor every program creates at
    this call (they are matched by creation order), waits at a barrier, then reads the
    sender's slot into `dst`; timed as those two DMAs and the barrier (the hardware moves the
    tile once, core to core, so this overstates the cost). pipe_id and dma_engine choose the
    hardware's queue and engine; they do not change the result."""
    _tensor(src, "src"), _tensor(dst, "dst")
    trace = _trace()
    programs, rank = 1, 0
    for extent, index in zip(trace.num_programs, trace.program_id, strict=True):
        programs, rank = programs * extent, rank * extent + index
    for role, value in (("send_to_rank", send_to_rank), ("recv_from_rank", recv_from_rank)):
        if not isinstance(value, numbers.Integral) or not 0 <= int(value) < programs:
            tr.fail(
                "bad-operand", f"sendrecv {role}={value!r}: the launch has {programs} program(s)"
            )
    if tuple(src.shape) != tuple(dst.shape):
        tr.fail("shape-mismatch", f"sendrecv moves {list(src.shape)} into {list(dst.shape)}")
    slots = NkiTensor(
        trace.new_buffer(name and f"{name}_exchange", tr.HBM, src.dtype, (programs, *src.shape))
    )
    # The move carries what the tile holds: bytes never written arrive never written.
    sent = dma_copy(slots[rank], src)
    trace.instructions[sent][2]["flags"] |= _CARRIES_UNWRITTEN
    core_barrier()
    received = dma_copy(dst, slots[int(recv_from_rank)])
    trace.instructions[received][2]["flags"] |= _CARRIES_UNWRITTEN
    return received


def nc_match_replace8(dst, data, vals, imm, dst_idx=None, name=None, **_ignored):
    """dst = data with the first element equal to each of the 8 values vals[p, :] replaced
    by imm, the values taken last to first (duplicates pair with successive matches, the
    first match going to the highest slot); dst_idx[p, v], when given, = the index of value
    v's match (row-major over data's free axes), all ones when none."""
    _tensor(dst, "dst"), _tensor(data, "data"), _tensor(vals, "vals")
    if dst_idx is not None:
        _tensor(dst_idx, "dst_idx")
    if not _is_scalar(imm):
        tr.fail("bad-operand", f"imm is a Python number, got {type(imm).__name__}")
    return emit(tr.MATCH_REPLACE8, tr.VECTOR, dst=dst, dst2=dst_idx, src0=data, src1=vals, imm0=imm)


# The float32 value nl.fp32.min names: what on_false_value defaults to.
_FLOAT32_LOWEST = -3.4028234663852886e38


def range_select(
    dst,
    on_true_tile,
    comp_op0,
    comp_op1,
    bound0,
    bound1,
    reduce_cmd=None,
    reduce_res=None,
    reduce_op=None,
    range_start=0.0,
    on_false_value=None,
    name=None,
    **_ignored,
):
    """dst[p, j] = on_true_tile[p, j] where (j + range_start) comp_op0 bound0[p] and
    (j + range_start) comp_op1 bound1[p], else on_false_value (default the lowest float32);
    with reduce_res, reduce_res[p] = reduce_op (default maximum) over that dst row. The
    accumulating reduce commands (`reduce`, `reset` without reducing) keep a register across
    instructions, which is not modelled: they are refused."""
    _tensor(dst, "dst"), _tensor(on_true_tile, "on_true_tile")
    _tensor(bound0, "bound0"), _tensor(bound1, "bound1")
    if reduce_cmd not in (None, globals()["reduce_cmd"].idle, globals()["reduce_cmd"].reset_reduce):
        tr.fail(
            "unsupported",
            f"range_select with reduce_cmd={reduce_cmd!r}: only idle and "
            "reset_reduce (this row's reduction alone) are simulated",
        )
    if on_false_value is None or on_false_value is Ellipsis or not _is_scalar(on_false_value):
        on_false_value = _FLOAT32_LOWEST
    fields = dict(
        dst=dst,
        src0=on_true_tile,
        src1=bound0,
        src2=bound1,
        alu0=alu_code(comp_op0),
        alu1=alu_code(comp_op1),
        imm0=float(range_start),
        imm1=float(on_false_value),
    )
    if reduce_res is not None:
        fields["dst2"] = _tensor(reduce_res, "reduce_res")
        fields["pattern"] = (alu_code(reduce_op if reduce_op is not None else "maximum"), 0, 0, 0)
    return emit(tr.RANGE_SELECT, tr.VECTOR, **fields)


def nc_n_gather(dst, data, indices, name=None, **_ignored):
    """dst[p, i...] = data[p, indices[p, i...]] on the GpSimd engine: within each partition,
    data's free axes flattened in row-major order; indices (uint32) shape dst. Bits move
    unchanged; an index outside [0, elements of a data partition) is out-of-bounds."""
    return emit(
        tr.N_GATHER,
        tr.GPSIMD,
        dst=_tensor(dst, "dst"),
        src0=_tensor(data, "data"),
        src1=_tensor(indices, "indices"),
    )


def tensor_copy_predicated(dst, src, predicate, reverse_pred=False, name=None, **_ignored):
    """dst = src where predicate (uint8/16/32) is nonzero, or zero under reverse_pred; dst keeps
    its values elsewhere. src is a tile of dst's dtype or a Python number (converted to dst's
    dtype). Vector engine; src and predicate not both in PSUM."""
    fields = dict(dst=_tensor(dst, "dst"), src1=_tensor(predicate, "predicate"))
    if isinstance(src, NkiTensor):
        fields["src0"] = src
    elif _is_scalar(src):
        fields["imm0"] = float(src)
    else:
        tr.fail("bad-operand", f"src is a tile or a Python number, got {type(src).__name__}")
    fields["flags"] = 2 if reverse_pred else 0
    return emit(tr.TENSOR_COPY_PREDICATED, tr.VECTOR, **fields)


def _not_simulated(name):
    def instruction(*args, **kwargs):
        tr.fail("unsupported", f"nisa.{name} is not simulated yet")

    instruction.__name__ = name
    return instruction


# Named so kernels import; each raises a KernelTraceError naming itself when called.
for _name in (
    "local_gather",
    "register_alloc",
    "register_load",
):
    globals()[_name] = _not_simulated(_name)
del _name


_arguments.wrap_module(globals(), "nisa")
