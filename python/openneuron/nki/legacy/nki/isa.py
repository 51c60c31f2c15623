"""``neuronxcc.nki.isa``: the older generation's ``nisa``, whose compute calls return their
result tile instead of taking ``dst``.

Each call allocates its result (SBUF; PSUM for ``nc_matmul`` and a Tensor-engine
``nc_transpose``; dtype ``dtype=`` or the input's, fp32 for matmul) and emits the same
instruction as the current API's call. ``psum[...] += nisa.nc_matmul(...)`` accumulates, and
``mask=`` is the trace-time predicate of the older ``nl`` (see its ``masked``). Calls that
already took ``dst`` (``dma_copy``, ...) are the current API's.
"""

from openneuron.nki import isa as _current
from openneuron.nki import trace as _tr
from openneuron.nki.index_grid import GridExpr, Mask
from openneuron.nki.isa import *  # noqa: F401,F403
from openneuron.nki.language import _result_dtype, float32, ndarray, psum, sbuf
from openneuron.nki.legacy.nki.language import masked
from openneuron.nki.tensor import NkiTensor


def _out(shape, dtype, buffer=sbuf):
    return ndarray(shape, dtype, buffer)


def _in_sbuf(tile):
    """`tile`, or an SBUF copy of it (Vector engine) when it is in PSUM: kernels of this
    generation pass a matmul's or a transpose's result straight to engines that read SBUF
    only (the Tensor engine's operands, GpSimd), and AWS's compiler stages it."""
    if tile.memory != _tr.PSUM:
        return tile
    staged = _out(tile.shape, tile.dtype)
    _current.tensor_copy(staged, tile)
    return staged


def _nc_matmul(
    stationary,
    moving,
    is_stationary_onezero=False,
    is_moving_onezero=False,
    is_transpose=False,
    perf_mode=None,
    **_ignored,
):
    """stationary[K, M].T @ moving[K, N] into a new fp32 PSUM tile [M, N]."""
    if is_transpose:
        return _nc_transpose(stationary)
    stationary, moving = _in_sbuf(stationary), _in_sbuf(moving)
    result = _out((stationary.free_size, moving.free_size), float32, psum)
    index = _current.nc_matmul(result, stationary, moving, accumulate=False)
    result.pending_matmul = index
    return result


def _nc_transpose(data, engine=None, dtype=None, **_ignored):
    """data[P, F] transposed: on the Tensor engine into PSUM (the default), or the Vector
    engine (at most 32 × 32) into SBUF."""
    on_vector = engine == _current.vector_engine
    result = _out(
        (data.free_size, data.partitions), dtype or data.dtype, sbuf if on_vector else psum
    )
    _current.nc_transpose(result, data, engine=engine)
    return result


def _activation(
    op, data, bias=None, scale=1.0, reduce_op=None, reduce_res=None, dtype=None, **_ignored
):
    result = _out(data.shape, dtype or data.dtype)
    _current.activation(
        result, op, data, bias=bias, scale=scale, reduce_op=reduce_op, reduce_res=reduce_res
    )
    return result


def _activation_reduce(
    op, data, reduce_op, reduce_res, bias=None, scale=1.0, dtype=None, **_ignored
):
    return _activation(op, data, bias, scale, reduce_op, reduce_res, dtype)


def _tensor_tensor(data1, data2, op, dtype=None, engine=None, **_ignored):
    result = _out(data1.shape, dtype or _result_dtype(data1, data2))
    _current.tensor_tensor(result, data1, data2, op, engine=engine)
    return result


def _tensor_scalar(
    data, op0, operand0, reverse0=False, op1=None, operand1=None, reverse1=False, dtype=None,
    engine=None, **_ignored,
):  # fmt: skip
    result = _out(data.shape, dtype or data.dtype)
    _current.tensor_scalar(result, data, op0, operand0, reverse0, op1, operand1, reverse1, engine)
    return result


def _tensor_partition_reduce(op, data, dtype=None, **_ignored):
    """data [P, F...] reduced across its partitions into a new [1, F...] tile (GpSimd)."""
    result = _out((1, *data.shape[1:]), dtype or data.dtype)
    _current.tensor_partition_reduce(result, op, _in_sbuf(data))
    return result


def _tensor_reduce(op, data, axis, dtype=None, negate=False, keepdims=False, **_ignored):
    from openneuron.nki import language as nl

    return nl._reduce(op, data, axis, dtype, keepdims, negate=negate)


def _tensor_copy(src, dtype=None, engine=None, **_ignored):
    result = _out(src.shape, dtype or src.dtype)
    _current.tensor_copy(result, src, engine=engine)
    return result


def _reciprocal(data, dtype=None, **_ignored):
    result = _out(data.shape, dtype or data.dtype)
    _current.reciprocal(result, data)
    return result


def _tensor_tensor_scan(
    data0, data1, initial, op0, op1, reverse0=False, reverse1=False, dtype=None, **_ignored
):
    result = _out(data0.shape, dtype or _result_dtype(data0, data1))
    _current.tensor_tensor_scan(result, data0, data1, initial, op0, op1, reverse0, reverse1)
    return result


def _bn_stats(data, dtype=None, **_ignored):
    result = _out((data.partitions, 6), dtype or data.dtype)
    _current.bn_stats(result, data)
    return result


