"""Matrix products at integer dtypes, matrix-vector and batch-summed products, 3-D convolution,
transposed convolution and pooling (max, average, adaptive average), and the Huber, smooth L1
and binary cross-entropy losses, native on neuron (they used to run on the host fallback).

Integer products must equal the CPU's exactly, wraparound included (operands are chosen so
that sums overflow the narrow dtypes). Floating results are compared with the CPU at float32
from the same dtype-rounded inputs, forward and backward; no op may run on the host fallback.
"""

import copy
import warnings

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

import openneuron
from tests import module_parity
from tests.kernel_mutants import kernel_replaced
from tests.module_parity import rounded

DEVICE = "neuron"
INT_DTYPES = [torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64]
FLOAT_DTYPES = [torch.float32, torch.bfloat16, torch.float16]

# Tolerances per dtype from the largest errors measured over these tests (reference magnitude
# in brackets): float32: sums in another order than the CPU's [3e-6 on ~20, a 3-D weight
# gradient]; bfloat16/float16: one rounding of an fp32 result against an fp32 reference
# (2^-8 and 2^-11 relative) [bf16 6e-2 on ~20, fp16 8e-3 on ~20].
TOL = {
    torch.float32: dict(atol=5e-5, rtol=5e-5),
    torch.bfloat16: dict(atol=1e-1, rtol=2e-2),
    torch.float16: dict(atol=2e-2, rtol=4e-3),
}


def big_ints(shape, dtype, seed):
    """Values spanning the dtype's range, so that products and sums wrap around."""
    generator = torch.Generator().manual_seed(seed)
    info = torch.iinfo(dtype)
    low, high = max(info.min, -(2**40)), min(info.max, 2**40)
    return torch.randint(low, high, shape, generator=generator, dtype=torch.int64).to(dtype)


INT_PRODUCTS = {
    # name: (function, operand shapes)
    "mm": (torch.mm, [(5, 7), (7, 3)]),
    "mm_transposed": (lambda a, b: torch.mm(a.t(), b), [(7, 5), (7, 3)]),
    "bmm": (torch.bmm, [(2, 4, 6), (2, 6, 3)]),
    "addmm": (lambda c, a, b: torch.addmm(c, a, b, beta=3, alpha=5), [(4, 3), (4, 6), (6, 3)]),
    "addmm_broadcast_bias": (lambda c, a, b: torch.addmm(c, a, b), [(3,), (4, 6), (6, 3)]),
    "addmm_beta0": (lambda c, a, b: torch.addmm(c, a, b, beta=0), [(4, 3), (4, 6), (6, 3)]),
    "addmm_": (lambda c, a, b: c.clone().addmm_(a, b, alpha=2), [(4, 3), (4, 6), (6, 3)]),
    "baddbmm": (lambda c, a, b: torch.baddbmm(c, a, b, beta=2), [(2, 4, 3), (2, 4, 5), (2, 5, 3)]),
    "addbmm": (lambda c, a, b: torch.addbmm(c, a, b, alpha=3), [(4, 3), (2, 4, 5), (2, 5, 3)]),
    "addbmm_": (lambda c, a, b: c.clone().addbmm_(a, b), [(4, 3), (2, 4, 5), (2, 5, 3)]),
    "addmv": (lambda c, a, b: torch.addmv(c, a, b, beta=2, alpha=3), [(4,), (4, 9), (9,)]),
    "addmv_scalar_bias": (lambda c, a, b: torch.addmv(c, a, b), [(), (4, 9), (9,)]),
    "mv": (torch.mv, [(6, 11), (11,)]),
    "dot": (torch.dot, [(13,), (13,)]),
    "vdot": (torch.vdot, [(13,), (13,)]),
    "matmul_batched": (torch.matmul, [(2, 3, 4, 5), (5, 2)]),
    "matmul_vector": (torch.matmul, [(3, 4, 5), (5,)]),
    "einsum": (lambda a, b: torch.einsum("bij,bjk->bik", a, b), [(3, 2, 4), (3, 4, 2)]),
    "tensordot": (lambda a, b: torch.tensordot(a, b, dims=2), [(3, 4, 5), (4, 5, 2)]),
    "linear": (F.linear, [(3, 6), (4, 6), (4,)]),
    "inner": (torch.inner, [(3, 5), (2, 5)]),
}


@pytest.mark.parametrize("dtype", INT_DTYPES, ids=str)
@pytest.mark.parametrize("name", list(INT_PRODUCTS))
def test_integer_products_equal_the_cpu_exactly(name, dtype):
    function, shapes = INT_PRODUCTS[name]
    operands = [big_ints(shape, dtype, seed) for seed, shape in enumerate(shapes)]
    expected = function(*operands)
    openneuron.clear_op_tracking()
    result = function(*[t.to(DEVICE) for t in operands])
    assert openneuron.get_fallback_ops() == {}
    assert result.dtype == expected.dtype
    assert torch.equal(result.cpu(), expected)


