"""repeat_interleave with a repeats tensor, nonzero_static and linalg.cross on neuron: the
CPU's values, gradients, dtypes and exception types at every device dtype, with no op left to
the host fallback."""

import pytest
import torch

import openneuron
from tests.device_dtypes import NATIVE_DTYPES
from tests.kernel_mutants import kernel_replaced

DTYPES = NATIVE_DTYPES
FLOATS = [torch.float16, torch.bfloat16, torch.float32]


def sample(shape, dtype, seed=0):
    generator = torch.Generator().manual_seed(seed)
    if dtype.is_floating_point:
        return torch.randn(shape, generator=generator).to(dtype)
    return torch.randint(-9, 10, shape, generator=generator).to(dtype)


def natively(fn, *args, **kwargs):
    """fn on neuron in strict mode (the fallback raises there), asserting nothing fell back."""
    openneuron.clear_op_tracking()
    with openneuron.strict():
        result = fn(*args, **kwargs)
    assert openneuron.get_fallback_ops() == {}
    return result


def to_neuron(value):
    return value.to("neuron") if isinstance(value, torch.Tensor) else value


def assert_equal(got, cpu):
    assert got.device.type == "neuron" and got.dtype == cpu.dtype
    assert torch.equal(got.cpu(), cpu), (got.cpu(), cpu)


def same_error(fn, *args, **kwargs):
    """fn raises on neuron (at the call) the exception type and message it raises on the CPU."""
    with pytest.raises(Exception) as on_cpu:
        fn(*args, **kwargs)
    with pytest.raises(type(on_cpu.value)) as on_neuron:
        fn(*[to_neuron(a) for a in args], **{k: to_neuron(v) for k, v in kwargs.items()})
    assert str(on_neuron.value).splitlines()[0] == str(on_cpu.value).splitlines()[0]


# ---- repeat_interleave -------------------------------------------------------------------


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_repeat_interleave_by_a_repeats_tensor_matches_the_cpu(dtype):
    x = sample((4, 3), dtype)
    for index_dtype in (torch.int32, torch.int64):
        repeats = torch.tensor([2, 0, 3, 1], dtype=index_dtype)
        cases = [
            lambda x, r: torch.repeat_interleave(r),
            lambda x, r: torch.repeat_interleave(r, output_size=6),
            lambda x, r: torch.repeat_interleave(x, r, dim=0),
            lambda x, r: x.t().repeat_interleave(r[:3], dim=0),
            lambda x, r: torch.repeat_interleave(x[::2, 0], r[::2]),
            lambda x, r: torch.repeat_interleave(r[:0]),
        ]
        for case in cases:
            cpu = case(x, repeats)
            assert_equal(natively(case, x.to("neuron"), repeats.to("neuron")), cpu)


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_repeat_interleave_gradient_matches_the_cpu(dtype):
    repeats = torch.tensor([3, 0, 1, 2])
    grad = sample((6, 5), dtype, seed=1)
    results = []
    for device in ("cpu", "neuron"):
        x = sample((4, 5), dtype).to(device).requires_grad_()
        fn = lambda: torch.repeat_interleave(x, repeats.to(device), dim=0)  # noqa: E731
        y = natively(fn) if device == "neuron" else fn()
        y.backward(grad.to(device))
        results.append(x.grad.cpu())
    # Each input row's gradient sums its copies' rows, in the CPU's order.
    torch.testing.assert_close(results[1], results[0])


def test_repeat_interleave_refuses_what_the_cpu_refuses():
    same_error(torch.repeat_interleave, torch.tensor([[1, 2]]))
    same_error(torch.repeat_interleave, torch.tensor([1.0, 2.0]))
    same_error(torch.repeat_interleave, torch.tensor([1, 2], dtype=torch.int16))
    same_error(torch.repeat_interleave, torch.tensor([1, -1, 3]))
    same_error(torch.repeat_interleave, torch.tensor(2))


