"""Special-function pointwise ops that used to run on the host fallback, now native: inverse
trigonometric and hyperbolic functions, cosh/sinh, erfc/erfinv/erfcx, lgamma/digamma/polygamma,
the modified Bessel functions i0/i0e/i1/i1e, entr, logit (and its gradient), angle and signbit
of real tensors, xlogy/xlog1py, copysign, fmax/fmin, heaviside and rsub.

Each op runs forward (and backward where it has a gradient) on neuron at float32, bfloat16 and
float16 and on the CPU at float32 from the same dtype-rounded inputs; values and gradients are
compared and no op may run on the host fallback. Integer inputs promote to float as on the CPU,
and the CPU's argument errors are raised at the call.
"""

import pytest
import torch

import openneuron
from tests.kernel_mutants import kernel_replaced

DEVICE = "neuron"
FLOAT_DTYPES = [torch.float32, torch.bfloat16, torch.float16]

# Tolerances per dtype, a few times the largest errors measured over these ops and inputs
# (|device - cpu| / (|cpu| + 1), values / gradients): float32 7.3e-7 / 8.0e-7 (results computed in
# double and rounded once, against the CPU's float kernels); bfloat16 3.1e-3 / 9.9e-3 and float16
# 6.4e-4 / 1.7e-3 against an fp32 reference (one 16-bit rounding of the value; gradients are a few
# 16-bit roundings of intermediates, as on the CPU and CUDA).
TOL = {
    torch.float32: dict(atol=1e-5, rtol=1e-5),
    torch.bfloat16: dict(atol=2e-2, rtol=2e-2),
    torch.float16: dict(atol=3e-3, rtol=3e-3),
}
GRAD_TOL = {
    torch.float32: dict(atol=1e-5, rtol=1e-5),
    torch.bfloat16: dict(atol=5e-2, rtol=4e-2),
    torch.float16: dict(atol=6e-3, rtol=6e-3),
}


def uniform(low, high):
    return lambda shape: torch.rand(shape) * (high - low) + low


def normal(scale):
    return lambda shape: torch.randn(shape) * scale


def away_from_bounds(shape):
    """Values in [0, 1] away from logit's clamp bounds 0.2 and 0.8, where the fp32 reference and
    a 16-bit input's rounded bounds would fall on different sides."""
    x = torch.rand(shape)
    return torch.where(x < 0.5, x * 0.3, 0.7 + x * 0.3) * torch.where(x < 0.25, 0.5, 1.0)


UNARY = {
    # name: (function, input factory); inputs stay where the function is smooth.
    "acos": (torch.acos, uniform(-0.9, 0.9)),
    "asin": (torch.asin, uniform(-0.9, 0.9)),
    "atan": (torch.atan, normal(3)),
    "acosh": (torch.acosh, uniform(1.2, 6)),
    "asinh": (torch.asinh, normal(3)),
    "atanh": (torch.atanh, uniform(-0.9, 0.9)),
    "cosh": (torch.cosh, normal(2)),
    "sinh": (torch.sinh, normal(2)),
    "erfc": (torch.erfc, normal(1.5)),
    "erfinv": (torch.erfinv, uniform(-0.9, 0.9)),
    "erfcx": (torch.special.erfcx, uniform(-2, 5)),
    "lgamma": (torch.lgamma, uniform(0.3, 8)),
    "digamma": (torch.digamma, uniform(0.5, 8)),
    "polygamma_1": (lambda x: torch.polygamma(1, x), uniform(0.5, 6)),
    "polygamma_2": (lambda x: torch.polygamma(2, x), uniform(0.8, 6)),
    "i0": (torch.i0, normal(3)),
    "i0e": (torch.special.i0e, normal(3)),
    "i1": (torch.special.i1, normal(3)),
    "i1e": (torch.special.i1e, normal(3)),
    "modified_bessel_i0": (torch.special.modified_bessel_i0, normal(3)),
    "entr": (torch.special.entr, uniform(0.05, 3)),
    "logit": (torch.logit, uniform(0.05, 0.95)),
    "logit_eps": (lambda x: torch.logit(x, eps=0.2), away_from_bounds),
}
# Ops without a gradient (modified Bessel functions), and those whose gradient formula PyTorch
# defines for float32 and float64 only (i1_backward, on every device).
NO_GRAD = {"modified_bessel_i0"}
NO_16BIT_GRAD = {"i1", "i1e"}