def test_integer_out_variants_and_errors():
    a, b = big_ints((3, 4), torch.int32, 1), big_ints((4, 2), torch.int32, 2)
    out = torch.empty(0, dtype=torch.int32, device=DEVICE)
    torch.mm(a.to(DEVICE), b.to(DEVICE), out=out)
    assert torch.equal(out.cpu(), torch.mm(a, b))
    # Mixed dtypes raise the CPU's error type at the call.
    with pytest.raises(RuntimeError):
        torch.mv(a.to(DEVICE), torch.ones(4, dtype=torch.int64, device=DEVICE))
    with pytest.raises(RuntimeError, match="size mismatch"):
        torch.addmv(
            torch.ones(3, dtype=torch.int32, device=DEVICE),
            a.to(DEVICE),
            torch.ones(5, dtype=torch.int32, device=DEVICE),
        )
    with pytest.raises(RuntimeError, match="batch1 and batch2 must have same number of batches"):
        torch.addbmm(
            torch.ones(3, 2, dtype=torch.int32, device=DEVICE),
            torch.ones(2, 3, 4, dtype=torch.int32, device=DEVICE),
            torch.ones(3, 4, 2, dtype=torch.int32, device=DEVICE),
        )


FLOAT_PRODUCTS = {
    "addmv": (lambda c, a, b: torch.addmv(c, a, b, beta=0.5, alpha=2), [(8,), (8, 33), (33,)]),
    "mv": (torch.mv, [(6, 40), (40,)]),
    "matmul_vector": (torch.matmul, [(2, 5, 17), (17,)]),
    "vector_matmul": (torch.matmul, [(17,), (17, 5)]),
    "addbmm": (lambda c, a, b: torch.addbmm(c, a, b, beta=0.5), [(4, 3), (5, 4, 9), (5, 9, 3)]),
    "vdot": (torch.vdot, [(50,), (50,)]),
}


@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=str)
@pytest.mark.parametrize("name", list(FLOAT_PRODUCTS))
def test_float_products_match_cpu_natively(name, dtype):
    function, shapes = FLOAT_PRODUCTS[name]
    torch.manual_seed(3)
    operands = [torch.randn(shape).to(dtype).float() for shape in shapes]
    expected = function(*operands)
    openneuron.clear_op_tracking()
    result = function(*[t.to(DEVICE, dtype) for t in operands])
    assert openneuron.get_fallback_ops() == {}
    assert result.dtype == dtype
    torch.testing.assert_close(result.cpu().float(), expected, **TOL[dtype])


def test_float_addmv_beta_zero_ignores_nan_bias():
    bias = torch.full((3,), float("nan"))
    a, v = torch.randn(3, 4), torch.randn(4)
    result = torch.addmv(bias.to(DEVICE), a.to(DEVICE), v.to(DEVICE), beta=0)
    torch.testing.assert_close(result.cpu(), a @ v)


MODULES = {
    "Conv3d": (lambda: nn.Conv3d(3, 4, (2, 3, 3), stride=(1, 2, 1), padding=1), (2, 3, 4, 6, 5)),
    "Conv3d_dilated_groups": (
        lambda: nn.Conv3d(4, 6, 3, padding=(2, 0, 1), dilation=(2, 1, 1), groups=2, bias=False),
        (1, 4, 5, 4, 4),
    ),
    "Conv3d_strided": (lambda: nn.Conv3d(2, 3, 2, stride=2), (2, 2, 5, 4, 6)),
    "ConvTranspose3d": (
        lambda: nn.ConvTranspose3d(3, 4, (3, 2, 3), stride=(2, 1, 2), padding=(1, 0, 1)),
        (2, 3, 3, 4, 3),
    ),
    "ConvTranspose3d_output_padding_groups": (
        lambda: nn.ConvTranspose3d(4, 2, 2, stride=3, output_padding=(2, 1, 0), groups=2),
        (1, 4, 2, 3, 2),
    ),
    "AvgPool3d": (lambda: nn.AvgPool3d((2, 3, 2), stride=(1, 2, 2), padding=1), (2, 3, 4, 6, 5)),
    "AvgPool3d_ceil_no_pad_count": (
        lambda: nn.AvgPool3d(3, stride=2, padding=1, ceil_mode=True, count_include_pad=False),
        (1, 2, 5, 6, 7),
    ),
    "AvgPool3d_divisor": (lambda: nn.AvgPool3d(2, divisor_override=3), (3, 4, 4, 6)),
    "MaxPool3d": (
        lambda: nn.MaxPool3d((2, 3, 2), stride=(1, 2, 1), padding=(1, 1, 0)),
        (2, 3, 4, 6, 5),
    ),
    "MaxPool3d_dilated_ceil": (
        lambda: nn.MaxPool3d(2, stride=2, dilation=(1, 2, 1), ceil_mode=True),
        (1, 2, 5, 7, 5),
    ),
    "AdaptiveAvgPool3d": (lambda: nn.AdaptiveAvgPool3d((2, 3, 4)), (2, 3, 5, 7, 6)),
    "LPPool3d": (lambda: nn.LPPool3d(2, 2), (1, 2, 4, 4, 6)),
}


