"""Float math on the device: logaddexp/logaddexp2 and logcumsumexp, nextafter (bit for bit,
each dtype in its own format), frexp, renorm. Values and gradients against the CPU, the
infinities and NaN, the CPU's refusals, and no op on the host fallback for float inputs.
"""

import pytest
import torch

import openneuron
from tests.kernel_mutants import kernel_replaced

DEVICE = "neuron"
FLOATS = [torch.float32, torch.bfloat16, torch.float16]
INF, NAN = float("inf"), float("nan")


def operands(dtype):
    torch.manual_seed(3)
    a = (torch.randn(9, 11) * 30).to(dtype)
    b = (torch.randn(9, 11) * 30).to(dtype)
    edges_a = torch.tensor([INF, -INF, INF, -INF, NAN, 1.0, 0.0, -0.0, 0.0, 1e-3, -2.0])
    edges_b = torch.tensor([INF, -INF, -INF, 5.0, 1.0, NAN, -0.0, 0.0, 0.0, 1e-3, -2.0])
    a[0], b[0] = edges_a.to(dtype), edges_b.to(dtype)
    return a, b


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
@pytest.mark.parametrize("op", [torch.logaddexp, torch.logaddexp2], ids=lambda f: f.__name__)
def test_logaddexp_matches_cpu(op, dtype):
    a, b = operands(dtype)
    d_a, d_b = a.to(DEVICE).requires_grad_(), b.to(DEVICE).requires_grad_()
    c_a, c_b = a.clone().requires_grad_(), b.clone().requires_grad_()
    openneuron.clear_op_tracking()
    dev, cpu = op(d_a, d_b), op(c_a, c_b)
    dev[1:].sum().backward()
    cpu[1:].sum().backward()
    out = torch.empty(0, dtype=dtype, device=DEVICE)
    op(d_a.detach(), d_b[:1].detach(), out=out)
    assert openneuron.get_fallback_ops() == {}
    tol = dict(rtol=2e-6, atol=1e-6) if dtype == torch.float32 else {}
    torch.testing.assert_close(dev.detach().cpu(), cpu.detach(), equal_nan=True, **tol)
    torch.testing.assert_close(out.cpu(), op(a, b[:1]), equal_nan=True, **tol)
    torch.testing.assert_close(d_a.grad.cpu(), c_a.grad, equal_nan=True, **tol)
    torch.testing.assert_close(d_b.grad.cpu(), c_b.grad, equal_nan=True, **tol)


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_nextafter_steps_in_each_dtypes_own_format(dtype):
    a, b = operands(dtype)
    tiny = torch.finfo(dtype).tiny
    a[1, :6] = torch.tensor(
        [0.0, -0.0, tiny, -tiny, 65504.0 if dtype == torch.float16 else 1.0, 1.0]
    )
    b[1, :6] = torch.tensor([-1.0, 1.0, 0.0, 0.0, INF, 1.0])
    d_a, d_b = a.to(DEVICE), b.to(DEVICE)
    openneuron.clear_op_tracking()
    dev = torch.nextafter(d_a, d_b)
    in_place = d_a.clone().nextafter_(d_b)
    assert openneuron.get_fallback_ops() == {}
    want = torch.nextafter(a, b)
    number = ~want.isnan()
    bits = torch.int32 if dtype == torch.float32 else torch.int16
    for got in (dev, in_place):
        assert got.dtype == dtype
        assert torch.equal(got.cpu().isnan(), want.isnan())
        assert torch.equal(got.cpu().view(bits)[number], want.view(bits)[number])


def test_integer_inputs_are_refused_as_on_the_cpu():
    ints = torch.arange(4)
    for op in (torch.logaddexp, torch.logaddexp2, torch.nextafter):
        with pytest.raises(NotImplementedError) as cpu_error:
            op(ints, ints)
        with pytest.raises(NotImplementedError) as device_error:
            op(ints.to(DEVICE), ints.to(DEVICE))
        assert str(device_error.value).split("\n")[0] == str(cpu_error.value).split("\n")[0]


