"""nn ops on neuron vs PyTorch CPU: convolution, pooling, normalisation, losses, attention.

Every case compares the forward result and the gradients of every floating input (and
weight) against CPU, and asserts that nothing ran through the host fallback.
"""

import warnings

import pytest
import torch
import torch.nn.functional as F

import openneuron

# Tolerances per dtype, with the reason:
# float32: fp32 math with different summation orders (BLAS blocking, im2col) -> ~1e-5 relative;
#          reductions over hundreds of terms need a little more than eps.
# bfloat16: one bf16 rounding of an fp32 result (2^-8 relative) plus CPU's own bf16 rounding
#          of intermediates (CPU rounds some intermediates to bf16, we keep fp32).
# float16: one fp16 rounding (2^-11 relative) plus CPU intermediate roundings.
TOL = {
    torch.float32: dict(atol=1e-4, rtol=1e-4),
    torch.bfloat16: dict(atol=5e-2, rtol=3e-2),
    torch.float16: dict(atol=5e-3, rtol=5e-3),
}
FLOAT_DTYPES = [torch.float32, torch.bfloat16, torch.float16]
DEVICE = "neuron"

# The ops this family makes native. Tests assert none of them falls back; ops of other families
# that a test's autograd graph happens to use (e.g. zero_ behind slicing backward) are not ours.
NN_OPS = (
    "convolution",
    "max_pool2d",
    "avg_pool2d",
    "adaptive_avg_pool2d",
    "batch_norm",
    "group_norm",
    "layer_norm",
    "rms_norm",
    "nll_loss",
    "mse_loss",
    "scaled_dot_product",
    "sdp_choice",
    "_softmax",
    "_log_softmax",
)


def nn_fallbacks():
    return {
        op: n
        for op, n in openneuron.get_fallback_ops().items()
        if any(name in op for name in NN_OPS)
    }


def _to_device(value):
    return value.to(DEVICE) if isinstance(value, torch.Tensor) else value


def compare(fn, *inputs, dtype=torch.float32, grad=True, tol=None, channels_last=False):
    """Runs fn on CPU and neuron copies of inputs; compares outputs and input gradients.

    Reference: float32 CPU for 16-bit dtypes where CPU lacks a kernel or rounds differently
    (we compare the 16-bit neuron result against the fp32 CPU result rounded to the dtype).
    """
    tol = tol or TOL[dtype]
    cpu_inputs, dev_inputs = [], []
    for value in inputs:
        if isinstance(value, torch.Tensor) and value.is_floating_point():
            ref = value.to(torch.float32).detach()
            if channels_last and ref.dim() == 4:
                ref = ref.contiguous(memory_format=torch.channels_last)
            dev = ref.to(dtype).to(DEVICE).detach()
            cpu_inputs.append(ref.to(dtype).to(torch.float32).requires_grad_(grad))
            dev_inputs.append(dev.requires_grad_(grad))
        else:
            cpu_inputs.append(value)
            dev_inputs.append(_to_device(value))
    openneuron.clear_op_tracking()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out_dev = fn(*dev_inputs)
        out_cpu = fn(*cpu_inputs)
        if grad:
            weights = torch.randn(out_cpu.shape, dtype=torch.float32)
            (out_cpu * weights).sum().backward()
            (out_dev * weights.to(dtype).to(DEVICE)).sum().backward()
    assert nn_fallbacks() == {}, openneuron.get_fallback_ops()
    assert out_dev.device.type == DEVICE
    assert out_dev.dtype == dtype
    torch.testing.assert_close(out_dev.cpu().float(), out_cpu.detach(), equal_nan=True, **tol)
    if grad:
        for dev, cpu in zip(dev_inputs, cpu_inputs, strict=True):
            if isinstance(cpu, torch.Tensor) and cpu.requires_grad:
                assert dev.grad is not None
                torch.testing.assert_close(dev.grad.cpu().float(), cpu.grad, **tol)
    return out_dev


# ---------------------------------------------------------------- convolution