BINARY = {
    # name: (function, first factory, second factory)
    "xlogy": (torch.xlogy, normal(2), uniform(0.1, 4)),
    "xlog1py": (torch.special.xlog1py, normal(2), uniform(-0.8, 3)),
    "copysign": (torch.copysign, normal(2), normal(2)),
    "fmax": (torch.fmax, normal(2), normal(2)),
    "fmin": (torch.fmin, normal(2), normal(2)),
    "rsub": (lambda a, b: torch.rsub(a, b, alpha=2), normal(2), normal(2)),
}


def rounded(t, dtype):
    return t.to(dtype).float()


def compare(dev, cpu, tol):
    torch.testing.assert_close(dev.cpu().float(), cpu.detach().float(), equal_nan=True, **tol)


def check_unary(name, dtype):
    fn, factory = UNARY[name]
    has_grad = name not in NO_GRAD and not (name in NO_16BIT_GRAD and dtype != torch.float32)
    torch.manual_seed(3)
    x = rounded(factory((5, 37)), dtype)
    cpu_x = x.clone().requires_grad_()
    dev_x = x.to(DEVICE, dtype).requires_grad_(has_grad)
    openneuron.clear_op_tracking()
    dev_out = fn(dev_x)
    cpu_out = fn(cpu_x if has_grad else x)
    if has_grad:
        upstream = rounded(torch.rand(5, 37) + 0.5, dtype)
        (dev_out * upstream.to(DEVICE, dtype)).sum().backward()
        (cpu_out * upstream).sum().backward()
    assert openneuron.get_fallback_ops() == {}
    assert dev_out.dtype == dtype
    compare(dev_out, cpu_out, TOL[dtype])
    if has_grad:
        compare(dev_x.grad, cpu_x.grad, GRAD_TOL[dtype])


def check_binary(name, dtype):
    fn, first, second = BINARY[name]
    torch.manual_seed(4)
    a, b = rounded(first((6, 29)), dtype), rounded(second((6, 29)), dtype)
    a[0, :5] = 0.0  # xlogy's and xlog1py's zero cases, copysign of zero
    cpu_a, cpu_b = a.clone().requires_grad_(), b.clone().requires_grad_()
    dev_a = a.to(DEVICE, dtype).requires_grad_()
    dev_b = b.to(DEVICE, dtype).requires_grad_()
    openneuron.clear_op_tracking()
    dev_out = fn(dev_a, dev_b)
    cpu_out = fn(cpu_a, cpu_b)
    upstream = rounded(torch.rand(6, 29) + 0.5, dtype)
    (dev_out * upstream.to(DEVICE, dtype)).sum().backward()
    (cpu_out * upstream).sum().backward()
    assert openneuron.get_fallback_ops() == {}
    assert dev_out.dtype == dtype
    compare(dev_out, cpu_out, TOL[dtype])
    compare(dev_a.grad, cpu_a.grad, GRAD_TOL[dtype])
    compare(dev_b.grad, cpu_b.grad, GRAD_TOL[dtype])


@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=str)
@pytest.mark.parametrize("name", list(UNARY))
def test_unary_matches_cpu_natively(name, dtype):
    check_unary(name, dtype)


@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=str)
@pytest.mark.parametrize("name", list(BINARY))
def test_binary_matches_cpu_natively(name, dtype):
    check_binary(name, dtype)


