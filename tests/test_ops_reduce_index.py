"""Reductions, scans, indexing, sorting and shape ops on neuron match PyTorch CPU.

Each case builds its inputs on the CPU, runs the op on CPU and (with copies) on neuron, and
compares. Forward cases also assert that nothing ran through the host fallback, which is how
these tests prove the ops are native. Gradient cases compare autograd results only: backward
formulas call ops of other families (abs, sign, exp, ...), which may still fall back.
"""

import math

import pytest
import torch

import openneuron

DEVICE = "neuron"

# Per-dtype tolerances and why:
TOLERANCES = {
    # Kernels accumulate in double while CPU kernels often accumulate float32 in float32.
    torch.float32: dict(rtol=1e-5, atol=1e-5),
    # One bf16 rounding of an fp32/double result (8 mantissa bits), plus CPU's own roundings.
    torch.bfloat16: dict(rtol=1.6e-2, atol=1e-2),
    # One fp16 rounding (11 mantissa bits), plus CPU's own roundings.
    torch.float16: dict(rtol=2e-3, atol=2e-3),
}
EXACT = dict(rtol=0, atol=0)  # integers, bool, indices, and pure data movement
FLOAT_DTYPES = [torch.float32, torch.bfloat16, torch.float16]
INT_DTYPES = [torch.int32, torch.int64]


def tol(dtype):
    return TOLERANCES.get(dtype, EXACT)


def to_dev(value):
    if isinstance(value, torch.Tensor):
        return value.to(DEVICE)
    if isinstance(value, (list, tuple)):
        return type(value)(to_dev(v) for v in value)
    return value


def assert_same(actual, expected, **tolerance):
    if isinstance(expected, (tuple, list)):
        assert len(actual) == len(expected)
        for a, e in zip(actual, expected):
            assert_same(a, e, **tolerance)
        return
    if not isinstance(expected, torch.Tensor):
        assert actual == expected
        return
    assert actual.device.type == DEVICE, actual.device
    actual = actual.cpu()
    assert actual.dtype == expected.dtype, (actual.dtype, expected.dtype)
    assert actual.shape == expected.shape, (actual.shape, expected.shape)
    if not tolerance:
        tolerance = tol(expected.dtype)
    torch.testing.assert_close(actual, expected, equal_nan=True, **tolerance)


def run_native(fn, *args, check=True, **tolerance):
    """fn(*args) on CPU and on neuron; asserts equal results and no host fallback."""
    device_args = to_dev(args)  # before fn runs: in-place ops mutate their CPU inputs
    expected = fn(*args)
    torch.neuron.synchronize()
    openneuron.clear_op_tracking()
    actual = fn(*device_args)
    torch.neuron.synchronize()
    fallbacks = openneuron.get_fallback_ops()
    assert not fallbacks, f"ran on the host fallback: {fallbacks}"
    if check:
        assert_same(actual, expected, **tolerance)
    return actual, expected


def check_grad(fn, *args, **tolerance):
    """Gradients of sum(fn(x) * weights) w.r.t. float tensor args match CPU."""
    cpu_args = [
        a.detach().clone().requires_grad_(a.is_floating_point())
        if isinstance(a, torch.Tensor)
        else a
        for a in args
    ]
    dev_args = [
        a.detach().to(DEVICE).requires_grad_(a.is_floating_point())
        if isinstance(a, torch.Tensor)
        else a
        for a in args
    ]
    out_cpu = fn(*cpu_args)
    out_dev = fn(*dev_args)
    out_cpu = out_cpu[0] if isinstance(out_cpu, tuple) else out_cpu
    out_dev = out_dev[0] if isinstance(out_dev, tuple) else out_dev
    weights = torch.randn(out_cpu.shape, generator=torch.Generator().manual_seed(7))
    (out_cpu * weights).sum().backward()
    (out_dev * weights.to(DEVICE)).sum().backward()
    for a_cpu, a_dev in zip(cpu_args, dev_args):
        if isinstance(a_cpu, torch.Tensor) and a_cpu.requires_grad:
            assert_same(a_dev.grad, a_cpu.grad, **(tolerance or tol(a_cpu.dtype)))


def randn(*shape, dtype=torch.float32, seed=0):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed)).to(dtype)


def randint(low, high, shape, dtype=torch.int64, seed=0):
    return torch.randint(low, high, shape, generator=torch.Generator().manual_seed(seed)).to(dtype)


def sample(dtype, *shape, seed=0):
    if dtype == torch.bool:
        return randint(0, 2, shape, seed=seed).bool()
    if dtype.is_floating_point:
        return randn(*shape, dtype=dtype, seed=seed)
    return randint(-20, 20, shape, dtype=dtype, seed=seed)


# ---- variance and standard deviation ----------------------------------------------------


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("dim", [None, 1, (0, 2), -1])
@pytest.mark.parametrize("correction", [0, 1, 2])
@pytest.mark.parametrize("keepdim", [False, True])
def test_var_std(dtype, dim, correction, keepdim):
    x = randn(4, 5, 6, dtype=dtype)
    for fn in (torch.var, torch.std):
        run_native(lambda t: fn(t, dim, correction=correction, keepdim=keepdim), x)
    for fn in (torch.var_mean, torch.std_mean):
        run_native(lambda t: fn(t, dim, correction=correction, keepdim=keepdim), x)