CONV2D_CASES = [
    dict(),
    dict(padding=1),
    dict(stride=2, padding=2, dilation=2),
    dict(stride=(2, 1), padding=(0, 1)),
    dict(padding="same"),
]


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("options", CONV2D_CASES)
@pytest.mark.parametrize("bias", [True, False])
def test_conv2d(dtype, options, bias):
    torch.manual_seed(0)
    x = torch.randn(2, 4, 9, 8)
    w = torch.randn(6, 4, 3, 3) * 0.3
    b = torch.randn(6) if bias else None
    if bias:
        compare(lambda x, w, b: F.conv2d(x, w, b, **options), x, w, b, dtype=dtype)
    else:
        compare(lambda x, w: F.conv2d(x, w, **options), x, w, dtype=dtype)


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_conv2d_groups_and_depthwise(dtype):
    torch.manual_seed(1)
    x = torch.randn(2, 6, 7, 7)
    compare(
        lambda x, w, b: F.conv2d(x, w, b, groups=3, padding=1),
        x,
        torch.randn(9, 2, 3, 3) * 0.3,
        torch.randn(9),
        dtype=dtype,
    )
    compare(
        lambda x, w: F.conv2d(x, w, groups=6, padding=1, stride=2),
        x,
        torch.randn(12, 1, 3, 3) * 0.3,
        dtype=dtype,
    )


def test_conv2d_pointwise_and_channels_last():
    torch.manual_seed(2)
    x = torch.randn(3, 5, 6, 6)
    compare(lambda x, w, b: F.conv2d(x, w, b), x, torch.randn(7, 5, 1, 1), torch.randn(7))
    compare(
        lambda x, w, b: F.conv2d(x, w, b, padding=1),
        x,
        torch.randn(7, 5, 3, 3),
        torch.randn(7),
        channels_last=True,
    )


def test_conv2d_non_contiguous_input():
    torch.manual_seed(3)
    x = torch.randn(2, 3, 10, 12)
    w = torch.randn(4, 3, 3, 3)
    compare(lambda x, w: F.conv2d(x.transpose(2, 3), w, padding=1), x, w)
    compare(lambda x, w: F.conv2d(x[:, :, ::2, 1:], w), x, w)


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_conv1d(dtype):
    torch.manual_seed(4)
    x = torch.randn(2, 4, 15)
    compare(
        lambda x, w, b: F.conv1d(x, w, b, stride=2, padding=2, dilation=2),
        x,
        torch.randn(5, 4, 3) * 0.3,
        torch.randn(5),
        dtype=dtype,
    )
    compare(lambda x, w: F.conv1d(x, w, groups=2), x, torch.randn(6, 2, 4) * 0.3, dtype=dtype)


def test_conv_zero_batch():
    x = torch.randn(0, 3, 5, 5)
    compare(
        lambda x, w, b: F.conv2d(x, w, b, padding=1), x, torch.randn(4, 3, 3, 3), torch.randn(4)
    )


def test_conv_module_and_op_trace():
    conv = torch.nn.Conv2d(3, 8, 3, padding=1).to(DEVICE)
    openneuron.clear_op_tracking()
    conv(torch.randn(2, 3, 8, 8, device=DEVICE)).sum().backward()
    executed = openneuron.get_executed_ops()
    assert executed["aten::convolution_overrideable"] == 1
    assert executed["aten::convolution_backward_overrideable"] == 1
    assert nn_fallbacks() == {}


def test_conv_transposed_float64_runs_on_host_visibly():
    # Transposed convolution at 16 and 32 bits is native (tests/test_nn_modules_native.py,
    # tests/test_dense_natives.py); float64 stays on the host by design.
    x = torch.randn(1, 2, 4, 4, 4, dtype=torch.float64)
    w = torch.randn(2, 3, 3, 3, 3, dtype=torch.float64)
    openneuron.clear_op_tracking()
    out = F.conv_transpose3d(x.to(DEVICE), w.to(DEVICE))
    torch.testing.assert_close(out.cpu(), F.conv_transpose3d(x, w))
    assert "aten::convolution_overrideable" in openneuron.get_fallback_ops()


# ---------------------------------------------------------------- pooling


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize(
    "options",
    [
        dict(kernel_size=2),
        dict(kernel_size=3, stride=2, padding=1),
        dict(kernel_size=(3, 2), stride=(2, 1), dilation=(1, 2)),
        dict(kernel_size=3, stride=2, ceil_mode=True),
    ],
)
def test_max_pool2d(dtype, options):
    torch.manual_seed(5)
    x = torch.randperm(2 * 3 * 9 * 10).reshape(2, 3, 9, 10).float() / 100  # no ties
    compare(lambda x: F.max_pool2d(x, **options), x, dtype=dtype)