def run_module(name, dtype):
    factory, shape = MODULES[name]
    return module_parity.run_module(factory, shape, dtype, input_scale=2)


def check_module(name, dtype):
    factory, shape = MODULES[name]
    module_parity.check_module(factory, shape, dtype, 2, TOL[dtype])


@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=str)
@pytest.mark.parametrize("name", list(MODULES))
def test_3d_convolution_and_pooling_match_cpu_natively(name, dtype):
    check_module(name, dtype)


LOSSES = {
    # name: (loss, input factory, target factory)
    "HuberLoss": (nn.HuberLoss(delta=0.8), lambda s: torch.randn(s) * 2, torch.randn),
    "HuberLoss_sum": (nn.HuberLoss(reduction="sum"), torch.randn, torch.randn),
    "HuberLoss_none": (nn.HuberLoss(reduction="none", delta=1.5), torch.randn, torch.randn),
    "SmoothL1Loss": (nn.SmoothL1Loss(beta=0.5), lambda s: torch.randn(s) * 2, torch.randn),
    "SmoothL1Loss_beta0": (nn.SmoothL1Loss(beta=0.0), torch.randn, torch.randn),
    "SmoothL1Loss_none": (nn.SmoothL1Loss(reduction="none"), torch.randn, torch.randn),
    "BCELoss": (nn.BCELoss(), lambda s: torch.rand(s) * 0.98 + 0.01, torch.rand),
    "BCELoss_weighted_sum": (
        nn.BCELoss(weight=torch.rand(10) + 0.5, reduction="sum"),
        lambda s: torch.rand(s) * 0.98 + 0.01,
        lambda s: (torch.rand(s) > 0.5).float(),
    ),
    "BCELoss_none": (
        nn.BCELoss(reduction="none"),
        lambda s: torch.rand(s) * 0.9 + 0.05,
        torch.rand,
    ),
}


def compare_loss(loss, x, target, dev_target, dtype):
    """The loss and its input gradient on neuron (target `dev_target`) against the CPU's, with
    no host fallback."""
    cpu_x = x.clone().requires_grad_()
    dev_x = x.to(DEVICE, dtype).requires_grad_()
    dev_loss_module = copy.deepcopy(loss).to(DEVICE, dtype)
    openneuron.clear_op_tracking()
    cpu_loss = loss(cpu_x, target)
    dev_loss = dev_loss_module(dev_x, dev_target)
    upstream = rounded(torch.randn(cpu_loss.shape), dtype)
    (cpu_loss * upstream).sum().backward()
    (dev_loss * upstream.to(DEVICE, dtype)).sum().backward()
    assert openneuron.get_fallback_ops() == {}
    tol = TOL[dtype]
    torch.testing.assert_close(dev_loss.detach().cpu().float(), cpu_loss.detach(), **tol)
    torch.testing.assert_close(dev_x.grad.cpu().float(), cpu_x.grad, **tol)


def check_loss(name, dtype):
    loss, input_factory, target_factory = LOSSES[name]
    torch.manual_seed(1)
    x = rounded(input_factory((6, 10)), dtype)
    target = rounded(target_factory((6, 10)), dtype)
    compare_loss(loss, x, target, target.to(DEVICE, dtype), dtype)


@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=str)
@pytest.mark.parametrize("name", list(LOSSES))
def test_loss_matches_cpu_natively(name, dtype):
    check_loss(name, dtype)


MARGIN_LOSSES = {
    "MultiMarginLoss": nn.MultiMarginLoss(),
    "MultiMarginLoss_p2_weighted": nn.MultiMarginLoss(p=2, margin=0.5, weight=torch.rand(7) + 0.5),
    "MultiMarginLoss_sum": nn.MultiMarginLoss(reduction="sum"),
    "MultiMarginLoss_none": nn.MultiMarginLoss(reduction="none", margin=1.5),
}


def check_margin_loss(name, dtype):
    loss = MARGIN_LOSSES[name]
    torch.manual_seed(2)
    x = rounded(torch.randn(5, 7), dtype)
    target = torch.randint(0, 7, (5,))
    compare_loss(loss, x, target, target.to(DEVICE), dtype)


@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=str)
@pytest.mark.parametrize("name", list(MARGIN_LOSSES))
def test_margin_loss_matches_cpu_natively(name, dtype):
    check_margin_loss(name, dtype)