def test_var_noncontiguous_zero_size_and_scalar():
    run_native(lambda t: t.var(0), randn(6, 5).t())
    run_native(lambda t: t.std((1,)), randn(3, 8)[:, ::2])
    run_native(lambda t: t.var(1), torch.empty(0, 3))
    run_native(lambda t: t.var(0), torch.empty(0, 3))  # NaN, as on CPU
    run_native(lambda t: t.var(), torch.tensor(2.5))
    run_native(lambda t: torch.var(t, unbiased=False), randn(40000))  # a split full reduction
    run_native(lambda t: t.std(0), randn(2000, 3))  # column blocks


def test_var_out():
    x = randn(4, 7)
    run_native(lambda t, o: torch.var(t, 1, out=o), x, torch.empty(0))
    run_native(lambda t, o: torch.std(t, 0, keepdim=True, out=o), x, torch.empty(0))


def test_var_grad():
    check_grad(lambda t: t.var(1), randn(4, 6))
    check_grad(lambda t: t.std(0), randn(4, 6))


# ---- max / min / amax / amin / argmax / argmin ------------------------------------------

EXTREME_DTYPES = FLOAT_DTYPES + INT_DTYPES + [torch.bool, torch.int8, torch.uint8]


@pytest.mark.parametrize("dtype", EXTREME_DTYPES)
def test_max_min(dtype):
    x = sample(dtype, 5, 9)
    if dtype == torch.uint8:
        x = randint(0, 200, (5, 9), dtype=dtype)
    run_native(torch.max, x)
    run_native(torch.min, x)
    for dim in (0, 1, -1):
        for keepdim in (False, True):
            run_native(lambda t: torch.max(t, dim, keepdim=keepdim), x)
            run_native(lambda t: torch.min(t, dim, keepdim=keepdim), x)
            if dtype != torch.bool:  # CPU refuses argmax/argmin of bool (checked below)
                run_native(lambda t: torch.argmax(t, dim, keepdim=keepdim), x)
                run_native(lambda t: torch.argmin(t, dim, keepdim=keepdim), x)
    if dtype == torch.bool:
        with pytest.raises(RuntimeError, match="does not support bool"):
            torch.argmax(x.to(DEVICE))
    else:
        run_native(torch.argmax, x)
        run_native(lambda t: torch.argmin(t, keepdim=True), x)
    for dims in ((0,), (1,), (0, 1), ()):
        run_native(lambda t: torch.amax(t, dims), x)
        run_native(lambda t: torch.amin(t, dims, keepdim=True), x)


def test_extremes_ties_nan_and_layouts():
    ties = torch.tensor([[3, 1, 3, 0], [2, 2, 2, 2], [0, 5, 5, 1]])
    run_native(lambda t: t.max(1), ties)
    run_native(lambda t: t.min(0), ties)
    run_native(lambda t: t.argmax(1), ties)
    run_native(torch.argmax, ties)
    nan = torch.tensor(
        [[1.0, float("nan"), 3.0, float("nan")], [float("-inf"), 2.0, float("inf"), 0.0]]
    )
    run_native(lambda t: t.max(1), nan)
    run_native(lambda t: t.min(1), nan)
    run_native(lambda t: t.argmax(1), nan)
    run_native(lambda t: t.amax(0), nan)
    run_native(torch.max, nan)
    run_native(lambda t: t.max(0), randn(7, 300).t())  # non-contiguous
    run_native(lambda t: t.amax(0), randn(1000, 600))  # column blocks
    run_native(lambda t: t.argmax(), randn(300000))  # split full reduction
    run_native(lambda t: t.max(0), torch.tensor(3.0))
    run_native(lambda t: t.amax(1), torch.empty(0, 4))  # empty output is fine


def test_extremes_of_empty_raise():
    x = torch.empty(0, 3, device=DEVICE)
    with pytest.raises((IndexError, RuntimeError)):
        x.max()
    with pytest.raises((IndexError, RuntimeError)):
        x.max(0)
    with pytest.raises((IndexError, RuntimeError)):
        x.argmax(0)


def test_extremes_out():
    x = randn(4, 6)
    run_native(
        lambda t, v, i: torch.max(t, 1, out=(v, i)),
        x,
        torch.empty(0),
        torch.empty(0, dtype=torch.long),
    )
    run_native(
        lambda t, v, i: torch.min(t, 0, keepdim=True, out=(v, i)),
        x,
        torch.empty(0),
        torch.empty(0, dtype=torch.long),
    )
    run_native(lambda t, o: torch.amax(t, 1, out=o), x, torch.empty(0))
    run_native(lambda t, o: torch.amin(t, 0, out=o), x, torch.empty(0))
    run_native(lambda t, o: torch.argmax(t, 1, out=o), x, torch.empty(0, dtype=torch.long))
    run_native(lambda t, o: torch.argmin(t, out=o), x, torch.empty(0, dtype=torch.long))
    run_native(lambda t, o: torch.max(t, out=o), x, torch.empty(0))