def test_repeat_interleave_mutant_is_caught():
    def one_short(repeats, output_size=None):
        return torch.arange(int(repeats.sum().item()) - 1, device=repeats.device)

    with kernel_replaced("repeat_interleave.Tensor", one_short):
        with pytest.raises(AssertionError):
            test_repeat_interleave_by_a_repeats_tensor_matches_the_cpu(torch.float32)


# ---- nonzero_static --------------------------------------------------------------------


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_nonzero_static_matches_the_cpu(dtype):
    x = sample((5, 4), dtype) * (sample((5, 4), torch.int64, seed=3) > 2).to(dtype)
    cases = [
        lambda x: torch.nonzero_static(x, size=3),
        lambda x: torch.nonzero_static(x, size=30, fill_value=7),
        lambda x: torch.nonzero_static(x.t(), size=12, fill_value=-5),
        lambda x: torch.nonzero_static(x[::2, 1:], size=4),
        lambda x: torch.nonzero_static(x, size=0),
        lambda x: torch.nonzero_static(x[0, 0], size=2),
        lambda x: torch.nonzero_static(x[:0], size=2),
        lambda x: torch.nonzero_static(x.view(1, 5, 1, 4), size=6, fill_value=1),
    ]
    for case in cases:
        assert_equal(natively(case, x.to("neuron")), case(x))
    out_cpu = torch.full((2, 2), 3, dtype=torch.int64)
    torch.nonzero_static(x, size=5, out=out_cpu)
    out = torch.full((2, 2), 3, dtype=torch.int64, device="neuron")
    natively(lambda: torch.nonzero_static(x.to("neuron"), size=5, out=out))
    assert_equal(out, out_cpu)


def test_nonzero_static_reads_nan_and_bool_bytes_as_the_cpu_does():
    x = torch.tensor([0.0, float("nan"), -0.0, 2.0])
    assert_equal(
        natively(torch.nonzero_static, x.to("neuron"), size=3), torch.nonzero_static(x, size=3)
    )
    flags = torch.tensor([0, 2, 0, 255], dtype=torch.uint8).view(torch.bool)
    got = natively(torch.nonzero_static, flags.to("neuron"), size=3)
    assert_equal(got, torch.nonzero_static(flags, size=3))


def test_nonzero_static_refuses_what_the_cpu_refuses():
    x = torch.tensor([[0, 1], [2, 0]])
    same_error(torch.nonzero_static, x, size=-1)
    same_error(
        lambda x, out: torch.nonzero_static(x, size=3, out=out),
        x,
        torch.empty(0, dtype=torch.int32),
    )


def test_nonzero_static_mutant_is_caught():
    def no_fill(x, *, size, fill_value=-1):
        return torch.zeros((size, x.dim()), dtype=torch.int64, device=x.device)

    with kernel_replaced("nonzero_static", no_fill):
        with pytest.raises(AssertionError):
            test_nonzero_static_matches_the_cpu(torch.int32)


# ---- linalg.cross ----------------------------------------------------------------------

CROSS_CASES = [
    # (a's shape, b's shape, dim)
    ((5, 3), (5, 3), -1),
    ((3, 4, 2), (3, 4, 2), 0),
    ((2, 3, 4), (1, 3, 1), 1),
    ((1, 3), (6, 3), -1),
    ((0, 3), (0, 3), 1),
]


def exact_cross(a, b, dim):
    return torch.linalg.cross(a.double(), b.double(), dim=dim)


def assert_cross_close(got, cpu, exact):
    """Integers exact; floats within the CPU's tolerance of the CPU's value, or at least as close
    to the float64 result as the CPU's value (16-bit floats are rounded once here, where the
    CPU rounds each product to 16 bits before subtracting)."""
    assert got.device.type == "neuron" and got.dtype == cpu.dtype and got.shape == cpu.shape
    got = got.cpu()
    if not cpu.dtype.is_floating_point:
        assert torch.equal(got, cpu), (got, cpu)
        return
    tol = {torch.float32: 1e-5, torch.bfloat16: 1e-2, torch.float16: 1e-3}[cpu.dtype]
    error = (got.double() - exact).abs()
    cpu_error = (cpu.double() - exact).abs()
    assert bool((error <= cpu_error + tol * (1 + exact.abs())).all()), (got, cpu, exact)