def test_a_wrong_nextafter_is_caught():
    def float32_step(self, other):
        # Steps in fp32 and rounds back: a 16-bit result would not move at all.
        return torch.nextafter(self.cpu().float(), other.cpu().float()).to(self.dtype).to(DEVICE)

    with kernel_replaced("nextafter", float32_step), pytest.raises(AssertionError):
        test_nextafter_steps_in_each_dtypes_own_format(torch.bfloat16)


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_frexp_matches_cpu(dtype):
    a, _ = operands(dtype)
    a[1, :3] = torch.tensor([torch.finfo(dtype).tiny / 4, torch.finfo(dtype).max, -3.0])
    d = a.to(DEVICE)
    openneuron.clear_op_tracking()
    mantissa, exponent = torch.frexp(d[:, ::2])
    assert openneuron.get_fallback_ops() == {}
    want = torch.frexp(a[:, ::2])
    assert mantissa.dtype == dtype and exponent.dtype == torch.int32
    torch.testing.assert_close(mantissa.cpu(), want.mantissa, rtol=0, atol=0, equal_nan=True)
    finite = want.mantissa.isfinite()
    assert torch.equal(exponent.cpu()[finite], want.exponent[finite])
    with pytest.raises(RuntimeError, match="expects exponent to have int dtype"):
        torch.frexp(d, out=(torch.empty_like(d), torch.empty(0, dtype=torch.long, device=DEVICE)))


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_logcumsumexp_matches_cpu(dtype):
    a, _ = operands(dtype)
    a = a / 10
    a[2, :4] = torch.tensor([-INF, -INF, 1.0, INF])
    d = a.to(DEVICE).requires_grad_()
    c = a.clone().requires_grad_()
    openneuron.clear_op_tracking()
    for dim in (0, 1):
        got, want = torch.logcumsumexp(d, dim), torch.logcumsumexp(c, dim)
        tol = dict(rtol=2e-6, atol=2e-6) if dtype == torch.float32 else {}
        torch.testing.assert_close(got.detach().cpu(), want.detach(), equal_nan=True, **tol)
    out = torch.empty(0, dtype=dtype, device=DEVICE)
    torch.logcumsumexp(d.detach().t(), 1, out=out)
    torch.testing.assert_close(out.cpu(), torch.logcumsumexp(a.t(), 1), equal_nan=True, **tol)
    finite = d[3:], c[3:]
    torch.logcumsumexp(finite[0], 1).sum().backward()
    torch.logcumsumexp(finite[1], 1).sum().backward()
    assert openneuron.get_fallback_ops() == {}
    torch.testing.assert_close(d.grad.cpu(), c.grad, **(tol or dict(rtol=2e-2, atol=2e-2)))


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
@pytest.mark.parametrize("p", [1, 2, 3.5])
def test_renorm_matches_cpu(dtype, p):
    torch.manual_seed(4)
    x = (torch.randn(4, 6, 3) * 3).to(dtype)
    dev = x.to(DEVICE).requires_grad_()
    cpu = x.clone().requires_grad_()
    openneuron.clear_op_tracking()
    got, want = torch.renorm(dev, p, 1, 5.0), torch.renorm(cpu, p, 1, 5.0)
    in_place = dev.detach().clone().renorm_(p, 0, 2.0)
    assert openneuron.get_fallback_ops() == {}
    got.sum().backward()
    want.sum().backward()
    # PyTorch's renorm gradient computes fp32 inputs in float64 on every device but CUDA, and
    # float64 runs on the host by design; 16-bit inputs take fp32 there.
    if dtype != torch.float32:
        assert openneuron.get_fallback_ops() == {}
    tol = dict(rtol=1e-5, atol=1e-5) if dtype == torch.float32 else dict(rtol=2e-2, atol=2e-2)
    torch.testing.assert_close(got.detach().cpu(), want.detach(), **tol)
    torch.testing.assert_close(in_place.cpu(), x.clone().renorm_(p, 0, 2.0), **tol)
    torch.testing.assert_close(dev.grad.cpu(), cpu.grad, **tol)
    with pytest.raises(RuntimeError, match="non-positive-norm not supported"):
        torch.renorm(dev.detach(), -1, 0, 1.0)