def test_extremes_grad():
    check_grad(lambda t: t.max(1)[0], randn(4, 6))
    check_grad(lambda t: t.min(0, keepdim=True)[0], randn(4, 6))
    check_grad(lambda t: t.amax((0, 1)), randn(4, 6))
    check_grad(lambda t: t.max(), randn(4, 6))


# ---- prod, norms, all/any, logsumexp ----------------------------------------------------


@pytest.mark.parametrize("dtype", FLOAT_DTYPES + INT_DTYPES + [torch.bool])
def test_prod(dtype):
    x = (
        sample(dtype, 3, 5)
        if not dtype.is_floating_point
        else (randn(3, 5, dtype=dtype) * 0.5 + 1).to(dtype)
    )
    if dtype in INT_DTYPES:
        x = randint(-3, 4, (3, 5), dtype=dtype)
    run_native(torch.prod, x)
    run_native(lambda t: t.prod(1), x)
    run_native(lambda t: t.prod(0, keepdim=True), x)
    run_native(lambda t: t.prod(1, dtype=torch.float32), x)


def test_prod_out_empty_grad():
    run_native(lambda t, o: torch.prod(t, 1, out=o), randn(3, 4), torch.empty(0))
    run_native(lambda t: t.prod(1), torch.empty(2, 0))
    run_native(torch.prod, torch.tensor(4.0))
    check_grad(lambda t: t.prod(1), randn(3, 4))


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("ord", [2, 1, math.inf, -math.inf, 0, 3, 0.5])
@pytest.mark.parametrize("dim", [None, 1, (0, 2)])
def test_vector_norm(dtype, ord, dim):
    x = randn(3, 4, 5, dtype=dtype)
    run_native(lambda t: torch.linalg.vector_norm(t, ord, dim), x)
    run_native(lambda t: torch.linalg.vector_norm(t, ord, dim, keepdim=True), x)


def test_norm_variants():
    x = randn(6, 7)
    run_native(lambda t: t.norm(), x)
    run_native(lambda t: t.norm(1, dim=0), x)
    run_native(lambda t: torch.norm(t, p=3, dim=1, keepdim=True), x)
    run_native(lambda t: torch.linalg.vector_norm(t, dtype=torch.float32), x.to(torch.bfloat16))
    run_native(lambda t, o: torch.linalg.vector_norm(t, 2, 1, out=o), x, torch.empty(0))
    run_native(lambda t: torch.linalg.vector_norm(t), torch.empty(0, 3))
    run_native(lambda t: torch.linalg.vector_norm(t), randn(300000))
    with pytest.raises(RuntimeError):
        torch.linalg.vector_norm(torch.empty(0, 3, device=DEVICE), math.inf)


def test_norm_grad():
    check_grad(lambda t: torch.linalg.vector_norm(t, 2, 1), randn(3, 5))


@pytest.mark.parametrize(
    "dtype", [torch.bool, torch.float32, torch.int64, torch.uint8, torch.bfloat16]
)
def test_all_any(dtype):
    x = randint(0, 2, (4, 6), dtype=dtype)
    x[0] = 1
    for fn in (torch.all, torch.any):
        run_native(fn, x)
        run_native(lambda t: fn(t, 1), x)
        run_native(lambda t: fn(t, 0, keepdim=True), x)
        run_native(lambda t: fn(t, (0, 1)), x)
    run_native(torch.all, torch.empty(0, dtype=dtype))
    run_native(torch.any, torch.empty(0, dtype=dtype))


def test_all_any_out():
    x = randint(0, 2, (4, 6)).bool()
    run_native(lambda t, o: torch.all(t, 1, out=o), x, torch.empty(0, dtype=torch.bool))
    run_native(lambda t, o: torch.any(t, out=o), x, torch.empty(0, dtype=torch.bool))


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_logsumexp(dtype):
    x = randn(4, 7, dtype=dtype) * 10
    run_native(lambda t: torch.logsumexp(t, 1), x)
    run_native(lambda t: torch.logsumexp(t, (0, 1), keepdim=True), x)
    special = torch.tensor(
        [[float("-inf")] * 3, [float("inf"), 1.0, 2.0], [float("nan"), 0.0, 1.0]], dtype=dtype
    )
    run_native(lambda t: torch.logsumexp(t, 1), special)


def test_logsumexp_out_grad():
    run_native(lambda t, o: torch.logsumexp(t, 0, out=o), randn(3, 4), torch.empty(0))
    check_grad(lambda t: torch.logsumexp(t, 1), randn(3, 4))


# ---- cumsum / cumprod --------------------------------------------------------------------


@pytest.mark.parametrize("dtype", FLOAT_DTYPES + INT_DTYPES + [torch.bool])
@pytest.mark.parametrize("dim", [0, 1, -1])
def test_cumsum_cumprod(dtype, dim):
    x = sample(dtype, 5, 6, seed=3)
    if dtype in INT_DTYPES:
        x = randint(-3, 4, (5, 6), dtype=dtype)
    run_native(lambda t: torch.cumsum(t, dim), x)
    run_native(lambda t: torch.cumprod(t, dim), x)
    run_native(lambda t: torch.cumsum(t, dim, dtype=torch.float32), x)


