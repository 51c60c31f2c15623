"""Elementwise ops on neuron match PyTorch CPU: forward, gradients, dtypes, layouts, variants.

Every native case also asserts that no op fell back to the host.
"""

import pytest
import torch
import torch.nn.functional as F

import openneuron

# Tolerances per dtype, with the reason.
TOL = {
    # fp32 libm/polynomial results may differ from PyTorch's SLEEF by a few ulp.
    torch.float32: dict(rtol=2e-6, atol=1e-6),
    # one bf16 rounding of an fp32 result (2^-8 relative), plus a possible tie flip
    torch.bfloat16: dict(rtol=1.6e-2, atol=1e-2),
    # one fp16 rounding of an fp32 result (2^-11 relative)
    torch.float16: dict(rtol=2e-3, atol=1e-3),
}
# Gradients chain several ops (each fp32-rounded), so allow a little more than forward.
GRAD_TOL = dict(rtol=1e-5, atol=1e-5)

FLOAT_DTYPES = [torch.float32, torch.bfloat16, torch.float16]


def check(actual, expected, dtype=None):
    assert actual.device.type == "neuron"
    tol = TOL.get(dtype or expected.dtype, dict(rtol=0, atol=0))
    torch.testing.assert_close(actual.cpu(), expected, equal_nan=True, **tol)


@pytest.fixture(autouse=False)
def no_fallbacks():
    openneuron.clear_op_tracking()
    yield
    assert openneuron.get_fallback_ops() == {}


def make(shape, dtype, low=-3.0, high=3.0, seed=0):
    g = torch.Generator().manual_seed(seed)
    if dtype == torch.bool:
        return torch.rand(shape, generator=g) > 0.5
    if not dtype.is_floating_point:
        return torch.randint(int(low) - 2, int(high) + 3, shape, generator=g).to(dtype)
    return (torch.rand(shape, generator=g) * (high - low) + low).to(dtype)


# name -> (function, input range, supports integer inputs)
UNARY = {
    "abs": (torch.abs, (-3, 3), True),
    "neg": (torch.neg, (-3, 3), True),
    "exp": (torch.exp, (-5, 5), True),
    "exp2": (torch.exp2, (-5, 5), True),
    "log": (torch.log, (0.1, 5), True),
    "log2": (torch.log2, (0.1, 5), True),
    "log10": (torch.log10, (0.1, 5), True),
    "log1p": (torch.log1p, (-0.5, 5), True),
    "expm1": (torch.expm1, (-3, 3), True),
    "sqrt": (torch.sqrt, (0.1, 5), True),
    "rsqrt": (torch.rsqrt, (0.1, 5), True),
    "reciprocal": (torch.reciprocal, (0.5, 5), True),
    "sin": (torch.sin, (-3, 3), True),
    "cos": (torch.cos, (-3, 3), True),
    "tan": (torch.tan, (-1.2, 1.2), True),
    "tanh": (torch.tanh, (-3, 3), True),
    "sigmoid": (torch.sigmoid, (-6, 6), True),
    "erf": (torch.erf, (-3, 3), True),
    "floor": (torch.floor, (-3, 3), True),
    "ceil": (torch.ceil, (-3, 3), True),
    "round": (torch.round, (-3, 3), True),
    "round_decimals": (lambda x: torch.round(x, decimals=1), (-3, 3), False),
    "trunc": (torch.trunc, (-3, 3), True),
    "frac": (torch.frac, (-3, 3), False),
    "sign": (torch.sign, (-3, 3), True),
    "sgn": (torch.sgn, (-3, 3), True),
    "nan_to_num": (torch.nan_to_num, (-3, 3), True),
    "logical_not": (torch.logical_not, (-1, 1), True),
    "isnan": (torch.isnan, (-3, 3), True),
    "isinf": (torch.isinf, (-3, 3), True),
    "isfinite": (torch.isfinite, (-3, 3), True),
    "gelu": (F.gelu, (-4, 4), False),
    "gelu_tanh": (lambda x: F.gelu(x, approximate="tanh"), (-4, 4), False),
    "silu": (F.silu, (-6, 6), False),
    "mish": (F.mish, (-6, 6), False),
    "softplus": (lambda x: F.softplus(x, beta=2.0, threshold=5.0), (-6, 6), False),
    "leaky_relu": (lambda x: F.leaky_relu(x, 0.1), (-3, 3), False),
    "hardtanh": (lambda x: F.hardtanh(x, -1.5, 2.0), (-3, 3), False),
    "elu": (lambda x: F.elu(x, alpha=1.3), (-3, 3), False),
    "selu": (F.selu, (-3, 3), False),
    "hardsigmoid": (F.hardsigmoid, (-5, 5), False),
    "hardswish": (F.hardswish, (-5, 5), False),
    "relu6": (F.relu6, (-3, 8), False),
}
DIFFERENTIABLE = [
    n
    for n in UNARY
    if n
    not in (
        "logical_not",
        "isnan",
        "isinf",
        "isfinite",
        "sign",
        "sgn",
        "floor",
        "ceil",
        "round",
        "round_decimals",
        "trunc",
    )
]


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("name", list(UNARY))
def test_unary_forward(name, dtype, no_fallbacks):
    fn, (low, high), _ = UNARY[name]
    x = make((5, 37), dtype, low, high)
    check(fn(x.to("neuron")), fn(x), dtype)