def test_max_pool2d_indices_and_channels_last():
    x = torch.randperm(2 * 3 * 8 * 8).reshape(2, 3, 8, 8).float()
    out, idx = F.max_pool2d(x.to(DEVICE), 2, return_indices=True)
    ref, ref_idx = F.max_pool2d(x, 2, return_indices=True)
    assert torch.equal(idx.cpu(), ref_idx) and torch.equal(out.cpu(), ref)
    compare(lambda x: F.max_pool2d(x, 3, 2, 1), x, channels_last=True)
    compare(lambda x: F.max_pool2d(x, 2), torch.randn(3, 6, 6))  # unbatched


def test_max_pool1d():
    x = torch.randperm(2 * 3 * 12).reshape(2, 3, 12).float()
    compare(lambda x: F.max_pool1d(x, 3, 2, 1), x)


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize(
    "options",
    [
        dict(kernel_size=2),
        dict(kernel_size=3, stride=2, padding=1),
        dict(kernel_size=3, stride=2, padding=1, count_include_pad=False),
        dict(kernel_size=3, stride=2, padding=1, ceil_mode=True),
        dict(kernel_size=3, stride=2, padding=1, ceil_mode=True, count_include_pad=False),
        dict(kernel_size=2, divisor_override=3),
    ],
)
def test_avg_pool2d(dtype, options):
    torch.manual_seed(6)
    compare(lambda x: F.avg_pool2d(x, **options), torch.randn(2, 3, 9, 10), dtype=dtype)


def test_avg_pool1d_and_channels_last():
    torch.manual_seed(7)
    compare(lambda x: F.avg_pool1d(x, 3, 2, 1, ceil_mode=True), torch.randn(2, 3, 12))
    compare(lambda x: F.avg_pool2d(x, 2), torch.randn(2, 3, 8, 8), channels_last=True)


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("size", [(1, 1), (3, 4), (7, 5), (9, 10)])
def test_adaptive_avg_pool2d(dtype, size):
    torch.manual_seed(8)
    compare(lambda x: F.adaptive_avg_pool2d(x, size), torch.randn(2, 3, 9, 10), dtype=dtype)


def test_adaptive_avg_pool1d():
    compare(lambda x: F.adaptive_avg_pool1d(x, 5), torch.randn(2, 3, 12))


def test_pooling_zero_batch():
    x = torch.randn(0, 3, 6, 6)
    compare(lambda x: F.max_pool2d(x, 2), x)
    compare(lambda x: F.avg_pool2d(x, 2), x)


# ---------------------------------------------------------------- normalisation


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("affine", [True, False])
def test_batch_norm_training_updates_running_stats(dtype, affine):
    torch.manual_seed(9)
    x = torch.randn(4, 3, 5, 6) * 2 + 1
    w, b = torch.rand(3) + 0.5, torch.randn(3)
    rm_cpu, rv_cpu = torch.randn(3), torch.rand(3) + 0.5
    rm_dev, rv_dev = rm_cpu.to(dtype).to(DEVICE), rv_cpu.to(dtype).to(DEVICE)
    rm_ref, rv_ref = rm_cpu.to(dtype).float(), rv_cpu.to(dtype).float()

    def fn(x, *params):
        on_dev = x.device.type == DEVICE
        rm, rv = (rm_dev, rv_dev) if on_dev else (rm_ref, rv_ref)
        weight, bias = params if affine else (None, None)
        return F.batch_norm(x, rm, rv, weight, bias, training=True, momentum=0.3, eps=1e-3)

    compare(fn, x, *((w, b) if affine else ()), dtype=dtype)
    torch.testing.assert_close(rm_dev.cpu().float(), rm_ref, **TOL[dtype])
    torch.testing.assert_close(rv_dev.cpu().float(), rv_ref, **TOL[dtype])


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_batch_norm_eval(dtype):
    torch.manual_seed(10)
    rm, rv = torch.randn(3), torch.rand(3) + 0.5
    dev_stats = (rm.to(dtype).to(DEVICE), rv.to(dtype).to(DEVICE))
    ref_stats = (rm.to(dtype).float(), rv.to(dtype).float())

    def fn(x, w, b):
        stats = dev_stats if x.device.type == DEVICE else ref_stats
        return F.batch_norm(x, *stats, w, b, training=False, eps=1e-4)

    compare(fn, torch.randn(4, 3, 5), torch.rand(3) + 0.5, torch.randn(3), dtype=dtype)