def test_scan_variants():
    run_native(lambda t: t.cumsum(0), randn(6, 5).t())
    run_native(lambda t: t.cumsum(0), torch.tensor(3.0))
    run_native(lambda t: t.cumsum(1), torch.empty(3, 0))
    run_native(lambda t: t.cumsum_(1), randn(3, 4))
    run_native(lambda t: t.cumprod_(0), randn(3, 4))
    run_native(lambda t, o: torch.cumsum(t, 1, out=o), randn(3, 4), torch.empty(0))
    run_native(lambda t, o: torch.cumprod(t, 0, out=o), randn(3, 4), torch.empty(0))
    check_grad(lambda t: t.cumsum(1), randn(3, 4))


# ---- index_select / gather / scatter ----------------------------------------------------


@pytest.mark.parametrize("dtype", FLOAT_DTYPES + INT_DTYPES + [torch.bool])
@pytest.mark.parametrize("index_dtype", [torch.int64, torch.int32])
def test_index_select(dtype, index_dtype):
    x = sample(dtype, 5, 6, 3)
    idx = torch.tensor([4, 0, 2, 2, -1 + 5], dtype=index_dtype)
    for dim in (0, 1, 2, -1):
        i = idx.clamp(max=x.shape[dim] - 1)
        run_native(lambda t, j: t.index_select(dim, j), x, i)
    run_native(lambda t, j: t.index_select(1, j), x.transpose(0, 2), idx.clamp(max=4))
    run_native(lambda t, j: t.index_select(0, j), x, torch.empty(0, dtype=index_dtype))
    run_native(lambda t, j: t.index_select(0, j), x, torch.tensor(3, dtype=index_dtype))


def test_index_select_out_error_grad():
    x = randn(5, 4)
    run_native(
        lambda t, j, o: torch.index_select(t, 0, j, out=o), x, torch.tensor([1, 3]), torch.empty(0)
    )
    with pytest.raises(Exception, match="out of bounds|out of range"):
        torch.index_select(x.to(DEVICE), 0, torch.tensor([7], device=DEVICE))
        torch.neuron.synchronize()
    torch.neuron.synchronize()
    check_grad(lambda t: t.index_select(0, torch.tensor([1, 1, 3], device=t.device)), x)


@pytest.mark.parametrize("dtype", FLOAT_DTYPES + INT_DTYPES + [torch.bool])
def test_gather_scatter(dtype):
    x = sample(dtype, 4, 5)
    src = sample(dtype, 3, 5, seed=1)
    idx = randint(0, 4, (3, 5))
    run_native(lambda t, i: t.gather(0, i), x, idx)
    run_native(lambda t, i: t.gather(1, i), x, randint(0, 5, (4, 2)))
    # Distinct targets per column: scatter with duplicates is order-dependent.
    perm = torch.stack(
        [torch.randperm(4, generator=torch.Generator().manual_seed(c))[:3] for c in range(5)], 1
    )
    run_native(lambda t, i, s: t.scatter(0, i, s), x, perm, src)
    run_native(lambda t, i: t.scatter(0, i, 1), x, perm)
    run_native(lambda t, i, s: t.clone().scatter_(0, i, s), x, perm, src)
    if dtype != torch.bool:
        run_native(lambda t, i, s: t.scatter_add(0, i, s), x, idx, src)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.int64, torch.int32])
@pytest.mark.parametrize("reduce", ["sum", "prod", "mean", "amax", "amin"])
@pytest.mark.parametrize("include_self", [True, False])
def test_scatter_reduce(dtype, reduce, include_self):
    x = sample(dtype, 4, 5)
    src = sample(dtype, 6, 5, seed=2)
    idx = randint(0, 4, (6, 5))
    run_native(
        lambda t, i, s: t.scatter_reduce(0, i, s, reduce, include_self=include_self), x, idx, src
    )
    run_native(
        lambda t, i, s: t.clone().scatter_reduce_(1, i, s, reduce, include_self=include_self),
        x,
        randint(0, 5, (4, 3)),
        sample(dtype, 4, 3, seed=4),
    )


def test_scatter_out_noncontiguous_errors_grad():
    x = randn(4, 5)
    idx = randint(0, 4, (3, 5))
    src = randn(3, 5)
    run_native(lambda t, i, s, o: torch.scatter_add(t, 0, i, s, out=o), x, idx, src, torch.empty(0))
    run_native(
        lambda t, i, s: t.scatter_add(1, i, s),
        randn(5, 4).t(),
        randint(0, 5, (4, 3)),
        randn(3, 4).t(),
    )
    run_native(lambda t, i: t.gather(1, i), randn(5, 4).t(), randint(0, 5, (4, 2)))
    run_native(lambda t, i: t.gather(0, i), torch.tensor(2.0), torch.tensor(0))
    with pytest.raises(Exception, match="out of bounds"):
        x.to(DEVICE).gather(0, torch.tensor([[9]], device=DEVICE))
        torch.neuron.synchronize()
    torch.neuron.synchronize()
    check_grad(lambda t: t.gather(1, randint(0, 5, (4, 3)).to(t.device)), x)
    check_grad(lambda t, s: t.scatter_add(0, idx.to(t.device), s), x, src)
    check_grad(
        lambda t, s: t.scatter(0, torch.tensor([[0, 1, 2, 3, 0]], device=t.device), s),
        x,
        randn(1, 5),
    )