@pytest.mark.parametrize("name", [n for n in UNARY if UNARY[n][2]])
@pytest.mark.parametrize("dtype", [torch.int32, torch.int64])
def test_unary_integer_inputs(name, dtype, no_fallbacks):
    fn, _, _ = UNARY[name]
    if name in ("log", "log2", "log10", "sqrt", "rsqrt", "reciprocal", "log1p"):
        x = make((40,), dtype, 1, 6)
    else:
        x = make((40,), dtype)
    check(fn(x.to("neuron")), fn(x))


@pytest.mark.parametrize("name", DIFFERENTIABLE)
def test_unary_gradient(name, no_fallbacks):
    fn, (low, high), _ = UNARY[name]
    x = make((6, 7), torch.float32, low, high)
    grad = make((6, 7), torch.float32, seed=1)
    xc = x.clone().requires_grad_()
    xn = x.to("neuron").requires_grad_()
    fn(xc).backward(grad)
    fn(xn).backward(grad.to("neuron"))
    torch.testing.assert_close(xn.grad.cpu(), xc.grad, **GRAD_TOL)


@pytest.mark.parametrize("name", ["exp", "sqrt", "tanh", "abs", "gelu", "floor"])
def test_unary_layouts_and_variants(name, no_fallbacks):
    fn, (low, high), _ = UNARY[name]
    op = getattr(torch, name) if hasattr(torch, name) else fn
    base = make((8, 6), torch.float32, low, high)
    # non-contiguous (transposed and strided) input
    for view in (lambda t: t.t(), lambda t: t[::2, 1::2]):
        check(fn(view(base.to("neuron"))), fn(view(base)))
    # zero-size and 0-dim
    check(fn(torch.empty(0, 3, device="neuron")), fn(torch.empty(0, 3)))
    check(fn(base[0, 0].to("neuron")), fn(base[0, 0]))
    if hasattr(torch, name) and name != "gelu":
        out = torch.empty(8, 6, device="neuron")
        op(base.to("neuron"), out=out)
        check(out, op(base))
        inplace = base.to("neuron")
        getattr(inplace, name + "_")()
        check(inplace, op(base))
        # out= into a transposed, non-contiguous output
        out_t = torch.empty(6, 8, device="neuron").t()
        op(base.to("neuron"), out=out_t)
        check(out_t, op(base))


def test_nan_to_num_and_special_values(no_fallbacks):
    x = torch.tensor([float("nan"), float("inf"), -float("inf"), 1.5, -0.0])
    for dtype in FLOAT_DTYPES:
        xd = x.to(dtype)
        check(torch.nan_to_num(xd.to("neuron")), torch.nan_to_num(xd), dtype)
        check(
            torch.nan_to_num(xd.to("neuron"), nan=1.0, posinf=2.0),
            torch.nan_to_num(xd, nan=1.0, posinf=2.0),
            dtype,
        )
        for fn in (
            torch.isnan,
            torch.isinf,
            torch.isfinite,
            torch.isposinf,
            torch.isneginf,
            torch.sign,
        ):
            check(fn(xd.to("neuron")), fn(xd))


def test_bitwise_not(no_fallbacks):
    for dtype in (torch.int32, torch.int64, torch.uint8, torch.bool):
        x = make((20,), dtype)
        check(torch.bitwise_not(x.to("neuron")), torch.bitwise_not(x))


