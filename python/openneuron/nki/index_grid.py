"""Index grids of the older NKI API: ``nl.arange(n)[:, None]``, ``nl.mgrid[0:p, 0:f]`` and
affine expressions of them (``i * 128 + ix``), used as tensor indices and, compared, as masks.

A grid expression is ``offset + Σ coefficient_a · i_a`` over the axes ``a`` of a broadcast
grid of ``ndim`` axes, each axis with its extent. Indexing a tensor with one expression per
dimension gives a view whose axes are the grid's: every coefficient becomes a stride. A
comparison of expressions is a mask, which is a trace-time constant (loop indices are Python
integers), evaluated over the grid.
"""

import numpy as np

from openneuron.nki import trace as tr


class GridExpr:
    """``offset + Σ terms[a] · i_a`` over a grid of `ndim` axes with `extents[a]`."""

    __slots__ = ("ndim", "terms", "extents", "offset")

    def __init__(self, ndim, terms, extents, offset=0):
        self.ndim = ndim
        self.terms = dict(terms)
        self.extents = dict(extents)
        self.offset = offset

    # ---- shape
    @property
    def shape(self):
        return tuple(self.extents.get(a, 1) for a in range(self.ndim))

    def values(self):
        """The expression's value at every grid point (a NumPy array of the grid's shape)."""
        result = np.full(self.shape, self.offset, dtype=np.int64)
        for axis, coefficient in self.terms.items():
            view = [1] * self.ndim
            view[axis] = self.extents[axis]
            result = result + coefficient * np.arange(self.extents[axis]).reshape(view)
        return result

    def __getitem__(self, key):
        """``[:, None]`` / ``[None, :]``: places the grid's axes among new unit axes."""
        if not isinstance(key, tuple):
            key = (key,)
        kept = [k for k in key if k is not None]
        if len(kept) != self.ndim or any(k != slice(None) for k in kept):
            tr.fail("bad-index", f"an index grid takes ':' and None only, got {key}")
        mapping, position = {}, 0
        for new_axis, k in enumerate(key):
            if k is not None:
                mapping[position] = new_axis
                position += 1
        return GridExpr(
            len(key),
            {mapping[a]: c for a, c in self.terms.items()},
            {mapping[a]: e for a, e in self.extents.items()},
            self.offset,
        )

    # ---- arithmetic
    def _combine(self, other, sign):
        if isinstance(other, GridExpr):
            ndim = max(self.ndim, other.ndim)
            terms, extents = dict(self.terms), dict(self.extents)
            for axis, coefficient in other.terms.items():
                terms[axis] = terms.get(axis, 0) + sign * coefficient
            for axis, extent in other.extents.items():
                if extents.setdefault(axis, extent) != extent:
                    tr.fail(
                        "shape-mismatch",
                        f"index grids of extent {extents[axis]} and {extent} on one axis",
                    )
            return GridExpr(ndim, terms, extents, self.offset + sign * other.offset)
        return GridExpr(self.ndim, self.terms, self.extents, self.offset + sign * int(other))

    def __add__(self, other):
        return self._combine(other, 1)

    __radd__ = __add__

    def __sub__(self, other):
        return self._combine(other, -1)

    def __rsub__(self, other):
        return (-self)._combine(other, 1)

    def __neg__(self):
        return self * -1

    def __mul__(self, factor):
        if isinstance(factor, GridExpr):
            tr.fail("bad-index", "the product of two index grids is not affine")
        factor = int(factor)
        terms = {a: c * factor for a, c in self.terms.items()}
        return GridExpr(self.ndim, terms, self.extents, self.offset * factor)

    __rmul__ = __mul__

    # ---- comparisons make masks
    def _compare(self, other, name):
        return Mask(self, other, name)

    def __lt__(self, other):
        return self._compare(other, "lt")

    def __le__(self, other):
        return self._compare(other, "le")

    def __gt__(self, other):
        return self._compare(other, "gt")

    def __ge__(self, other):
        return self._compare(other, "ge")

    def __eq__(self, other):
        return self._compare(other, "eq")

    def __ne__(self, other):
        return self._compare(other, "ne")

    __hash__ = object.__hash__

    def __repr__(self):
        return f"GridExpr(shape={self.shape}, offset={self.offset}, terms={self.terms})"


_COMPARE = {
    "lt": np.less,
    "le": np.less_equal,
    "gt": np.greater,
    "ge": np.greater_equal,
    "eq": np.equal,
    "ne": np.not_equal,
}


def _grid_values(value, shape):
    if isinstance(value, GridExpr):
        return np.broadcast_to(value.values(), shape)
    return np.full(shape, int(value), dtype=np.int64)