# ---- advanced indexing --------------------------------------------------------------------


@pytest.mark.parametrize("dtype", FLOAT_DTYPES + INT_DTYPES + [torch.bool])
def test_index_tensor(dtype):
    x = sample(dtype, 4, 5, 6)
    i = torch.tensor([3, 0, -1, 3])
    j = torch.tensor([[1], [4]])
    run_native(lambda t, a: t[a], x, i)
    run_native(lambda t, a: t[:, a], x, i)
    run_native(lambda t, a: t[..., a], x, i.clamp(max=5))
    run_native(lambda t, a, b: t[a, b], x, i, j)  # broadcast 2x4 positions
    run_native(lambda t, a, b: t[a, :, b], x, i, j)  # non-adjacent: indexed dims go first
    run_native(lambda t, a: t[1:3, a], x, i.int())  # int32 indices
    mask = randint(0, 2, (4, 5)).bool()
    run_native(lambda t, m: t[m], x, mask)
    run_native(lambda t, m: t[:, m[0]], x, mask)


def test_index_cpu_indices_and_errors():
    x = randn(4, 5)
    xd = x.to(DEVICE)
    openneuron.clear_op_tracking()
    assert_same(xd[torch.tensor([2, 0])], x[torch.tensor([2, 0])])
    mask = randint(0, 2, (4,)).bool()
    assert_same(xd[mask], x[mask])
    assert not openneuron.get_fallback_ops()
    with pytest.raises(IndexError, match="out of bounds"):
        xd[torch.tensor([4])]
    with pytest.raises(Exception, match="out of bounds"):
        xd[torch.tensor([-5], device=DEVICE)]
        torch.neuron.synchronize()
    torch.neuron.synchronize()
    run_native(lambda t, a: t[a], torch.empty(0, 3), torch.empty(0, dtype=torch.long))
    run_native(lambda t, a: t[a], x, torch.empty(0, dtype=torch.long))


def test_index_put():
    x = randn(5, 4)
    i = torch.tensor([4, 1, 1, 0])
    run_native(lambda t, a, v: t.clone().index_put_((a,), v, accumulate=True), x, i, randn(4, 4))
    run_native(lambda t, a, v: t.clone().index_put_((a,), v, accumulate=True), x, i, randn(4))
    run_native(
        lambda t, a: t.clone().index_put_((a,), torch.tensor(2.0, device=t.device)),
        x,
        torch.tensor([3, 0]),
    )
    run_native(
        lambda t, a, b, v: t.clone().index_put_((a, b), v, accumulate=True),
        x,
        i,
        torch.tensor([0, 3, 3, 1]),
        randn(4),
    )
    mask = randint(0, 2, (5, 4)).bool()

    def masked_assign(t, m):
        t = t.clone()
        t[m] = 7.0
        return t

    run_native(masked_assign, x, mask)
    run_native(
        lambda t, a, v: t.clone().index_put_((a,), v, accumulate=True),
        randint(0, 9, (5, 4)),
        i,
        randint(0, 9, (4, 4)),
    )
    run_native(
        lambda t, a, v: t.clone().index_put_((a,), v, accumulate=True),
        randn(5, 4, dtype=torch.bfloat16),
        i,
        randn(4, 4, dtype=torch.bfloat16),
    )
    check_grad(lambda t: t[torch.tensor([1, 1, 3], device=t.device)], x)
    check_grad(
        lambda t, v: t.index_put((torch.tensor([1, 3], device=t.device),), v, accumulate=True),
        x,
        randn(2, 4),
    )


@pytest.mark.parametrize("dtype", FLOAT_DTYPES + INT_DTYPES)
def test_index_add(dtype):
    x = sample(dtype, 5, 4)
    src = sample(dtype, 3, 4, seed=5)
    i = torch.tensor([4, 0, 4])
    run_native(lambda t, a, s: t.index_add(0, a, s), x, i, src)
    run_native(
        lambda t, a, s: t.clone().index_add_(1, a, s, alpha=2),
        x,
        torch.tensor([3, 3, 0, 1, 2]),
        sample(dtype, 5, 5, seed=6),
    )
    run_native(
        lambda t, a, s, o: torch.index_add(t, 0, a, s, out=o),
        x,
        i,
        src,
        torch.empty(0, dtype=dtype),
    )
    if dtype == torch.float32:
        check_grad(lambda t, s: t.index_add(0, i.to(t.device), s), x, src)


# ---- masked_select / nonzero --------------------------------------------------------------


@pytest.mark.parametrize("dtype", FLOAT_DTYPES + INT_DTYPES + [torch.bool])
def test_nonzero_masked_select(dtype):
    x = sample(dtype, 4, 6)
    x.view(-1)[::3] = 0
    run_native(torch.nonzero, x)
    run_native(lambda t: torch.nonzero(t.t()), x)
    mask = randint(0, 2, (4, 6)).bool()
    run_native(lambda t, m: t.masked_select(m), x, mask)
    run_native(lambda t, m: t.masked_select(m), x, mask[0])  # broadcast mask
    run_native(torch.nonzero, torch.tensor(1, dtype=dtype))
    run_native(torch.nonzero, torch.zeros(3, 0, dtype=dtype))
    run_native(lambda t, m: t.masked_select(m), x, torch.zeros(4, 6, dtype=torch.bool))