def test_batch_norm_module_channels_last_and_2d():
    torch.manual_seed(11)
    for shape in [(4, 3, 6, 6), (8, 3)]:
        cpu_bn = torch.nn.BatchNorm2d(3) if len(shape) == 4 else torch.nn.BatchNorm1d(3)
        dev_bn = type(cpu_bn)(3).to(DEVICE)
        x = torch.randn(*shape)
        cl = len(shape) == 4

        def run(x, dev_bn=dev_bn, cpu_bn=cpu_bn):
            return (dev_bn if x.device.type == DEVICE else cpu_bn)(x)

        compare(run, x, channels_last=cl)
        torch.testing.assert_close(dev_bn.running_var.cpu(), cpu_bn.running_var)
        dev_bn.eval()
        cpu_bn.eval()
        compare(run, x)


def test_batch_norm_legit_variants():
    torch.manual_seed(12)
    x, w, b = torch.randn(4, 3, 5), torch.rand(3) + 0.5, torch.randn(3)
    rm, rv = torch.randn(3), torch.rand(3) + 0.5
    d = [t.to(DEVICE) for t in (x, w, b, rm, rv)]
    openneuron.clear_op_tracking()
    for got, ref in [
        (
            torch.ops.aten._native_batch_norm_legit(*d, True, 0.1, 1e-5),
            torch.ops.aten._native_batch_norm_legit(x, w, b, rm, rv, True, 0.1, 1e-5),
        ),
        (
            torch.ops.aten._native_batch_norm_legit.no_stats(*d[:3], True, 0.1, 1e-5),
            torch.ops.aten._native_batch_norm_legit.no_stats(x, w, b, True, 0.1, 1e-5),
        ),
        (
            torch.ops.aten._native_batch_norm_legit_no_training(*d, 0.1, 1e-5),
            torch.ops.aten._native_batch_norm_legit_no_training(x, w, b, rm, rv, 0.1, 1e-5),
        ),
    ]:
        for g, r in zip(got, ref):
            torch.testing.assert_close(g.cpu(), r, atol=1e-4, rtol=1e-4)
    torch.testing.assert_close(d[3].cpu(), rm)
    torch.testing.assert_close(d[4].cpu(), rv)
    assert nn_fallbacks() == {}


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("groups", [1, 2, 6])
def test_group_norm(dtype, groups):
    torch.manual_seed(13)
    compare(
        lambda x, w, b: F.group_norm(x, groups, w, b, eps=1e-4),
        torch.randn(3, 6, 4, 5) * 3 + 1,
        torch.rand(6) + 0.5,
        torch.randn(6),
        dtype=dtype,
    )
    compare(lambda x: F.group_norm(x, groups), torch.randn(2, 6, 7), dtype=dtype)


def test_group_norm_channels_last():
    compare(
        lambda x, w, b: F.group_norm(x, 2, w, b),
        torch.randn(2, 4, 5, 5),
        torch.rand(4),
        torch.randn(4),
        channels_last=True,
    )


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("shape", [(5,), (4, 5)])
def test_layer_norm(dtype, shape):
    torch.manual_seed(14)
    x = torch.randn(3, 4, 4, 5) * 2 + 0.5
    compare(
        lambda x, w, b: F.layer_norm(x, shape, w, b),
        x,
        torch.rand(shape) + 0.5,
        torch.randn(shape),
        dtype=dtype,
    )
    compare(lambda x: F.layer_norm(x, shape), x, dtype=dtype)


def test_layer_norm_non_contiguous_and_empty():
    x = torch.randn(6, 8, 5)
    compare(
        lambda x, w, b: F.layer_norm(x.transpose(0, 1), (6, 5)[1:], w, b),
        x,
        torch.rand(5),
        torch.randn(5),
    )
    compare(
        lambda x, w, b: F.layer_norm(x, (5,), w, b),
        torch.randn(0, 5),
        torch.rand(5),
        torch.randn(5),
    )


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_rms_norm(dtype):
    torch.manual_seed(15)
    x = torch.randn(3, 4, 8)
    compare(lambda x, w: F.rms_norm(x, (8,), w, eps=1e-5), x, torch.rand(8) + 0.5, dtype=dtype)
    compare(lambda x: F.rms_norm(x, (4, 8)), x, dtype=dtype)
    module_cpu = torch.nn.RMSNorm(8)
    module_dev = torch.nn.RMSNorm(8).to(DEVICE)
    compare(lambda x: (module_dev if x.device.type == DEVICE else module_cpu)(x), x)