class Mask:
    """A trace-time predicate over an index grid (``mask=`` of the older API)."""

    def __init__(self, left, right, op=None, parts=None):
        self.left, self.right, self.op, self.parts = left, right, op, parts

    def shape(self):
        if self.parts is not None:
            shapes = [p.shape() for p in self.parts if isinstance(p, Mask)]
            return tuple(np.broadcast_shapes(*shapes)) if shapes else (1,)
        grids = [g for g in (self.left, self.right) if isinstance(g, GridExpr)]
        return tuple(np.broadcast_shapes(*[g.shape for g in grids]))

    def values(self, shape=None):
        shape = shape or self.shape()
        if self.parts is not None:
            combine = np.logical_and if self.op == "and" else np.logical_or

            def part_values(part):  # a Python bool in the expression holds everywhere
                if isinstance(part, Mask):
                    return part.values(shape)
                return np.full(shape, bool(part))

            result = part_values(self.parts[0])
            for part in self.parts[1:]:
                result = combine(result, part_values(part))
            return result
        left, right = _grid_values(self.left, shape), _grid_values(self.right, shape)
        return _COMPARE[self.op](left, right)

    def __and__(self, other):
        return Mask(None, None, "and", [self, other])

    def __or__(self, other):
        return Mask(None, None, "or", [self, other])

    __rand__ = __and__
    __ror__ = __or__


def arange(*args):
    """``nl.arange(n)`` / ``nl.arange(start, stop)``: a 1-D index grid."""
    start, stop = (0, args[0]) if len(args) == 1 else (args[0], args[1])
    step = args[2] if len(args) > 2 else 1
    extent = len(range(int(start), int(stop), int(step)))
    return GridExpr(1, {0: int(step)}, {0: extent}, int(start))


class _MGrid:
    """``nl.mgrid[0:p, 0:f, ...]``: one grid expression per axis, unpackable, with ``.p`` and
    ``.x`` (and ``.y``, ``.z``) naming the first axes."""

    def __getitem__(self, key):
        if not isinstance(key, tuple):
            key = (key,)
        steps, starts, extents = {}, {}, {}
        for axis, k in enumerate(key):
            starts[axis] = 0 if k.start is None else int(k.start)
            steps[axis] = 1 if k.step is None else int(k.step)
            extents[axis] = len(range(starts[axis], int(k.stop), steps[axis]))
        # Dense, as NumPy's mgrid: each component spans the whole grid (its own axis varies).
        return _Grids(
            GridExpr(len(key), {axis: steps[axis]}, extents, starts[axis]) for axis in extents
        )


class _Grids(tuple):
    def __getattr__(self, name):
        names = {"p": 0, "x": 1, "y": 2, "z": 3}
        if name in names and names[name] < len(self):
            return self[names[name]]
        raise AttributeError(name)


mgrid = _MGrid()


def view_of(tensor, key):
    """The view of `tensor` that index `key` (grid expressions, integers, slices) selects:
    its axes are the grid's, each coefficient a stride."""
    key = key if isinstance(key, tuple) else (key,)
    if len(key) > tensor.ndim:
        tr.fail("bad-index", f"{len(key)} indices for a {tensor.ndim}-D tensor {tensor!r}")
    key = key + (slice(None),) * (tensor.ndim - len(key))
    # Slices and integers first (an ordinary view), grids second.
    grids = [k for k in key if isinstance(k, GridExpr)]
    ndim = max(g.ndim for g in grids)
    plain = tuple(slice(None) if isinstance(k, GridExpr) else k for k in key)
    for k in key:
        if isinstance(k, slice) and k != slice(None):
            tr.fail("bad-index", "an index mixes grids and partial slices; use grids only")
    base = tensor[plain] if any(not isinstance(k, GridExpr) for k in key) else tensor
    # Dimensions of `base` left, in order: the grid-indexed ones (and full slices).
    remaining = [k for k in key if not isinstance(k, (int, np.integer))]
    shape = [1] * ndim
    strides = [0] * ndim
    offset, start = base.offset, base.start_partition
    extra = []  # full slices kept as trailing axes
    for d, k in enumerate(remaining):
        stride = base.strides[d]
        partition_dim = d == 0 and base.on_chip
        if not isinstance(k, GridExpr):
            extra.append((base.shape[d], stride))
            continue
        # A grid may reach past the tensor where a mask= leaves those elements out (the
        # boundary tile): the view is made, and the simulator refuses any access that does
        # reach outside.
        if partition_dim:
            start += k.offset * stride
        else:
            offset += k.offset * stride
        for axis, coefficient in k.terms.items():
            if coefficient == 0:
                continue
            if partition_dim and axis != 0:
                tr.fail(
                    "bad-index",
                    f"the partition dimension of {tensor!r} is indexed along grid axis {axis}; "
                    "it must be the grid's first axis",
                )
            if not partition_dim and tensor.on_chip and axis == 0:
                tr.fail(
                    "bad-index",
                    f"a free dimension of {tensor!r} is indexed along the grid's first axis, "
                    "which is the partition axis",
                )
            strides[axis] += coefficient * stride
            shape[axis] = k.extents[axis]
        for axis, extent in k.extents.items():
            shape[axis] = extent
    if extra:
        if ndim + len(extra) > 5:
            tr.fail("bad-index", "too many dimensions in a grid index")
        shape += [s for s, _ in extra]
        strides += [st for _, st in extra]
    if base.on_chip:
        strides[0] = strides[0] or 1
    view = type(base)(base.buffer, base.dtype, tuple(shape), tuple(strides), offset, start)
    return view


def is_grid_key(key):
    key = key if isinstance(key, tuple) else (key,)
    return any(isinstance(k, GridExpr) for k in key)