@pytest.mark.parametrize("dtype", [torch.bool, torch.uint8, torch.int8, torch.int32, torch.int64])
def test_integer_inputs_promote_to_float_natively(dtype):
    x = torch.tensor([0, 1, 2, 3, 5, 7, 1, 0]).to(dtype)
    y = torch.tensor([1, 0, 3, 2, 1, 4, 0, 2]).to(dtype)
    openneuron.clear_op_tracking()
    d, e = x.to(DEVICE), y.to(DEVICE)
    results = {
        "atan": (torch.atan(d), torch.atan(x)),
        "lgamma": (torch.lgamma(d), torch.lgamma(x)),
        "digamma": (torch.digamma(d), torch.digamma(x)),
        "i0": (torch.i0(d), torch.i0(x)),
        "erfinv": (torch.erfinv(d), torch.erfinv(x)),
        "signbit": (torch.signbit(d), torch.signbit(x)),
        "angle": (torch.angle(d), torch.angle(x)),
        "xlogy": (torch.xlogy(d, e), torch.xlogy(x, y)),
        "fmax": (torch.fmax(d, e), torch.fmax(x, y)),
        "heaviside": (torch.heaviside(d, e), torch.heaviside(x, y)),
    }
    assert openneuron.get_fallback_ops() == {}
    for name, (dev, cpu) in results.items():
        assert dev.dtype == cpu.dtype, name
        torch.testing.assert_close(dev.cpu(), cpu, equal_nan=True, msg=name)


def test_edge_values_match_cpu():
    inf, nan = float("inf"), float("nan")
    x = torch.tensor([-inf, -3.0, -2.5, -1.0, -0.0, 0.0, 0.5, 1.0, 30.0, inf, nan])
    d = x.to(DEVICE)
    openneuron.clear_op_tracking()
    for fn in [
        torch.digamma,
        torch.lgamma,
        torch.erfinv,
        torch.special.erfcx,
        torch.special.i0e,
        torch.special.i1e,
        torch.special.entr,
        torch.signbit,
        torch.angle,
        torch.logit,
        lambda t: torch.polygamma(3, t),
    ]:
        torch.testing.assert_close(fn(d).cpu(), fn(x), equal_nan=True, rtol=2e-6, atol=0)
    assert openneuron.get_fallback_ops() == {}


def test_cuda_checks_raise_at_the_call():
    f = torch.randn(4, device=DEVICE)
    i = torch.ones(4, dtype=torch.int32, device=DEVICE)
    with pytest.raises(RuntimeError, match="heaviside is not yet implemented for tensors with"):
        torch.heaviside(f, i)
    with pytest.raises(RuntimeError, match="does not support negative n"):
        torch.polygamma(-1, f)
    b = torch.ones(4, dtype=torch.bool, device=DEVICE)
    with pytest.raises(RuntimeError, match="Subtraction, the `-` operator, with two bool"):
        torch.rsub(b, b)
    with pytest.raises(RuntimeError, match="alpha must not be a floating point"):
        torch.rsub(i, i, alpha=0.5)
    # The device stays usable after each refusal.
    torch.testing.assert_close(torch.acos(f.clamp(-1, 1)).cpu(), torch.acos(f.cpu().clamp(-1, 1)))


def test_kl_div_and_bce_run_natively():
    torch.manual_seed(5)
    inp = torch.log_softmax(torch.randn(4, 7), -1)
    target = torch.softmax(torch.randn(4, 7), -1)
    dev_inp = inp.to(DEVICE).requires_grad_()
    cpu_inp = inp.clone().requires_grad_()
    openneuron.clear_op_tracking()
    dev_loss = torch.nn.functional.kl_div(dev_inp, target.to(DEVICE), reduction="batchmean")
    dev_loss.backward()
    cpu_loss = torch.nn.functional.kl_div(cpu_inp, target, reduction="batchmean")
    cpu_loss.backward()
    assert openneuron.get_fallback_ops() == {}
    compare(dev_loss, cpu_loss, TOL[torch.float32])
    compare(dev_inp.grad, cpu_inp.grad, TOL[torch.float32])


MUTANTS = {
    # op: (aten overload replaced, check that must now fail)
    "digamma": ("digamma", lambda x: torch.digamma(x.cpu() + 1e-3).to(x.device), "digamma"),
    "erfinv": ("erfinv", lambda x: (torch.erfinv(x.cpu()) * 1.002).to(x.device), "erfinv"),
}


@pytest.mark.parametrize("name", list(MUTANTS))
def test_a_wrong_kernel_is_caught(name):
    op_name, kernel, unary_name = MUTANTS[name]
    with kernel_replaced(op_name, kernel), pytest.raises(AssertionError):
        check_unary(unary_name, torch.float32)


