"""gcd, lcm, hypot, trace and conj_physical of real tensors, now native: values and dtypes
equal to the CPU's (lcm wraps in the dtype's width as the CPU's kernel does), trace over every
dtype CUDA takes (bool and integers sum to int64), the CPU's errors at the call, and no op on
the host fallback.
"""

import pytest
import torch

import openneuron
from tests.device_dtypes import INTEGER_DTYPES, NATIVE_DTYPES
from tests.kernel_mutants import kernel_replaced

DEVICE = "neuron"


def integer_pairs(dtype):
    torch.manual_seed(1)
    info = torch.iinfo(dtype)
    low = max(info.min + 1, -120)
    a = torch.randint(low, 120, (7, 13)).to(dtype)
    b = torch.randint(low, 120, (7, 13)).to(dtype)
    a[0, :4] = torch.tensor([0, 0, 12, 100]).to(dtype)
    b[0, :4] = torch.tensor([0, 9, 0, 3]).to(dtype)
    return a, b


@pytest.mark.parametrize("dtype", INTEGER_DTYPES, ids=str)
def test_gcd_and_lcm_match_cpu_natively(dtype):
    a, b = integer_pairs(dtype)
    d_a, d_b = a.to(DEVICE), b.to(DEVICE)
    openneuron.clear_op_tracking()
    results = {
        "gcd": (torch.gcd(d_a, d_b), torch.gcd(a, b)),
        "lcm": (torch.lcm(d_a, d_b), torch.lcm(a, b)),
        "gcd broadcast": (torch.gcd(d_a, d_b[:1]), torch.gcd(a, b[:1])),
        "lcm_": (d_a.clone().lcm_(d_b), a.clone().lcm_(b)),
    }
    assert openneuron.get_fallback_ops() == {}
    for name, (dev, cpu) in results.items():
        assert dev.dtype == cpu.dtype, name
        assert torch.equal(dev.cpu(), cpu), name


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16], ids=str)
def test_hypot_matches_cpu_natively(dtype):
    torch.manual_seed(2)
    a = (torch.randn(6, 17) * 3).to(dtype)
    b = (torch.randn(6, 17) * 3).to(dtype)
    a[0, :3] = torch.tensor([3e38 if dtype == torch.float32 else 100.0, 0.0, float("inf")])
    b[0, :3] = torch.tensor([3e38 if dtype == torch.float32 else 100.0, 0.0, float("nan")])
    d_a, d_b = a.to(DEVICE).requires_grad_(), b.to(DEVICE).requires_grad_()
    c_a, c_b = a.clone().requires_grad_(), b.clone().requires_grad_()
    openneuron.clear_op_tracking()
    dev = torch.hypot(d_a, d_b)
    cpu = torch.hypot(c_a, c_b)
    dev[1:].sum().backward()
    cpu[1:].sum().backward()
    assert openneuron.get_fallback_ops() == {}
    tol = dict(rtol=1e-6, atol=1e-6) if dtype == torch.float32 else dict(rtol=1e-2, atol=1e-2)
    torch.testing.assert_close(dev.cpu(), cpu.detach(), equal_nan=True, **tol)
    # hypot(0, 0)'s gradient is 0 * 0/0 = NaN on both devices.
    torch.testing.assert_close(d_a.grad.cpu(), c_a.grad, equal_nan=True, **tol)
    torch.testing.assert_close(d_b.grad.cpu(), c_b.grad, equal_nan=True, **tol)


@pytest.mark.parametrize("dtype", NATIVE_DTYPES, ids=str)
@pytest.mark.parametrize("shape", [(5, 5), (7, 3), (2, 6), (0, 4)])
def test_trace_matches_cpu_natively(dtype, shape):
    torch.manual_seed(3)
    x = (torch.randn(shape) * 4).to(dtype)
    openneuron.clear_op_tracking()
    dev = torch.trace(x.to(DEVICE))
    assert openneuron.get_fallback_ops() == {}
    # The CPU has no bool trace; CUDA's sums the diagonal to int64, as sum does.
    cpu = torch.diagonal(x).sum() if dtype == torch.bool else torch.trace(x)
    assert dev.dtype == cpu.dtype
    torch.testing.assert_close(dev.cpu(), cpu, rtol=1e-2, atol=1e-2)


def test_trace_gradient_and_refusal():
    x = torch.randn(4, 6)
    d = x.to(DEVICE).requires_grad_()
    torch.trace(d).backward()
    torch.testing.assert_close(d.grad.cpu(), torch.eye(4, 6))
    with pytest.raises(RuntimeError, match="trace: expected a matrix, but got tensor with dim 3"):
        torch.trace(torch.ones(2, 2, 2, device=DEVICE))
    assert torch.trace(torch.ones(3, 3, device=DEVICE)).item() == 3.0