def test_nonzero_masked_select_out_grad():
    x = randn(3, 4)
    mask = randint(0, 2, (3, 4)).bool()
    run_native(lambda t, o: torch.nonzero(t, out=o), x, torch.empty(0, dtype=torch.long))
    run_native(lambda t, m, o: torch.masked_select(t, m, out=o), x, mask, torch.empty(0))
    check_grad(lambda t: t.masked_select(mask.to(t.device)), x)


# ---- embedding ------------------------------------------------------------------------------


@pytest.mark.parametrize("padding_idx", [None, 2])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_embedding(padding_idx, dtype):
    weight = randn(10, 4, dtype=dtype)
    idx = torch.tensor([[1, 2, 2], [9, 0, 1]])
    run_native(
        lambda w, i: torch.nn.functional.embedding(i, w, padding_idx=padding_idx), weight, idx
    )
    grad = randn(2, 3, 4, dtype=dtype)
    run_native(
        lambda g, i: torch.ops.aten.embedding_dense_backward(
            g, i, 10, -1 if padding_idx is None else padding_idx, False
        ),
        grad,
        idx,
    )
    check_grad(
        lambda w: torch.nn.functional.embedding(idx.to(w.device), w, padding_idx=padding_idx),
        weight,
    )


# ---- cat / stack --------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", FLOAT_DTYPES + INT_DTYPES + [torch.bool])
def test_cat_stack(dtype):
    a, b = sample(dtype, 2, 3), sample(dtype, 4, 3, seed=1)
    run_native(lambda x, y: torch.cat([x, y]), a, b)
    run_native(lambda x, y: torch.cat([x.t(), y.t()], 1), a, b)
    run_native(lambda x, y: torch.stack([x, y[:2]], 1), a, b)
    run_native(
        lambda x, y: torch.cat([x, torch.empty(0, dtype=x.dtype, device=x.device), y], -2), a, b
    )


def test_cat_promotion_out_empty_grad():
    a, b = randn(2, 3), randint(0, 5, (2, 3), dtype=torch.int32)
    run_native(lambda x, y: torch.cat([x, y], 1), a, b)
    run_native(lambda x, y: torch.cat([x, y.to(torch.bfloat16)]), a, b)
    run_native(lambda x, y, o: torch.cat([x, y], out=o), a, randn(1, 3), torch.empty(0))
    run_native(lambda x: torch.cat([x, x]), torch.empty(0, 3))
    run_native(lambda x, y: torch.stack([x, y], -1), a, randn(2, 3))
    with pytest.raises(RuntimeError, match="Sizes of tensors must match"):
        torch.cat([torch.ones(2, 3, device=DEVICE), torch.ones(2, 4, device=DEVICE)])
    check_grad(lambda x, y: torch.cat([x, y], 1), a, randn(2, 2))
    check_grad(lambda x, y: torch.stack([x, y]), a, randn(2, 3))


# ---- creation ------------------------------------------------------------------------------


def test_arange_linspace_eye():
    for args in [(10,), (2, 11, 3), (0.5, 10, 0.7), (5, -3, -2), (0, 0)]:
        run_native(lambda: torch.arange(*args, device=DEVICE), check=False)
        assert_same(torch.arange(*args, device=DEVICE), torch.arange(*args))
    for dtype in [torch.float32, torch.int32, torch.bfloat16]:
        assert_same(
            torch.arange(1, 9, 2, dtype=dtype, device=DEVICE), torch.arange(1, 9, 2, dtype=dtype)
        )
    for args in [(-1, 3, 11), (0, 1, 1), (5, -5, 0), (0, 100, 1000)]:
        run_native(lambda: torch.linspace(*args, device=DEVICE), check=False)
        assert_same(torch.linspace(*args, device=DEVICE), torch.linspace(*args))
    for args in [(3,), (3, 5), (0,), (4, 2)]:
        run_native(lambda: torch.eye(*args, device=DEVICE), check=False)
        assert_same(torch.eye(*args, device=DEVICE), torch.eye(*args))
    assert_same(torch.eye(3, dtype=torch.int64, device=DEVICE), torch.eye(3, dtype=torch.int64))
    out = torch.empty(0, device=DEVICE)
    torch.arange(4, out=out)
    assert_same(out, torch.arange(4.0))


@pytest.mark.parametrize("dtype", FLOAT_DTYPES + INT_DTYPES + [torch.bool])
@pytest.mark.parametrize("diagonal", [0, 1, -2])
def test_tril_triu(dtype, diagonal):
    x = sample(dtype, 2, 4, 5)
    run_native(lambda t: t.tril(diagonal), x)
    run_native(lambda t: t.triu(diagonal), x)
    run_native(lambda t: t.clone().tril_(diagonal), x)
    run_native(lambda t: t.clone().triu_(diagonal), x)
    run_native(
        lambda t, o: torch.tril(t.transpose(1, 2), diagonal, out=o), x, torch.empty(0, dtype=dtype)
    )


def test_tril_grad():
    check_grad(lambda t: t.triu(1), randn(4, 4))


