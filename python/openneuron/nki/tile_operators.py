"""NkiTensor's Python operators (``+ - * / **``, comparisons, unary ``-``, ``+=``, ``t[...] = v``)
and the older API's ``broadcast_to``: each is an nki.language or nki.isa call.

The language is built on tensors, so tensor.py cannot import it; this module, above both, gives
NkiTensor these methods when the nki package loads.
"""

from openneuron.nki import isa as nisa
from openneuron.nki import language as nl
from openneuron.nki import trace as tr
from openneuron.nki.tensor import NkiTensor


def _setitem(self, key, value):
    nl._assign(self[key], value)


def _broadcast_to(self, shape):
    """The older API's broadcast: free dimensions of size 1 become stride-0 views; a
    single partition is spread over `shape[0]` partitions by the Tensor engine (a matmul
    by a ones row, as partitions cannot be read with stride 0), copied back in dtype."""
    shape = tuple(int(s) for s in shape)
    if len(shape) != self.ndim or any(
        s != t and t != 1 for s, t in zip(shape, self.shape, strict=True)
    ):
        tr.fail("shape-mismatch", f"cannot broadcast {list(self.shape)} to {list(shape)}")
    strides = tuple(
        0 if t == 1 and s != 1 else st
        for s, t, st in zip(shape, self.shape, self.strides, strict=True)
    )
    if not self.on_chip or shape[0] == self.shape[0]:
        return self._view(
            shape, (self.strides[0],) + strides[1:], self.offset, self.start_partition
        )
    if self.shape[0] != 1:
        tr.fail("shape-mismatch", f"cannot broadcast {self.shape[0]} partitions to {shape[0]}")
    row = self if self.free_size == 1 or self._is_contiguous() else nl.copy(self)
    row = row.reshape(1, row.free_size) if row.ndim != 2 else row
    ones = nl.ndarray((1, shape[0]), dtype=self.dtype, buffer=nl.sbuf)
    nisa.memset(ones, 1.0)
    spread = nl.ndarray((shape[0], row.free_size), dtype=self.dtype, buffer=nl.sbuf)
    for start in range(0, row.free_size, 512):
        width = min(512, row.free_size - start)
        part = nl.ndarray((shape[0], width), dtype=nl.float32, buffer=nl.psum)
        nisa.nc_matmul(part, ones, row[:, start : start + width], accumulate=False)
        nisa.tensor_copy(spread[:, start : start + width], part)
    spread = spread.reshape((shape[0],) + tuple(self.shape[1:])) if self.ndim != 2 else spread
    return spread.broadcast_to(shape)


def _binary(self, other, op, reverse=False):
    function = getattr(nl, op)
    left, right = (other, self) if reverse else (self, other)
    if tr.current().valid_boxes:
        # A tile an older-API masked call left partly unwritten: compute its valid box. (Imported
        # here: the older API is loaded only by kernels written for it.)
        from openneuron.nki.legacy.nki.language import masked

        return masked(lambda a, b: nl._binary(function, a, b))(left, right)
    return nl._binary(function, left, right)


def _binary_method(op, reverse):
    def method(self, other):
        return _binary(self, other, op, reverse)

    return method


# Python's operator method -> (nki.language function, operands swapped).
_BINARY_OPERATORS = {
    "__add__": ("add", False),
    "__radd__": ("add", True),
    "__sub__": ("subtract", False),
    "__rsub__": ("subtract", True),
    "__mul__": ("multiply", False),
    "__rmul__": ("multiply", True),
    "__truediv__": ("divide", False),
    "__rtruediv__": ("divide", True),
    "__pow__": ("power", False),
    "__gt__": ("greater", False),
    "__ge__": ("greater_equal", False),
    "__lt__": ("less", False),
    "__le__": ("less_equal", False),
}

for _name, (_op, _reverse) in _BINARY_OPERATORS.items():
    setattr(NkiTensor, _name, _binary_method(_op, _reverse))
NkiTensor.__neg__ = lambda self: nl.negative(self)
NkiTensor.__iadd__ = lambda self, other: nl._accumulate(self, other)
NkiTensor.__setitem__ = _setitem
NkiTensor.broadcast_to = _broadcast_to