def test_margin_loss_errors_at_the_call():
    x = torch.randn(3, 4, device=DEVICE)
    with pytest.raises(RuntimeError, match="target out of range"):
        F.multi_margin_loss(x, torch.tensor([0, 4, 1], device=DEVICE))
    with pytest.raises(RuntimeError, match="inconsistent target size"):
        F.multi_margin_loss(x, torch.tensor([0, 1], device=DEVICE))
    with pytest.raises(ValueError):  # F.multi_margin_loss refuses p=3 before the op
        F.multi_margin_loss(x, torch.tensor([0, 1, 2], device=DEVICE), p=3)


def test_loss_errors_at_the_call():
    x = torch.rand(4, device=DEVICE)
    with pytest.raises(RuntimeError, match="between 0 and 1"):
        F.binary_cross_entropy(x + 2, x)
    with pytest.raises(RuntimeError, match="non-positive values for delta"):
        F.huber_loss(x, x, delta=0.0)
    with pytest.raises(RuntimeError, match="negative values for beta"):
        F.smooth_l1_loss(x, x, beta=-1.0)
    # The process stays usable after each error.
    assert float(F.huber_loss(x, x).cpu()) == 0.0


@pytest.mark.parametrize("name", ["ConvTranspose1d", "ConvTranspose2d", "Conv3d"])
def test_complex32_convolution_runs_on_the_host_as_the_cpu_does(name):
    """complex32 convolution is the CPU's own split into float16 convolutions, run whole on the
    host: values and gradients equal the CPU's, and the fallback is reported."""
    torch.manual_seed(4)
    factories = {
        "ConvTranspose1d": (lambda: nn.ConvTranspose1d(3, 2, 3), (2, 3, 6)),
        "ConvTranspose2d": (lambda: nn.ConvTranspose2d(3, 2, 3, stride=2), (2, 3, 4, 5)),
        "Conv3d": (lambda: nn.Conv3d(2, 2, 2), (1, 2, 3, 3, 3)),
    }
    factory, shape = factories[name]

    def wide(t):
        return t.to(torch.complex64)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cpu_module = factory().to(torch.complex32)
        dev_module = copy.deepcopy(cpu_module).to(DEVICE)
        x = torch.randn(shape, dtype=torch.complex64).to(torch.complex32)
        cpu_x = x.clone().requires_grad_()
        dev_x = x.to(DEVICE).requires_grad_()
        openneuron.clear_op_tracking()
        dev_out = dev_module(dev_x)
        cpu_out = cpu_module(cpu_x)
        assert dev_out.dtype == torch.complex32
        assert "aten::convolution (complex32)" in openneuron.get_fallback_ops()
        assert torch.equal(wide(dev_out.detach().cpu()), wide(cpu_out.detach()))
        upstream = torch.randn(cpu_out.shape, dtype=torch.complex64).to(torch.complex32)
        torch.autograd.backward(cpu_out, upstream)
        torch.autograd.backward(dev_out, upstream.to(DEVICE))
    assert torch.equal(wide(dev_x.grad.cpu()), wide(cpu_x.grad))


def on_host(op, transform):
    """A kernel computing op on the CPU copies of its tensor arguments, then spoiling it."""

    def kernel(*args):
        device = next(a.device for a in args if isinstance(a, torch.Tensor))
        host = [a.cpu() if isinstance(a, torch.Tensor) else a for a in args]
        return transform(op(*host)).to(device)

    return kernel


def test_a_wrong_integer_mm_is_caught():
    with (
        kernel_replaced("mm", on_host(torch.ops.aten.mm, lambda r: r + 1)),
        pytest.raises(AssertionError),
    ):
        test_integer_products_equal_the_cpu_exactly("mm", torch.int16)


def test_a_wrong_conv3d_is_caught():
    def kernel(i, w, b, s, p, d, t, op, g):
        """The convolution with its kernel mirrored along the width."""
        return torch.ops.aten.convolution(
            i.cpu(), w.cpu().flip(-1), None if b is None else b.cpu(), s, p, d, t, op, g
        ).to(i.device)

    with kernel_replaced("convolution_overrideable", kernel), pytest.raises(AssertionError):
        check_module("Conv3d", torch.float32)


def test_a_wrong_multi_margin_loss_is_caught():
    wrong = on_host(torch.ops.aten.multi_margin_loss.default, lambda r: r * 1.05)
    with kernel_replaced("multi_margin_loss", wrong), pytest.raises(AssertionError):
        check_margin_loss("MultiMarginLoss", torch.float32)


def test_a_wrong_huber_gradient_is_caught():
    wrong = on_host(torch.ops.aten.huber_loss_backward.default, lambda r: r * 0.5)
    with kernel_replaced("huber_loss_backward", wrong), pytest.raises(AssertionError):
        check_loss("HuberLoss", torch.float32)