@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=str)
def test_nan_reductions_match_cpu_natively(dtype):
    torch.manual_seed(6)
    x = rounded(torch.randn(4, 9), dtype)
    x[1, 2] = x[3, 0] = float("nan")
    cpu_x = x.clone().requires_grad_()
    dev_x = x.to(DEVICE, dtype).requires_grad_()
    openneuron.clear_op_tracking()
    dev_sum, cpu_sum = torch.nansum(dev_x, 1), torch.nansum(cpu_x, 1)
    dev_mean, cpu_mean = torch.nanmean(dev_x, 0), torch.nanmean(cpu_x, 0)
    (dev_sum.sum() + dev_mean.sum()).backward()
    (cpu_sum.sum() + cpu_mean.sum()).backward()
    assert openneuron.get_fallback_ops() == {}
    compare(dev_sum, cpu_sum, GRAD_TOL[dtype])
    compare(dev_mean, cpu_mean, GRAD_TOL[dtype])
    compare(dev_x.grad, cpu_x.grad, GRAD_TOL[dtype])


@pytest.mark.parametrize(
    "dtype", [torch.bool, torch.uint8, torch.int32, torch.int64, torch.bfloat16]
)
def test_integer_reductions_match_cpu_natively(dtype):
    x = torch.tensor([[1, 0, 3, 0], [0, 2, 0, 5], [4, 0, 0, 1]]).to(dtype)
    d = x.to(DEVICE)
    openneuron.clear_op_tracking()
    pairs = {
        "count_nonzero": (torch.count_nonzero(d, 1), torch.count_nonzero(x, 1)),
        "count_nonzero_all": (torch.count_nonzero(d), torch.count_nonzero(x)),
        "aminmax": (torch.stack(torch.aminmax(d)), torch.stack(torch.aminmax(x))),
        "aminmax_dim": (
            torch.stack(torch.aminmax(d, dim=0, keepdim=True)),
            torch.stack(torch.aminmax(x, dim=0, keepdim=True)),
        ),
        "nansum": (torch.nansum(d, 0), torch.nansum(x, 0)),
    }
    if dtype != torch.bfloat16:
        pairs["logsumexp"] = (torch.logsumexp(d, 1), torch.logsumexp(x, 1))
    assert openneuron.get_fallback_ops() == {}
    for name, (dev, cpu) in pairs.items():
        assert dev.dtype == cpu.dtype, name
        torch.testing.assert_close(dev.cpu(), cpu, msg=name)


def test_reduction_checks_raise_at_the_call():
    empty = torch.empty(0, 3, device=DEVICE)
    with pytest.raises(RuntimeError, match="cannot compute aminmax over an empty dimension"):
        torch.aminmax(empty)
    with pytest.raises(IndexError, match="Expected reduction dim 0 to have non-zero size"):
        torch.aminmax(empty, dim=0)
    low, high = torch.aminmax(empty, dim=1)
    assert low.shape == high.shape == (0,)


def test_a_wrong_nansum_is_caught():
    def nansum_counting_nan_as_one(self, dim=None, keepdim=False, *, dtype=None):
        return torch.sum(self.cpu().nan_to_num(1.0), dim, keepdim, dtype=dtype).to(self.device)

    with kernel_replaced("nansum", nansum_counting_nan_as_one), pytest.raises(AssertionError):
        test_nan_reductions_match_cpu_natively(torch.float32)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.int32])
def test_mvlgamma_out_matches_cpu_natively(dtype):
    torch.manual_seed(7)
    x = (torch.rand(4, 6) * 4 + 2).to(dtype)
    out = torch.empty(0, device=DEVICE, dtype=torch.promote_types(dtype, torch.float32))
    openneuron.clear_op_tracking()
    torch.mvlgamma(x.to(DEVICE), 3, out=out)
    assert openneuron.get_fallback_ops() == {}
    expected = torch.mvlgamma(x.float() if dtype == torch.bfloat16 else x, 3)
    tol = TOL[torch.bfloat16] if dtype == torch.bfloat16 else TOL[torch.float32]
    compare(out, expected, tol)
    with pytest.raises(RuntimeError, match="can't be cast to the desired output type"):
        torch.mvlgamma(x.to(DEVICE), 3, out=torch.empty(0, dtype=torch.int32, device=DEVICE))