# ---- sort / argsort / topk ------------------------------------------------------------------

SORT_DTYPES = FLOAT_DTYPES + INT_DTYPES + [torch.bool, torch.int16, torch.int8, torch.uint8]


@pytest.mark.parametrize("dtype", SORT_DTYPES)
@pytest.mark.parametrize("descending", [False, True])
def test_sort_stable(dtype, descending):
    # Many ties, so the index order shows stability.
    x = randint(0, 5 if dtype != torch.bool else 2, (6, 300), dtype=dtype)
    for dim in (0, 1):
        run_native(lambda t: t.sort(dim=dim, descending=descending, stable=True), x)
        run_native(lambda t: t.argsort(dim=dim, descending=descending, stable=True), x)
    # The default (stable=False) leaves ties where the CPU's introsort does for bool, 8- and
    # 16-bit dtypes; the others stay stable (the CPU sorts them with a vectorized sort whose
    # ties are its own).
    stable_dtypes = (torch.int32, torch.int64, torch.float32)
    expected = x.sort(dim=1, descending=descending, stable=dtype in stable_dtypes)
    assert_same(x.to(DEVICE).sort(1, descending=descending), expected)


def test_sort_special_values_layouts_out():
    special = torch.tensor(
        [0.0, -0.0, float("nan"), 1.0, float("-inf"), float("inf"), -1.0, float("nan"), 0.0]
    )
    run_native(lambda t: t.sort(stable=True), special)
    run_native(lambda t: t.sort(descending=True, stable=True), special)
    run_native(lambda t: t.sort(stable=True), special.to(torch.bfloat16))
    run_native(lambda t: t.sort(stable=True), special.to(torch.float16))
    run_native(lambda t: t.sort(dim=0, stable=True), randn(40, 30).t())
    run_native(lambda t: t.sort(stable=True), randn(100000))
    run_native(lambda t: t.sort(stable=True), randint(-(10**12), 10**12, (5000,)))
    run_native(lambda t: t.sort(stable=True), torch.tensor(3.0))
    run_native(lambda t: t.sort(stable=True), torch.empty(0))
    run_native(
        lambda t, v, i: torch.sort(t, dim=1, stable=True, out=(v, i)),
        randn(3, 7),
        torch.empty(0),
        torch.empty(0, dtype=torch.long),
    )
    check_grad(lambda t: t.sort(1)[0], randn(3, 7))


@pytest.mark.parametrize("dtype", FLOAT_DTYPES + INT_DTYPES)
@pytest.mark.parametrize("largest", [True, False])
def test_topk(dtype, largest):
    # Distinct values: CPU does not define the order of ties.
    x = torch.randperm(60, generator=torch.Generator().manual_seed(1)).reshape(5, 12).to(dtype)
    for k, dim in [(3, 1), (1, 0), (12, 1), (0, 1), (5, 0)]:
        run_native(lambda t: t.topk(k, dim, largest=largest), x)
    run_native(
        lambda t, v, i: torch.topk(t, 2, out=(v, i)),
        x,
        torch.empty(0, dtype=dtype),
        torch.empty(0, dtype=torch.long),
    )


def test_topk_nan_errors_grad():
    x = torch.tensor([1.0, float("nan"), 3.0, 2.0])
    run_native(lambda t: t.topk(2), x)
    run_native(lambda t: t.topk(2, largest=False), x)
    with pytest.raises(RuntimeError, match="out of range"):
        torch.ones(3, device=DEVICE).topk(4)
    check_grad(lambda t: t.topk(2, 1)[0], randn(3, 6))


# ---- flip / roll / repeat -------------------------------------------------------------------


@pytest.mark.parametrize("dtype", FLOAT_DTYPES + INT_DTYPES + [torch.bool])
def test_flip_roll_repeat(dtype):
    x = sample(dtype, 3, 4, 5)
    for dims in [(0,), (1, 2), (0, 1, 2), (-1,)]:
        run_native(lambda t: t.flip(dims), x)
    run_native(lambda t: t.flip(0), x.transpose(0, 2))
    for shifts, dims in [(1, 0), (-2, 1), ((1, 3), (0, 2)), (7, None), (0, 1)]:
        run_native(lambda t: t.roll(shifts, dims), x)
    for repeats in [(1, 1, 1), (2, 1, 3), (2, 2, 1, 1), (0, 1, 1)]:
        run_native(lambda t: t.repeat(*repeats), x)
    run_native(lambda t: t.repeat(2, 3), x[0].t())
    run_native(lambda t: t.flip(0), torch.empty(0, 3, dtype=dtype))


def test_flip_roll_repeat_grad():
    x = randn(3, 4)
    check_grad(lambda t: t.flip(1), x)
    check_grad(lambda t: t.roll(1, 0), x)
    check_grad(lambda t: t.repeat(2, 3), x)


# ---- mixed devices -------------------------------------------------------------------------


def test_mixed_devices_fail():
    with pytest.raises(RuntimeError, match="same device"):
        torch.ones(3, 4, device=DEVICE).gather(0, torch.zeros(1, 4, dtype=torch.long))
    with pytest.raises(RuntimeError, match="same device"):
        torch.cat([torch.ones(2, device=DEVICE), torch.ones(2)])


