"""torch.special's Bessel, Airy, normal-distribution and zeta functions, its orthogonal
polynomials, sinc, and the integer shifts (<<, >>, bitwise_left/right_shift), now native.

Values are compared with the CPU's float64 results from the same inputs (the device computes
these functions in double and rounds once, so the CPU's float32 kernels are the less exact of
the two); integer inputs promote to float32 as on the CPU; edge values (0, the infinities, NaN,
outside the domain) match the CPU's; no op may run on the host fallback.
"""

import pytest
import torch

import openneuron
from tests.device_dtypes import INTEGER_DTYPES
from tests.kernel_mutants import kernel_replaced

DEVICE = "neuron"
S = torch.special

# |device - cpu64| <= atol + rtol |cpu64|: the largest error measured here is one float32
# rounding of the result (rtol 6e-8) plus, near a zero of an oscillating function, the
# function's slope times the input's own float32 rounding (atol).
TOL = dict(rtol=2e-6, atol=2e-6)


def uniform(low, high, shape=(4, 41)):
    return torch.rand(shape) * (high - low) + low


UNARY = {
    # name: (function, inputs)
    "airy_ai": (S.airy_ai, uniform(-8, 6)),
    "bessel_j0": (S.bessel_j0, uniform(-30, 30)),
    "bessel_j1": (S.bessel_j1, uniform(-30, 30)),
    "bessel_y0": (S.bessel_y0, uniform(0.05, 30)),
    "bessel_y1": (S.bessel_y1, uniform(0.05, 30)),
    "modified_bessel_k0": (S.modified_bessel_k0, uniform(0.01, 40)),
    "modified_bessel_k1": (S.modified_bessel_k1, uniform(0.01, 40)),
    "scaled_modified_bessel_k0": (S.scaled_modified_bessel_k0, uniform(0.01, 900)),
    "scaled_modified_bessel_k1": (S.scaled_modified_bessel_k1, uniform(0.01, 900)),
    "spherical_bessel_j0": (S.spherical_bessel_j0, uniform(-20, 20)),
    "log_ndtr": (S.log_ndtr, uniform(-40, 8)),
    "ndtri": (S.ndtri, uniform(1e-6, 1 - 1e-6)),
    "sinc": (torch.sinc, uniform(-6, 6)),
}

POLYNOMIALS = {
    "chebyshev_polynomial_t": S.chebyshev_polynomial_t,
    "chebyshev_polynomial_u": S.chebyshev_polynomial_u,
    "chebyshev_polynomial_v": S.chebyshev_polynomial_v,
    "chebyshev_polynomial_w": S.chebyshev_polynomial_w,
    "shifted_chebyshev_polynomial_t": S.shifted_chebyshev_polynomial_t,
    "shifted_chebyshev_polynomial_u": S.shifted_chebyshev_polynomial_u,
    "shifted_chebyshev_polynomial_v": S.shifted_chebyshev_polynomial_v,
    "shifted_chebyshev_polynomial_w": S.shifted_chebyshev_polynomial_w,
    "hermite_polynomial_h": S.hermite_polynomial_h,
    "hermite_polynomial_he": S.hermite_polynomial_he,
    "laguerre_polynomial_l": S.laguerre_polynomial_l,
    "legendre_polynomial_p": S.legendre_polynomial_p,
}


def assert_matches_float64(dev, x64_result, tol=TOL):
    assert dev.dtype == torch.float32
    torch.testing.assert_close(dev.cpu().double(), x64_result, equal_nan=True, **tol)


def float64_reference(name, x):
    """The CPU's float64 result; for Airy's Ai, mpmath's: the CPU's float64 airy_ai is off by
    up to 1.6e-6 between -3 and -2 (measured against mpmath), more than float32's rounding."""
    if name == "airy_ai":
        import mpmath

        values = [float(mpmath.airyai(v)) for v in x.double().flatten().tolist()]
        return torch.tensor(values, dtype=torch.float64).reshape(x.shape)
    return UNARY[name][0](x.double())


def check_unary(name):
    fn, x = UNARY[name]
    torch.manual_seed(0)
    openneuron.clear_op_tracking()
    dev = fn(x.to(DEVICE))
    assert openneuron.get_fallback_ops() == {}
    assert_matches_float64(dev, float64_reference(name, x))