BINARY = {
    "pow": (torch.pow, (0.5, 2.0), True),
    "maximum": (torch.maximum, (-3, 3), True),
    "minimum": (torch.minimum, (-3, 3), True),
    "atan2": (torch.atan2, (-3, 3), True),
    "remainder": (torch.remainder, (-5, 5), True),
    "fmod": (torch.fmod, (-5, 5), True),
    "floor_divide": (torch.floor_divide, (-5, 5), True),
    "div_trunc": (lambda a, b: torch.div(a, b, rounding_mode="trunc"), (-5, 5), True),
    "div_floor": (lambda a, b: torch.div(a, b, rounding_mode="floor"), (-5, 5), True),
    "eq": (torch.eq, (-2, 2), True),
    "ne": (torch.ne, (-2, 2), True),
    "lt": (torch.lt, (-2, 2), True),
    "le": (torch.le, (-2, 2), True),
    "gt": (torch.gt, (-2, 2), True),
    "ge": (torch.ge, (-2, 2), True),
    "logical_and": (torch.logical_and, (-1, 1), True),
    "logical_or": (torch.logical_or, (-1, 1), True),
    "logical_xor": (torch.logical_xor, (-1, 1), True),
    "clamp_min": (torch.clamp_min, (-3, 3), True),
    "clamp_max": (torch.clamp_max, (-3, 3), True),
    "lerp": (lambda a, b: torch.lerp(a, b, 0.3), (-3, 3), False),
    "lerp_high": (lambda a, b: torch.lerp(a, b, 0.8), (-3, 3), False),
}


def nonzero_divisor(t):
    return torch.where(t == 0, torch.ones_like(t), t)


@pytest.mark.parametrize("dtype", FLOAT_DTYPES + [torch.int32, torch.int64])
@pytest.mark.parametrize("name", list(BINARY))
def test_binary_forward_broadcast(name, dtype, no_fallbacks):
    fn, (low, high), ints = BINARY[name]
    if not dtype.is_floating_point and not ints:
        pytest.skip("float-only op")
    a = make((4, 1, 5), dtype, low, high, seed=1)
    b = make((3, 1), dtype, low, high, seed=2)
    if name in ("remainder", "fmod", "floor_divide", "div_trunc", "div_floor") or (
        name == "pow" and not dtype.is_floating_point
    ):
        b = nonzero_divisor(b).abs() if name == "pow" else nonzero_divisor(b)
    check(fn(a.to("neuron"), b.to("neuron")), fn(a, b), dtype)


@pytest.mark.parametrize(
    "name", ["pow", "maximum", "atan2", "remainder", "fmod", "eq", "lt", "clamp_min", "lerp"]
)
def test_binary_gradient_and_scalar_overloads(name, no_fallbacks):
    fn, (low, high), _ = BINARY[name]
    a = make((3, 4), torch.float32, low, high, seed=3)
    b = make((4,), torch.float32, low, high, seed=4)
    if name not in ("eq", "lt"):
        ac, bc = a.clone().requires_grad_(), b.clone().requires_grad_()
        an, bn = a.to("neuron").requires_grad_(), b.to("neuron").requires_grad_()
        grad = make((3, 4), torch.float32, seed=5)
        fn(ac, bc).backward(grad)
        fn(an, bn).backward(grad.to("neuron"))
        torch.testing.assert_close(an.grad.cpu(), ac.grad, **GRAD_TOL)
        torch.testing.assert_close(bn.grad.cpu(), bc.grad, **GRAD_TOL)
    if name not in ("lerp", "maximum", "atan2"):  # those have no Python-scalar overload
        check(fn(a.to("neuron"), 1.5), fn(a, 1.5))
        check(fn(a.to("neuron"), 2), fn(a, 2))


def test_pow_overloads(no_fallbacks):
    x = make((10,), torch.float32, 0.5, 2)
    for e in (2, 3, 0.5, -0.5, -1, -2, 1.7):
        check(torch.pow(x.to("neuron"), e), torch.pow(x, e))
    check(torch.pow(2.0, x.to("neuron")), torch.pow(2.0, x))
    i = torch.arange(-4, 5)
    check(torch.pow(i.to("neuron"), 3), torch.pow(i, 3))
    check(torch.pow(i.to("neuron"), 0.5), torch.pow(i, 0.5))
    y = x.to("neuron")
    y.pow_(2)
    check(y, x.pow(2))