def _bn_aggr(data, dtype=None, **_ignored):
    result = _out((data.partitions, 2), dtype or data.dtype)
    _current.bn_aggr(result, data)
    return result


def _tensor_scalar_reduce(
    data, op0, operand0, reduce_op, reduce_res, reverse0=False, dtype=None, **_ignored
):
    result = _out(data.shape, dtype or data.dtype)
    _current.tensor_scalar_reduce(result, data, op0, operand0, reduce_op, reduce_res, reverse0)
    return result


def _scalar_tensor_tensor(
    data, op0, operand0, op1, operand1, reverse0=False, reverse1=False, dtype=None, **_ignored
):
    result = _out(data.shape, dtype or data.dtype)
    _current.scalar_tensor_tensor(result, data, op0, operand0, op1, operand1, reverse0, reverse1)
    return result


def _max8(src, dtype=None, **_ignored):
    result = _out((src.partitions, 8), dtype or src.dtype)
    _current.max8(result, src)
    return result


def _iota(expr, dtype, **_ignored):
    """The values of an index-grid expression (offset + c·p + Σ step·i) as a new tile."""
    if not isinstance(expr, GridExpr):
        _tr.fail("bad-operand", f"nisa.iota takes an index-grid expression, got {expr!r}")
    shape = expr.shape
    result = _out(shape, dtype)
    pattern = [[expr.terms.get(a, 0), shape[a]] for a in range(1, len(shape))] or [[0, 1]]
    _current.iota(result, pattern, offset=expr.offset, channel_multiplier=expr.terms.get(0, 0))
    return result


def memset(shape, value, dtype, engine=None, mask=None, **_ignored):
    """A new SBUF tile of `shape` holding `value`."""
    if mask is not None:
        _tr.fail("unsupported", "nisa.memset under a mask")
    result = _out(shape, dtype)
    _current.memset(result, value, engine=engine)
    return result


_COMPARISONS = {"lt": "less", "le": "less_equal", "gt": "greater", "ge": "greater_equal",
                "eq": "equal", "ne": "not_equal"}  # fmt: skip


def _affine_select(pred, on_true_tile, on_false_value, dtype=None, **_ignored):
    """on_true_tile where the affine predicate `pred` (a comparison of index grids) holds,
    else on_false_value."""
    from openneuron.nki import language as nl

    if not isinstance(pred, Mask) or pred.parts is not None:
        _tr.fail("bad-operand", "affine_select takes one comparison of index grids as pred")
    difference = pred.left - pred.right if isinstance(pred.left, GridExpr) else None
    if difference is None:
        _tr.fail("bad-operand", "affine_select's predicate must have an index grid on its left")
    on_true_tile = _in_sbuf(on_true_tile)  # the GpSimd engine cannot read PSUM
    shape = on_true_tile.shape
    result = _out(shape, dtype or on_true_tile.dtype)
    pattern = [[difference.terms.get(a, 0), shape[a]] for a in range(1, len(shape))]
    _current.affine_select(
        result,
        pattern,
        difference.terms.get(0, 0),
        on_true_tile,
        on_false_value,
        cmp_op=getattr(nl, _COMPARISONS[pred.op]),
        offset=difference.offset,
    )
    return result


nc_matmul = masked(_nc_matmul, psum)
nc_transpose = masked(_nc_transpose, psum)
activation = masked(_activation)
activation_reduce = masked(_activation_reduce)
tensor_tensor = masked(_tensor_tensor)
tensor_scalar = masked(_tensor_scalar)
tensor_reduce = masked(_tensor_reduce)
tensor_partition_reduce = masked(_tensor_partition_reduce)
tensor_copy = masked(_tensor_copy)
reciprocal = masked(_reciprocal)
tensor_tensor_scan = masked(_tensor_tensor_scan)
bn_stats = masked(_bn_stats)
bn_aggr = masked(_bn_aggr)
tensor_scalar_reduce = masked(_tensor_scalar_reduce)
scalar_tensor_tensor = masked(_scalar_tensor_tensor)
max8 = masked(_max8)
iota = _iota
affine_select = masked(_affine_select)


def dma_copy(dst, src, mask=None, **options):
    """The current call; under a partial mask only the box is moved."""
    from openneuron.nki.legacy.nki.language import mask_box, restrict

    box = mask_box(mask, dst.shape)
    if box == "empty":
        return None
    return _current.dma_copy(restrict(dst, box), restrict(src, box), **options)


def _dst_first(name):
    """The current call, when a kernel of this generation already passes ``dst``."""
    older, newer = globals()[name], getattr(_current, name)

    def call(*args, **kwargs):
        if "dst" in kwargs or _takes_dst(name, args):
            return newer(*args, **kwargs)
        return older(*args, **kwargs)

    call.__name__ = name
    return call


def _takes_dst(name, args):
    # tensor_copy(dst, src) vs tensor_copy(src): two leading tiles mean dst-first;
    # tensor_partition_reduce(dst, op, data) vs (op, data): a leading tile does.
    if name == "tensor_partition_reduce":
        return len(args) >= 1 and isinstance(args[0], NkiTensor)
    return name == "tensor_copy" and len(args) >= 2 and isinstance(args[1], NkiTensor)


for _name in ("tensor_copy", "tensor_tensor", "activation", "tensor_scalar", "nc_transpose",
              "scalar_tensor_tensor", "tensor_partition_reduce"):  # fmt: skip
    globals()[_name] = _dst_first(_name)
del _name