ISIN_CASES = {
    "promoted_int_float": (torch.tensor([1, 2, 3]), torch.tensor([2.5, 3.0])),
    "nan_and_signed_zero": (
        torch.tensor([1.0, float("nan"), -0.0]),
        torch.tensor([float("nan"), 0.0]),
    ),
    "uint8_against_int64": (torch.tensor([1, 2, 3], dtype=torch.uint8), torch.tensor([-254])),
    "strided_2d": (
        torch.arange(63).reshape(7, 9).remainder(50).t(),
        torch.arange(12).reshape(3, 4) * 4,
    ),
    "half": (torch.linspace(-2, 2, 17).half(), torch.tensor([0.5, -1.0, 3.0]).half()),
}


@pytest.mark.parametrize("invert", [False, True])
@pytest.mark.parametrize("case", list(ISIN_CASES))
def test_isin_matches_the_cpu_natively(case, invert):
    elements, test_elements = ISIN_CASES[case]
    openneuron.clear_op_tracking()
    result = torch.isin(elements.to("neuron"), test_elements.to("neuron"), invert=invert)
    assert openneuron.get_fallback_ops() == {}
    assert torch.equal(result.cpu(), torch.isin(elements, test_elements, invert=invert))


def test_isin_scalar_forms_promote_as_the_cpu_does():
    ints = torch.tensor([1, 2])
    assert torch.equal(torch.isin(ints.to("neuron"), 2.5).cpu(), torch.isin(ints, 2.5))
    assert torch.equal(torch.isin(ints.float().to("neuron"), 2).cpu(), torch.isin(ints.float(), 2))
    test = torch.tensor([1.5, 2.0])
    assert torch.equal(torch.isin(2, test.to("neuron")).cpu(), torch.isin(2, test))


def test_isin_refuses_what_the_cpu_refuses_at_the_call():
    ints = torch.tensor([1, 2], device="neuron")
    with pytest.raises(RuntimeError, match="Unsupported input type encountered for isin"):
        torch.isin(torch.tensor([True], device="neuron"), ints)
    with pytest.raises(RuntimeError, match="Expected out tensor to have dtype bool, but got float"):
        torch.isin(ints, ints, out=torch.empty(2, device="neuron"))


def test_index_copy_matches_the_cpu_natively_and_checks_at_the_call():
    base = torch.zeros(3, 4)
    source = torch.arange(6.0).reshape(3, 2)
    index = torch.tensor([0, 2])
    openneuron.clear_op_tracking()
    result = base.to("neuron").index_copy(1, index.to("neuron"), source.to("neuron"))
    in_place = base.to("neuron")
    in_place.index_copy_(
        0, torch.tensor([2, 0], device="neuron"), torch.ones(2, 4, device="neuron")
    )
    scalar = torch.zeros(3, device="neuron").index_copy(
        0, torch.tensor(1, device="neuron"), torch.tensor(5.0, device="neuron")
    )
    assert openneuron.get_fallback_ops() == {}
    assert torch.equal(result.cpu(), base.index_copy(1, index, source))
    assert torch.equal(in_place.cpu(), base.index_copy(0, torch.tensor([2, 0]), torch.ones(2, 4)))
    assert scalar.cpu().tolist() == [0.0, 5.0, 0.0]
    on_device = base.to("neuron")
    with pytest.raises(IndexError, match="index 5 is out of bounds for dimension 1 with size 4"):
        on_device.index_copy(1, torch.tensor([0, 5], device="neuron"), source.to("neuron"))
    with pytest.raises(RuntimeError, match="Expected a long tensor for index"):
        on_device.index_copy(1, index.int().to("neuron"), source.to("neuron"))
    with pytest.raises(RuntimeError, match="same dtype"):
        on_device.index_copy(1, index.to("neuron"), source.double().to("neuron"))


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=str)
@pytest.mark.parametrize("reduce", ["sum", "prod", "mean"])
@pytest.mark.parametrize("include_self", [True, False])
def test_16_bit_scatter_sums_round_once_as_the_cpu(dtype, reduce, include_self):
    # The CPU accumulates 16-bit sums and products in fp32 and rounds once per element (a mean
    # rounds the sum before dividing); rounding after every term drifts by an ulp or more.
    torch.manual_seed(7)
    rows = 120
    src = (
        (torch.rand(rows, 4) + 0.5).to(dtype)
        if reduce == "prod"
        else torch.randn(rows, 4).to(dtype)
    )
    index = torch.randint(0, 3, (rows, 1)).expand(rows, 4)
    self = torch.randn(3, 4).to(dtype)
    if reduce == "prod":
        src, index, self = src[:12], index[:12], self.abs() + 0.5
    openneuron.clear_op_tracking()
    got = self.to("neuron").scatter_reduce(
        0, index.to("neuron"), src.to("neuron"), reduce, include_self=include_self
    )
    added = self.to("neuron").scatter_add(0, index.to("neuron"), src.to("neuron"))
    assert openneuron.get_fallback_ops() == {}
    want = self.scatter_reduce(0, index, src, reduce, include_self=include_self)
    assert torch.equal(got.cpu(), want)
    assert torch.equal(added.cpu(), self.scatter_add(0, index, src))