@pytest.mark.parametrize("dtype", [torch.int32, torch.int64, torch.bool, torch.uint8])
def test_bitwise_binary(dtype, no_fallbacks):
    a, b = make((6, 5), dtype, seed=6), make((5,), dtype, seed=7)
    for fn in (torch.bitwise_and, torch.bitwise_or, torch.bitwise_xor):
        check(fn(a.to("neuron"), b.to("neuron")), fn(a, b))
    check(
        a.to("neuron") & 3 if dtype != torch.bool else a.to("neuron") & True,
        a & 3 if dtype != torch.bool else a & True,
    )


def test_comparison_variants(no_fallbacks):
    a, b = make((4, 5), torch.float32, -2, 2, seed=8), make((5,), torch.bfloat16, -2, 2, seed=9)
    for fn in (torch.eq, torch.ne, torch.lt, torch.le, torch.gt, torch.ge):
        r = fn(a.to("neuron"), b.to("neuron"))
        assert r.dtype == torch.bool
        check(r, fn(a, b))
        out = torch.empty(0, dtype=torch.bool, device="neuron")
        fn(a.to("neuron"), 0.5, out=out)
        check(out, fn(a, 0.5))
    x = a.to("neuron")
    x.lt_(0.0)
    check(x, a.lt(0.0).float())
    ints = torch.arange(6)
    check(ints.to("neuron") == 3, ints == 3)


def test_mixed_dtype_promotion_and_inplace_errors(no_fallbacks):
    a = make((4,), torch.int32, seed=1)
    b = make((4,), torch.float16, seed=2)
    check(torch.maximum(a.to("neuron"), b.to("neuron")), torch.maximum(a, b), torch.float16)
    check(torch.atan2(a.to("neuron"), a.to("neuron") + 1), torch.atan2(a, a + 1))
    with pytest.raises(RuntimeError, match="can't be cast"):
        a.to("neuron").pow_(1.5)


def test_where_clamp_lerp_addc_masked_fill(no_fallbacks):
    for dtype in FLOAT_DTYPES:
        x = make((4, 6), dtype, seed=10)
        y = make((6,), dtype, seed=11)
        z = make((4, 1), dtype, 0.5, 2, seed=12)
        cond = make((4, 6), torch.bool, seed=13)
        n = lambda t: t.to("neuron")  # noqa: E731
        check(torch.where(n(cond), n(x), n(y)), torch.where(cond, x, y), dtype)
        check(torch.where(n(cond), n(x), 0.5), torch.where(cond, x, 0.5), dtype)
        check(torch.clamp(n(x), -1, 1), torch.clamp(x, -1, 1), dtype)
        check(torch.clamp(n(x), min=-0.5), torch.clamp(x, min=-0.5), dtype)
        check(torch.clamp(n(x), max=0.5), torch.clamp(x, max=0.5), dtype)
        check(torch.clamp(n(x), n(y), n(y) + 1), torch.clamp(x, y, y + 1), dtype)
        check(torch.clamp(n(x), min=n(y)), torch.clamp(x, min=y), dtype)
        check(torch.lerp(n(x), n(y), n(z)), torch.lerp(x, y, z), dtype)
        check(torch.addcmul(n(x), n(y), n(z), value=0.5), torch.addcmul(x, y, z, value=0.5), dtype)
        check(torch.addcdiv(n(x), n(y), n(z), value=-2), torch.addcdiv(x, y, z, value=-2), dtype)
        check(n(x).masked_fill(n(cond), 7.0), x.masked_fill(cond, 7.0), dtype)
        check(
            n(x).masked_fill(n(cond), torch.tensor(-1.0)),
            x.masked_fill(cond, torch.tensor(-1.0)),
            dtype,
        )
        inplace = n(x)
        inplace.masked_fill_(n(cond), 3.0).clamp_(-2, 2).addcmul_(n(y), n(y))
        check(inplace, x.masked_fill(cond, 3.0).clamp(-2, 2).addcmul(y, y), dtype)
    ints = torch.arange(-5, 5)
    check(torch.clamp(ints.to("neuron"), -2, 3), torch.clamp(ints, -2, 3))
    check(torch.clamp(ints.to("neuron"), -2.5, 3.5), torch.clamp(ints, -2.5, 3.5))
    check(ints.to("neuron").masked_fill(ints.to("neuron") > 0, 9), ints.masked_fill(ints > 0, 9))
    check(
        torch.addcmul(ints.to("neuron"), ints.to("neuron"), ints.to("neuron"), value=2),
        torch.addcmul(ints, ints, ints, value=2),
    )
    out = torch.empty(10, device="neuron", dtype=torch.int64)
    torch.where(ints.to("neuron") > 0, ints.to("neuron"), -ints.to("neuron"), out=out)
    check(out, torch.where(ints > 0, ints, -ints))