@pytest.mark.parametrize("name", list(UNARY))
def test_unary_matches_cpu_float64_natively(name):
    check_unary(name)


def polynomial_inputs(name):
    """x over each family's natural range and a little beyond it, n = -1 .. 12 (and one large
    degree, which the Chebyshev kinds evaluate in their trigonometric form)."""
    low, high = (-0.2, 1.2) if name.startswith("shifted") else (-1.3, 1.3)
    if name.startswith("hermite") or name.startswith("laguerre"):
        low, high = -4.0, 6.0
    x = uniform(low, high, (15, 23))
    n = torch.arange(-1, 14, dtype=torch.float32).reshape(15, 1).expand(15, 23).clone()
    x[:, 0] = 1.0  # the endpoint forms
    x[:, 1] = 0.0 if name.startswith("shifted") else -1.0
    x[:, 2] = 0.0
    if name.startswith("chebyshev") or name.startswith("shifted"):
        n[14] = 40.0
    return x, n


@pytest.mark.parametrize("name", list(POLYNOMIALS))
def test_polynomials_match_cpu_float64_natively(name):
    fn = POLYNOMIALS[name]
    x, n = polynomial_inputs(name)
    openneuron.clear_op_tracking()
    dev = fn(x.to(DEVICE), n.to(DEVICE))
    dev_scalar_n = fn(x.to(DEVICE), 3)
    dev_scalar_x = fn(0.25, n.to(DEVICE))
    assert openneuron.get_fallback_ops() == {}
    # Degree-40 values and Hermite/Laguerre's large values carry the recurrence's rounding.
    tol = dict(rtol=2e-5, atol=2e-5)
    assert_matches_float64(dev, fn(x.double(), n.double()), tol)
    assert_matches_float64(dev_scalar_n, fn(x.double(), 3), tol)
    assert_matches_float64(
        dev_scalar_x, fn(torch.tensor(0.25, dtype=torch.float64), n.double()), tol
    )


def test_zeta_matches_cpu_natively():
    x = torch.tensor([1.0, 0.5, 2.0, 2.0, 2.0, 3.0, 2.0, 2.5, 2.0, 4.5, 1.5, 7.0])
    q = torch.tensor([1.0, 1.0, 1.0, 0.0, -1.0, -1.5, -2.5, -1.5, 1e9, 0.3, 20.0, 2.0])
    openneuron.clear_op_tracking()
    dev = S.zeta(x.to(DEVICE), q.to(DEVICE))
    dev_scalar = S.zeta(x.to(DEVICE), 2.0)
    assert openneuron.get_fallback_ops() == {}
    assert_matches_float64(dev, S.zeta(x.double(), q.double()))
    assert_matches_float64(dev_scalar, S.zeta(x.double(), 2.0))


def test_edge_values_match_cpu():
    inf, nan = float("inf"), float("nan")
    x = torch.tensor([-inf, -30.0, -5.0, -1.0, -0.0, 0.0, 1e-30, 0.5, 1.0, 5.0, 150.0, inf, nan])
    d = x.to(DEVICE)
    openneuron.clear_op_tracking()
    for name, (fn, _) in UNARY.items():
        torch.testing.assert_close(
            fn(d).cpu().double(), fn(x.double()), equal_nan=True, rtol=2e-6, atol=1e-37, msg=name
        )  # atol: float64 values below float32's range (K0(150) = 7e-67) are 0 in float32
    p = torch.tensor([-0.1, 0.0, 1e-30, 1e-10, 0.3, 0.5, 0.9, 1.0, 1.5, nan])
    torch.testing.assert_close(
        S.ndtri(p.to(DEVICE)).cpu().double(), S.ndtri(p.double()), equal_nan=True
    )
    assert openneuron.get_fallback_ops() == {}


@pytest.mark.parametrize("dtype", [torch.bool, torch.uint8, torch.int8, torch.int32, torch.int64])
def test_integer_inputs_promote_to_float_natively(dtype):
    x = torch.tensor([0, 1, 2, 3, 5, 7, 1, 0]).to(dtype)
    n = torch.tensor([1, 0, 3, 2, 1, 4, 0, 2]).to(dtype)
    d, e = x.to(DEVICE), n.to(DEVICE)
    openneuron.clear_op_tracking()
    pairs = {name: (fn(d), fn(x)) for name, (fn, _) in UNARY.items()}
    pairs.update({name: (fn(d, e), fn(x, n)) for name, fn in POLYNOMIALS.items()})
    pairs["zeta"] = (S.zeta(d, e), S.zeta(x, n))
    assert openneuron.get_fallback_ops() == {}
    for name, (dev, cpu) in pairs.items():
        assert dev.dtype == cpu.dtype, name
        torch.testing.assert_close(dev.cpu(), cpu, equal_nan=True, rtol=1e-5, atol=1e-6, msg=name)