def test_rms_norm_is_fused_on_device():
    openneuron.clear_op_tracking()
    x = torch.randn(2, 8, device=DEVICE, requires_grad=True)
    F.rms_norm(x, (8,), torch.ones(8, device=DEVICE)).sum().backward()
    executed = openneuron.get_executed_ops()
    assert executed["aten::_fused_rms_norm"] == 1
    assert executed["aten::_fused_rms_norm_backward"] == 1
    assert nn_fallbacks() == {}


# ---------------------------------------------------------------- losses


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
@pytest.mark.parametrize("weighted", [False, True])
def test_cross_entropy_and_nll(dtype, reduction, weighted):
    torch.manual_seed(16)
    logits = torch.randn(6, 5)
    target = torch.tensor([0, 4, 2, -100, 1, 3])
    class_weight = torch.rand(5) + 0.5 if weighted else None
    dev_weight = class_weight.to(dtype).to(DEVICE) if weighted else None
    ref_weight = class_weight.to(dtype).float() if weighted else None

    def ce(x, t):
        w = dev_weight if x.device.type == DEVICE else ref_weight
        return F.cross_entropy(x, t, weight=w, reduction=reduction)

    def nll(x, t):
        w = dev_weight if x.device.type == DEVICE else ref_weight
        return F.nll_loss(x, t, weight=w, reduction=reduction, ignore_index=2)

    compare(ce, logits, target, dtype=dtype)
    compare(nll, logits, target.clamp(min=0), dtype=dtype)


def test_nll_loss_unbatched_and_2d():
    torch.manual_seed(17)
    compare(lambda x, t: F.nll_loss(x, t), torch.randn(5), torch.tensor(3))
    target = torch.randint(0, 4, (2, 5, 6))
    target[0, 0, 0] = -100
    for reduction in ["none", "mean", "sum"]:
        compare(
            lambda x, t: F.cross_entropy(x, t, reduction=reduction), torch.randn(2, 4, 5, 6), target
        )


def test_nll_loss_all_ignored_mean_is_nan():
    x = torch.randn(3, 4)
    t = torch.full((3,), -100)
    out = compare(lambda x, t: F.nll_loss(x, t), x, t, grad=False)
    assert torch.isnan(out.cpu())


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
def test_mse_loss(dtype, reduction):
    torch.manual_seed(18)
    compare(
        lambda a, b: F.mse_loss(a, b, reduction=reduction),
        torch.randn(3, 4, 5),
        torch.randn(3, 4, 5),
        dtype=dtype,
    )


def test_mse_loss_broadcast_and_non_contiguous():
    compare(lambda a, b: F.mse_loss(a.t(), b), torch.randn(5, 4), torch.randn(4, 1))


# ---------------------------------------------------------------- attention


def sdpa(*args, **kwargs):
    return F.scaled_dot_product_attention(*args, **kwargs)


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("causal", [False, True])
def test_sdpa(dtype, causal):
    torch.manual_seed(19)
    q, k, v = torch.randn(2, 3, 70, 16), torch.randn(2, 3, 70, 16), torch.randn(2, 3, 70, 8)
    compare(lambda q, k, v: sdpa(q, k, v, is_causal=causal), q, k, v, dtype=dtype)


def test_sdpa_cross_lengths_scale_and_causal():
    torch.manual_seed(20)
    q, k, v = torch.randn(2, 2, 9, 8), torch.randn(2, 2, 13, 8), torch.randn(2, 2, 13, 4)
    compare(lambda q, k, v: sdpa(q, k, v, scale=0.3), q, k, v)
    compare(lambda q, k, v: sdpa(q, k, v, is_causal=True), q, k, v)


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_sdpa_masks(dtype):
    torch.manual_seed(21)
    q, k, v = torch.randn(2, 3, 10, 8), torch.randn(2, 3, 12, 8), torch.randn(2, 3, 12, 8)
    keep = torch.rand(10, 12) > 0.3
    keep[:, 0] = True  # no fully masked rows
    compare(
        lambda q, k, v: sdpa(
            q, k, v, attn_mask=_to_device(keep) if q.device.type == DEVICE else keep
        ),
        q,
        k,
        v,
        dtype=dtype,
    )
    bias = torch.randn(3, 1, 12)
    compare(lambda q, k, v, m: sdpa(q, k, v, attn_mask=m), q, k, v, bias, dtype=dtype)