def test_ternary_gradients(no_fallbacks):
    x, y = make((3, 4), torch.float32, seed=14), make((4,), torch.float32, seed=15)
    w = make((3, 1), torch.float32, 0, 1, seed=16)
    cond = make((3, 4), torch.bool, seed=17)
    fns = [
        lambda a, b, c: torch.where(cond.to(a.device), a, b),
        lambda a, b, c: torch.clamp(a, -1.0, 1.0) + torch.clamp(b, min=-0.5),
        lambda a, b, c: torch.lerp(a, b, c),
        lambda a, b, c: torch.addcmul(a, b, c, value=0.7),
        lambda a, b, c: torch.addcdiv(a, b, c + 2, value=0.7),
        lambda a, b, c: a.masked_fill(cond.to(a.device), 0.0) * b,
    ]
    for fn in fns:
        cpu = [t.clone().requires_grad_() for t in (x, y, w)]
        dev = [t.to("neuron").requires_grad_() for t in (x, y, w)]
        fn(*cpu).sum().backward()
        fn(*dev).sum().backward()
        for c, d in zip(cpu, dev, strict=False):
            if c.grad is not None:
                torch.testing.assert_close(d.grad.cpu(), c.grad, **GRAD_TOL)


def test_errors_match_pytorch():
    x = torch.ones(3, device="neuron")
    with pytest.raises(RuntimeError, match="same device"):
        torch.maximum(x, torch.ones(3))
    with pytest.raises(RuntimeError, match="boolean"):
        torch.where(x, x, x)
    with pytest.raises(RuntimeError):
        -torch.ones(3, dtype=torch.bool, device="neuron")


def test_float64_falls_back():
    openneuron.clear_op_tracking()
    x = torch.rand(5, dtype=torch.float64)
    check(torch.exp(x.to("neuron")), torch.exp(x))
    assert "aten::exp" in openneuron.get_fallback_ops()


def test_foreach_single_task_and_matches_cpu(no_fallbacks):
    xs = [make((n,), torch.float32, seed=n) for n in (3, 7, 0, 11)]
    ys = [make((n,), torch.float32, 0.5, 2, seed=n + 1) for n in (3, 7, 0, 11)]
    nx, ny = [t.to("neuron") for t in xs], [t.to("neuron") for t in ys]
    for fn in (
        lambda a, b: torch._foreach_add(a, b, alpha=0.5),
        lambda a, b: torch._foreach_mul(a, 2.0),
        lambda a, b: torch._foreach_div(a, [1.0, 2.0, 3.0, 4.0]),
        lambda a, b: torch._foreach_sqrt(b),
        lambda a, b: torch._foreach_maximum(a, b),
        lambda a, b: torch._foreach_lerp(a, b, 0.3),
        lambda a, b: torch._foreach_addcmul(a, b, b, 0.1),
        lambda a, b: torch._foreach_addcdiv(a, a, b, [0.1, 0.2, 0.3, 0.4]),
        lambda a, b: torch._foreach_neg(a),
    ):
        for got, want in zip(fn(nx, ny), fn(xs, ys), strict=False):
            check(got, want)
    torch._foreach_add_(nx, ny, alpha=-1)
    torch._foreach_add_(xs, ys, alpha=-1)
    for got, want in zip(nx, xs, strict=False):
        check(got, want)
    executed = openneuron.get_executed_ops()
    assert executed.get("aten::_foreach_add_.List") == 1
    assert "aten::add_.Tensor" not in executed


def test_clamp_of_bool_by_bool_tensors_matches_cpu(no_fallbacks):
    # The CPU clamps bool by bool tensors (max is or, min is and); by scalars it refuses bool.
    a = torch.tensor([[True, False, True, False]])
    b = torch.tensor([[False], [True]])
    d_a, d_b = a.to("neuron"), b.to("neuron")
    check(torch.clamp_max(d_a, d_b), torch.clamp_max(a, b))
    check(torch.clamp_min(d_a, d_b), torch.clamp_min(a, b))
    check(d_a.clone().clamp_min_(d_a.logical_not()), a.clone().clamp_min_(a.logical_not()))