@pytest.mark.parametrize("dtype", [torch.bool, torch.int32, torch.float16, torch.float32], ids=str)
def test_conj_physical_of_real_tensors_is_a_native_copy(dtype):
    x = (torch.randn(3, 5) * 3).to(dtype)
    out = torch.empty(0, dtype=dtype, device=DEVICE)
    openneuron.clear_op_tracking()
    result = torch.conj_physical(x.to(DEVICE)[:, ::2], out=out)
    assert openneuron.get_fallback_ops() == {}
    assert result is out
    assert torch.equal(out.cpu(), x[:, ::2])
    with pytest.raises(RuntimeError, match="Found dtype Double but expected Float"):
        torch.conj_physical(
            torch.ones(3, device=DEVICE), out=torch.empty(3, device=DEVICE).double()
        )


def test_a_wrong_lcm_is_caught():
    wrong = lambda a, b: torch.gcd(a.cpu(), b.cpu()).to(DEVICE)  # noqa: E731
    with kernel_replaced("lcm", wrong), pytest.raises(AssertionError):
        test_gcd_and_lcm_match_cpu_natively(torch.int32)


@pytest.mark.parametrize("dtype", [torch.complex64, torch.complex32], ids=str)
def test_conj_physical_of_complex_tensors_runs_natively(dtype):
    z = torch.randn(4, 6, dtype=torch.complex64).to(dtype)
    d = z.to(DEVICE)
    openneuron.clear_op_tracking()
    out = torch.empty(0, dtype=dtype, device=DEVICE)
    torch.conj_physical(d[:, ::2], out=out)
    in_place = d.clone().conj_physical_()
    ifft_of_real = torch.fft.ihfft(torch.randn(8).to(DEVICE))  # the front end conjugates
    assert openneuron.get_fallback_ops() == {}
    # Compared as (real, imag) pairs: the CPU has no equal for complex32.
    pairs = torch.view_as_real
    assert torch.equal(pairs(out.cpu()), pairs(torch.conj_physical(z[:, ::2])))
    assert torch.equal(pairs(in_place.cpu()), pairs(torch.conj_physical(z)))
    assert ifft_of_real.dtype == torch.complex64
    # complex128 stays on the host, counted.
    torch.conj_physical(torch.ones(2, dtype=torch.complex128, device=DEVICE))
    assert "aten::conj_physical.out" in openneuron.get_fallback_ops()


@pytest.mark.parametrize("dtype", INTEGER_DTYPES, ids=str)
def test_integer_threshold_matches_cpu_natively(dtype):
    x = torch.arange(-6, 18).to(dtype).reshape(4, 6) if dtype != torch.uint8 else torch.arange(24)
    x = x.to(dtype).reshape(4, 6)
    openneuron.clear_op_tracking()
    dev = torch.nn.functional.threshold(x.to(DEVICE), 3, 20)
    dev_in_place = torch.nn.functional.threshold(x.to(DEVICE).clone(), 5.7, -1, inplace=True)
    assert openneuron.get_fallback_ops() == {}
    assert torch.equal(dev.cpu(), torch.nn.functional.threshold(x, 3, 20))
    expected = torch.nn.functional.threshold(x.clone(), 5.7, -1, inplace=True)
    assert torch.equal(dev_in_place.cpu(), expected)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16], ids=str)
def test_incomplete_gamma_matches_cpu_natively(dtype):
    torch.manual_seed(6)
    a = (torch.rand(5, 23) * 12).to(dtype)
    x = (torch.rand(5, 23) * 15).to(dtype)
    a[0, :6] = torch.tensor([0.0, 1.0, 0.0, -1.0, float("inf"), 2.0]).to(dtype)
    x[0, :6] = torch.tensor([0.0, 0.0, 1.0, 2.0, 3.0, float("inf")]).to(dtype)
    # Large a near x: the uniform expansion's range, where the CPU's float32 kernel drifts.
    a[1, :4] = torch.tensor([1e10, 1e7, 2e6, 5e5]).to(dtype)
    x[1, :4] = torch.tensor([1e10, 1e7 + 3000, 2.1e6, 5e5 + 700]).to(dtype)
    openneuron.clear_op_tracking()
    lower = torch.igamma(a.to(DEVICE), x.to(DEVICE))
    upper = torch.igammac(a.to(DEVICE), x.to(DEVICE))
    assert openneuron.get_fallback_ops() == {}
    # Against the CPU's float64 result: one rounding to the dtype.
    tol = dict(rtol=2e-6, atol=2e-6) if dtype == torch.float32 else dict(rtol=1e-2, atol=1e-2)
    exact_lower = torch.igamma(a.double(), x.double())
    exact_upper = torch.igammac(a.double(), x.double())
    torch.testing.assert_close(lower.cpu().double(), exact_lower, equal_nan=True, **tol)
    torch.testing.assert_close(upper.cpu().double(), exact_upper, equal_nan=True, **tol)