def test_sdpa_gqa_and_non_contiguous():
    torch.manual_seed(22)
    q, k, v = torch.randn(2, 6, 10, 8), torch.randn(2, 2, 12, 8), torch.randn(2, 2, 12, 8)
    compare(lambda q, k, v: sdpa(q, k, v, enable_gqa=True), q, k, v)
    # [B, L, H, E] transposed to [B, H, L, E]: the usual multi-head layout.
    q, k, v = torch.randn(2, 10, 3, 8), torch.randn(2, 12, 3, 8), torch.randn(2, 12, 3, 8)
    compare(lambda q, k, v: sdpa(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2)), q, k, v)


def test_sdpa_zero_batch():
    q = torch.randn(0, 2, 5, 4)
    compare(lambda q, k, v: sdpa(q, k, v), q, q, q)


def test_sdpa_dropout_is_deterministic_per_seed_and_unbiased():
    q = torch.randn(2, 2, 16, 8, device=DEVICE)
    v = torch.ones(2, 2, 16, 8, device=DEVICE)
    openneuron.clear_op_tracking()
    torch.manual_seed(5)
    a = sdpa(q, q, v, dropout_p=0.5).cpu()
    torch.manual_seed(5)
    b = sdpa(q, q, v, dropout_p=0.5).cpu()
    c = sdpa(q, q, v, dropout_p=0.5).cpu()
    assert torch.equal(a, b) and not torch.equal(a, c)
    # Rows of softmax @ ones are 1; with dropout they average to 1.
    assert abs(a.mean().item() - 1.0) < 0.15
    assert nn_fallbacks() == {}


def test_sdpa_dropout_gradient_matches_its_own_mask():
    """With V = I the output reveals the dropped, rescaled weights; the gradients must be
    those of out = (softmax(q k^T) * mask) @ v with that same mask."""
    torch.manual_seed(23)
    L = 8
    q = torch.randn(1, 1, L, L, device=DEVICE, requires_grad=True)
    k = torch.randn(1, 1, L, L, device=DEVICE, requires_grad=True)
    eye = torch.eye(L).reshape(1, 1, L, L).to(DEVICE).requires_grad_()
    torch.manual_seed(7)
    dropped = sdpa(q, k, eye, dropout_p=0.3)
    g = torch.randn(1, 1, L, L)
    dropped.backward(g.to(DEVICE))
    weights = dropped.detach().cpu()
    q_c, k_c = q.detach().cpu().requires_grad_(), k.detach().cpu().requires_grad_()
    probs = torch.softmax(q_c @ k_c.transpose(-1, -2) / L**0.5, -1)
    mask = (weights != 0).float() / 0.7
    ((probs * mask) * g).sum().backward()
    torch.testing.assert_close(weights, (probs * mask).detach(), atol=1e-5, rtol=1e-4)
    torch.testing.assert_close(q.grad.cpu(), q_c.grad, atol=1e-4, rtol=1e-4)
    torch.testing.assert_close(k.grad.cpu(), k_c.grad, atol=1e-4, rtol=1e-4)


def test_sdpa_runs_the_overrideable_backend():
    openneuron.clear_op_tracking()
    q = torch.randn(1, 2, 4, 8, device=DEVICE, requires_grad=True)
    sdpa(q, q, q).sum().backward()
    executed = openneuron.get_executed_ops()
    assert executed["aten::_scaled_dot_product_fused_attention_overrideable"] == 1
    assert executed["aten::_scaled_dot_product_fused_attention_overrideable_backward"] == 1
    assert torch._fused_sdp_choice(q, q, q) == int(torch.nn.attention.SDPBackend.OVERRIDEABLE.value)


def test_float64_runs_on_host_visibly():
    x = torch.randn(2, 3, 6, 6, dtype=torch.float64)
    openneuron.clear_op_tracking()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = F.max_pool2d(x.to(DEVICE), 2)
        q = torch.randn(1, 1, 4, 8, dtype=torch.float64)
        att = sdpa(q.to(DEVICE), q.to(DEVICE), q.to(DEVICE))
    torch.testing.assert_close(out.cpu(), F.max_pool2d(x, 2))
    torch.testing.assert_close(att.cpu(), sdpa(q, q, q))
    assert openneuron.get_fallback_ops()