def test_sinc_gradient_matches_cpu():
    x = uniform(-4, 4)
    x[0, :3] = torch.tensor([0.0, 1.0, -2.0])
    dev_x = x.to(DEVICE).requires_grad_()
    cpu_x = x.double().requires_grad_()
    torch.sinc(dev_x).sum().backward()
    torch.sinc(cpu_x).sum().backward()
    torch.testing.assert_close(dev_x.grad.cpu().double(), cpu_x.grad, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("dtype", INTEGER_DTYPES, ids=str)
def test_shifts_match_cpu_natively(dtype):
    info = torch.iinfo(dtype)
    values = torch.tensor([0, 1, 3, -1, -7, 100, info.max, info.min], dtype=torch.int64)
    a = values.clamp(info.min, info.max).to(dtype).reshape(8, 1).expand(8, 10).contiguous()
    # Counts inside the width, at it, past it and (for signed dtypes) negative.
    counts = [0, 1, 5, 7, 8, 15, 31, 63, 64, 100]
    b = torch.tensor(counts, dtype=torch.int64).clamp(info.min, info.max).to(dtype)
    if info.min < 0:
        b[-1] = -3
    b = b.reshape(1, 10).expand(8, 10).contiguous()
    d_a, d_b = a.to(DEVICE), b.to(DEVICE)
    openneuron.clear_op_tracking()
    results = {
        "<< tensor": (d_a << d_b, a << b),
        ">> tensor": (d_a >> d_b, a >> b),
        "<< scalar": (d_a << 3, a << 3),
        ">> scalar": (d_a >> 2, a >> 2),
        "left_shift": (torch.bitwise_left_shift(d_a, d_b), torch.bitwise_left_shift(a, b)),
        "right_shift": (torch.bitwise_right_shift(d_a, d_b), torch.bitwise_right_shift(a, b)),
        "scalar << tensor": (torch.bitwise_left_shift(2, d_b), torch.bitwise_left_shift(2, b)),
    }
    in_place_dev, in_place_cpu = d_a.clone(), a.clone()
    in_place_dev <<= 1
    in_place_cpu <<= 1
    in_place_dev >>= d_b
    in_place_cpu >>= b
    results["in place"] = (in_place_dev, in_place_cpu)
    assert openneuron.get_fallback_ops() == {}
    for name, (dev, cpu) in results.items():
        assert dev.dtype == cpu.dtype, name
        assert torch.equal(dev.cpu(), cpu), name


def test_shift_refusals_match_cpu():
    f = torch.ones(3, device=DEVICE)
    u = torch.ones(3, dtype=torch.uint8, device=DEVICE)
    with pytest.raises(NotImplementedError, match="not implemented for 'Float'"):
        f << 1
    with pytest.raises(RuntimeError, match="can't be cast to the desired output type Byte"):
        u <<= 1.5
    # The device stays usable.
    assert torch.equal((u << 2).cpu(), torch.full((3,), 4, dtype=torch.uint8))


MUTANTS = {
    # name: (aten overload replaced, wrong kernel, the check that must fail)
    "bessel_j0": (
        "special_bessel_j0",
        lambda x: torch.special.bessel_j1(x.cpu()).to(x.device),
        lambda: check_unary("bessel_j0"),
    ),
    "chebyshev_u": (
        "special_chebyshev_polynomial_u",
        lambda x, n: S.chebyshev_polynomial_t(
            torch.as_tensor(x).cpu(), torch.as_tensor(n).cpu()
        ).to(DEVICE),
        lambda: test_polynomials_match_cpu_float64_natively("chebyshev_polynomial_u"),
    ),
}


@pytest.mark.parametrize("name", list(MUTANTS))
def test_a_wrong_kernel_is_caught(name):
    op_name, kernel, check = MUTANTS[name]
    with kernel_replaced(op_name, kernel), pytest.raises(AssertionError):
        check()