@pytest.mark.parametrize("dtype", DTYPES[1:], ids=str)
def test_linalg_cross_matches_the_cpu(dtype):
    for seed, (a_shape, b_shape, dim) in enumerate(CROSS_CASES):
        a, b = sample(a_shape, dtype, seed), sample(b_shape, dtype, seed + 10)
        exact = exact_cross(a, b, dim)
        for fn in (
            lambda a, b: torch.linalg.cross(a, b, dim=dim),
            lambda a, b: torch.cross(a, b, dim=dim),
            # b x a = -(a x b), from a non-contiguous b.
            lambda a, b: torch.linalg.cross(
                b.transpose(0, -1).contiguous().transpose(0, -1), a, dim=dim
            ).neg(),
        ):
            assert_cross_close(natively(fn, a.to("neuron"), b.to("neuron")), fn(a, b), exact)
    a, b = sample((4, 3), dtype, 1), sample((4, 3), dtype, 2)
    out = torch.empty((2, 2), dtype=dtype, device="neuron")
    natively(lambda: torch.linalg.cross(a.to("neuron"), b.to("neuron"), out=out))
    assert_cross_close(out, torch.linalg.cross(a, b), exact_cross(a, b, -1))
    # A transposed out of the right shape keeps its strides.
    out_t = torch.empty((3, 4), dtype=dtype, device="neuron").t()
    natively(lambda: torch.linalg.cross(a.to("neuron"), b.to("neuron"), out=out_t))
    assert out_t.stride() == (1, 4)
    assert_cross_close(out_t, torch.linalg.cross(a, b), exact_cross(a, b, -1))


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_linalg_cross_gradient_matches_the_cpu(dtype):
    a, b = sample((6, 3), dtype, 4), sample((1, 3), dtype, 5)
    grad = sample((6, 3), dtype, 6)
    grads = {}
    for device in ("cpu", "neuron"):
        x, y = a.to(device).requires_grad_(), b.to(device).requires_grad_()
        fn = lambda: torch.linalg.cross(x, y)  # noqa: E731
        z = natively(fn) if device == "neuron" else fn()
        grads[device] = torch.autograd.grad(z, (x, y), grad.to(device))
    for got, cpu in zip(grads["neuron"], grads["cpu"]):
        # b's gradient sums 6 rows: 16-bit sums round differently, within a few units.
        tol = {torch.float32: 1e-5, torch.bfloat16: 3e-2, torch.float16: 3e-3}[dtype]
        torch.testing.assert_close(got.cpu(), cpu, atol=tol, rtol=tol)


def test_linalg_cross_refuses_what_the_cpu_refuses():
    a = torch.randn(2, 3)
    same_error(torch.linalg.cross, a, torch.randn(2, 4))
    same_error(torch.linalg.cross, torch.randn(2, 4), torch.randn(2, 4))
    same_error(torch.linalg.cross, a, torch.randn(3, 3))
    same_error(torch.linalg.cross, a, a, dim=0)
    same_error(torch.linalg.cross, a[0], a)
    same_error(torch.linalg.cross, a, a, dim=5)
    same_error(torch.linalg.cross, a.int(), a.long())
    same_error(torch.linalg.cross, a.bool(), a.bool())
    same_error(
        lambda a, out: torch.linalg.cross(a, a, out=out), a, torch.empty(0, dtype=torch.long)
    )


def test_linalg_cross_mutant_is_caught():
    def swapped(a, b, *, dim=-1):
        return torch.ops.aten.linalg_cross.default(b.cpu(), a.cpu(), dim=dim).to(a.device)

    with kernel_replaced("linalg_cross", swapped):
        with pytest.raises(AssertionError):
            test_linalg_cross_matches_the_cpu(torch.int32)
