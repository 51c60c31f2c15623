"""Convolution (oneDNN path) and max pooling on neuron vs PyTorch CPU: forward and gradients.

Complements test_ops_nn.py with the cases the oneDNN kernels distinguish: 16-channel groups,
dilation, 1-D, batches large enough to be split across threads, the CNN's first layer, bf16 and
fp16, channels-last inputs; and max pooling's indices on random data, ties, NaN and 16-bit
planes. Every case asserts that nothing ran through the host fallback.
"""

import warnings

import pytest
import torch
import torch.nn.functional as F

import openneuron

# Tolerances per dtype, with the reason:
# float32: fp32 sums in a different order (oneDNN blocking vs CPU's kernels) over up to ~1e3
#          terms -> ~1e-5 relative to the terms.
# bfloat16: one bf16 rounding (2^-8 relative) of an fp32 result, against an fp32 CPU reference
#          on the same bf16 inputs; gradients also see the bf16-rounded upstream gradient.
# float16: one fp16 rounding (2^-11 relative) of an fp32 result, same reference.
TOL = {
    torch.float32: dict(atol=1e-4, rtol=1e-4),
    torch.bfloat16: dict(atol=5e-2, rtol=3e-2),
    torch.float16: dict(atol=5e-3, rtol=5e-3),
}
FLOAT_DTYPES = [torch.float32, torch.bfloat16, torch.float16]
DEVICE = "neuron"


def ours(op_name):
    return "convolution" in op_name or "max_pool2d" in op_name


def compare(fn, *inputs, dtype=torch.float32, channels_last=False):
    """Runs fn on CPU (fp32 on the dtype-rounded inputs) and on neuron (in dtype); compares the
    output and the gradient of every floating input; asserts nothing of ours fell back."""
    cpu_inputs, dev_inputs = [], []
    for value in inputs:
        if value is None:
            cpu_inputs.append(None)
            dev_inputs.append(None)
            continue
        ref = value.to(dtype).to(torch.float32)
        if channels_last and ref.dim() == 4:
            ref = ref.contiguous(memory_format=torch.channels_last)
        cpu_inputs.append(ref.clone().requires_grad_())
        dev_inputs.append(ref.to(dtype).to(DEVICE).requires_grad_())
    openneuron.clear_op_tracking()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out_dev = fn(*dev_inputs)
        out_cpu = fn(*cpu_inputs)
        upstream = torch.randn(out_cpu.shape).to(dtype).to(torch.float32)
        (out_cpu * upstream).sum().backward()
        (out_dev * upstream.to(dtype).to(DEVICE)).sum().backward()
    fallbacks = {op: n for op, n in openneuron.get_fallback_ops().items() if ours(op)}
    assert fallbacks == {}, openneuron.get_fallback_ops()
    assert out_dev.dtype == dtype
    tol = TOL[dtype]
    torch.testing.assert_close(out_dev.cpu().float(), out_cpu.detach(), equal_nan=True, **tol)
    for dev, cpu in zip(dev_inputs, cpu_inputs, strict=True):
        if cpu is not None:
            torch.testing.assert_close(dev.grad.cpu().float(), cpu.grad, **tol)


# ---------------------------------------------------------------- convolution

CONV_CASES = {
    # name: (input shape, weight shape, bias, conv2d keyword arguments)
    "groups_of_16": ((2, 32, 6, 6), (32, 16, 3, 3), True, dict(groups=2, padding=1)),
    "dilation": ((2, 4, 11, 10), (5, 4, 3, 3), True, dict(padding=2, dilation=2)),
    "depthwise_stride2": ((2, 16, 9, 9), (16, 1, 3, 3), True, dict(groups=16, stride=2, padding=1)),
    "batch_split": ((8, 16, 12, 12), (32, 16, 3, 3), True, dict(padding=1)),
    "first_layer": ((8, 3, 32, 32), (16, 3, 3, 3), True, dict(padding=1)),
    "pointwise": ((4, 24, 7, 7), (40, 24, 1, 1), False, dict()),
    "strided_5x5": ((3, 8, 15, 13), (12, 8, 5, 5), True, dict(stride=2, padding=2)),
}


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("case", sorted(CONV_CASES))
def test_conv2d_cases(case, dtype):
    input_shape, weight_shape, bias, options = CONV_CASES[case]
    torch.manual_seed(0)
    x = torch.randn(input_shape)
    w = torch.randn(weight_shape) / weight_shape[1] ** 0.5
    b = torch.randn(weight_shape[0]) if bias else None
    compare(lambda x, w, b: F.conv2d(x, w, b, **options), x, w, b, dtype=dtype)


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_conv2d_channels_last(dtype):
    torch.manual_seed(1)
    compare(
        lambda x, w, b: F.conv2d(x, w, b, padding=1),
        torch.randn(4, 16, 10, 10),
        torch.randn(8, 16, 3, 3) * 0.2,
        torch.randn(8),
        dtype=dtype,
        channels_last=True,
    )


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_conv1d_native(dtype):
    torch.manual_seed(2)
    compare(
        lambda x, w, b: F.conv1d(x, w, b, stride=2, padding=1),
        torch.randn(4, 16, 33),
        torch.randn(24, 16, 3) * 0.2,
        torch.randn(24),
        dtype=dtype,
    )


def test_conv_weight_only_gradient():
    # The first layer of a CNN: no input gradient wanted, weight and bias gradients are.
    torch.manual_seed(3)
    conv = torch.nn.Conv2d(3, 16, 3, padding=1)
    x = torch.randn(8, 3, 16, 16)
    dev_conv = torch.nn.Conv2d(3, 16, 3, padding=1).to(DEVICE)
    dev_conv.load_state_dict(conv.state_dict())
    conv(x).square().sum().backward()
    dev_conv(x.to(DEVICE)).square().sum().backward()
    torch.testing.assert_close(dev_conv.weight.grad.cpu(), conv.weight.grad, rtol=1e-4, atol=1e-3)
    torch.testing.assert_close(dev_conv.bias.grad.cpu(), conv.bias.grad, rtol=1e-4, atol=1e-3)


# ---------------------------------------------------------------- max pooling


def compare_max_pool(x, dtype=torch.float32, **options):
    """Values and indices must equal CPU's exactly (same scan order and NaN rule)."""
    x = x.to(dtype)
    openneuron.clear_op_tracking()
    out, idx = F.max_pool2d(x.to(DEVICE), return_indices=True, **options)
    assert not any(ours(op) for op in openneuron.get_fallback_ops())
    ref, ref_idx = F.max_pool2d(x, return_indices=True, **options)
    torch.testing.assert_close(out.cpu(), ref, rtol=0, atol=0, equal_nan=True)
    assert torch.equal(idx.cpu(), ref_idx)


MAX_POOL_OPTIONS = [
    dict(kernel_size=2),
    dict(kernel_size=2, stride=2, padding=1),
    dict(kernel_size=3, stride=2, padding=1),
    dict(kernel_size=3, stride=1, padding=1, dilation=1),
    dict(kernel_size=(3, 2), stride=(2, 1), dilation=(1, 2)),
    dict(kernel_size=2, ceil_mode=True),
    dict(kernel_size=3, stride=2, ceil_mode=True, padding=1),
]


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("options", MAX_POOL_OPTIONS)
def test_max_pool2d_random_indices(dtype, options):
    torch.manual_seed(4)
    compare_max_pool(torch.randn(2, 5, 13, 11), dtype, **options)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_max_pool2d_ties_pick_the_first(dtype):
    x = torch.randint(0, 3, (2, 3, 12, 12)).float()  # many ties
    for options in MAX_POOL_OPTIONS:
        compare_max_pool(x, dtype, **options)


def test_max_pool2d_nan_and_infinity():
    torch.manual_seed(5)
    x = torch.randn(1, 2, 8, 8)
    x[0, 0, 0, 0] = float("nan")  # one NaN in a window
    x[0, 0, 2, 2] = float("nan")  # two NaNs in one window: PyTorch keeps the last
    x[0, 0, 3, 3] = float("nan")
    x[0, 1, :4, :4] = float("-inf")  # all -inf windows keep the first index
    for options in MAX_POOL_OPTIONS:
        compare_max_pool(x, **options)


def test_max_pool2d_non_contiguous_and_gradient():
    torch.manual_seed(6)
    x = torch.randn(3, 4, 10, 9)
    compare(lambda x: F.max_pool2d(x, 2), x, channels_last=True)
    compare(lambda x: F.max_pool2d(x[:, :, 1:, ::2], 3, 2, 1), x)
    for dtype in FLOAT_DTYPES:
        compare(lambda x: F.max_pool2d(x, 2), torch.randn(4, 8, 16, 16), dtype=dtype)


def test_max_pool2d_large_planes():
    # The CNN's pooling shape: many planes, split across threads.
    torch.manual_seed(7)
    compare_max_pool(torch.randn(64, 32, 32, 32), kernel_size=2)


@pytest.mark.parametrize("transposed", [False, True], ids=["conv", "transposed"])
@pytest.mark.parametrize("spatial", [1, 2])
@pytest.mark.parametrize(
    "stride,padding,dilation,groups", [(1, 0, 1, 1), (2, 1, 1, 2), (1, 2, 2, 1), (3, 1, 2, 2)]
)
def test_int64_convolution_matches_cpu_exactly(
    transposed, spatial, stride, padding, dilation, groups
):
    # The CPU convolves int64 exactly (wrapping on overflow); so does the device.
    torch.manual_seed(9)
    sizes = (2, 4) + (9,) * spatial
    x = torch.randint(-5, 6, sizes)
    if transposed:
        w = torch.randint(-3, 4, (4, 6 // groups) + (3,) * spatial)
        op = (
            torch.nn.functional.conv_transpose1d
            if spatial == 1
            else torch.nn.functional.conv_transpose2d
        )
        extra = dict(output_padding=stride - 1 if stride > 1 else 0)
    else:
        w = torch.randint(-3, 4, (6, 4 // groups) + (3,) * spatial)
        op = torch.nn.functional.conv1d if spatial == 1 else torch.nn.functional.conv2d
        extra = {}
    bias = torch.randint(-10, 10, (6,))
    args = dict(stride=stride, padding=padding, dilation=dilation, groups=groups, **extra)
    openneuron.clear_op_tracking()
    got = op(x.to("neuron"), w.to("neuron"), bias.to("neuron"), **args)
    assert openneuron.get_fallback_ops() == {}
    want = op(x, w, bias, **args)
    assert got.dtype == torch.int64 and torch.equal(got.cpu(), want)


@pytest.mark.parametrize(
    "dtype", [torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64], ids=str
)
@pytest.mark.parametrize(
    "kernel,stride,padding,dilation,ceil_mode",
    [
        (2, 2, 0, 1, False),
        (3, 1, 1, 1, False),
        (3, 2, 1, 2, True),
        ((2, 3), (1, 2), (1, 0), 1, True),
    ],
)
def test_integer_max_pool2d_matches_cpu(dtype, kernel, stride, padding, dilation, ceil_mode):
    # Values from a few levels (ties everywhere) and the dtype's minimum next to the padding:
    # the index must be the first unpadded maximum, as on the CPU.
    torch.manual_seed(8)
    info = torch.iinfo(dtype)
    x = torch.randint(0, 3, (2, 3, 7, 8)).to(dtype)
    x[0, 0] = info.min
    args = dict(
        kernel_size=kernel,
        stride=stride,
        padding=padding,
        dilation=dilation,
        ceil_mode=ceil_mode,
        return_indices=True,
    )
    openneuron.clear_op_tracking()
    got = F.max_pool2d(x.to("neuron"), **args)
    got_unbatched = F.max_pool2d(x[1].to("neuron"), **args)
    channels_last = F.max_pool2d(
        x.to("neuron").contiguous(memory_format=torch.channels_last), **args
    )
    assert openneuron.get_fallback_ops() == {}
    want = F.max_pool2d(x, **args)
    for result, expected in [
        (got, want),
        (got_unbatched, F.max_pool2d(x[1], **args)),
        (channels_last, want),
    ]:
        assert torch.equal(result[0].cpu(), expected[0])
        assert torch.equal(result[1].cpu(), expected[1])
    assert channels_last[0].is_contiguous(memory_format=torch.channels_last)


@pytest.mark.parametrize(
    "kernel,stride,padding,ceil_mode,count_include_pad,divisor",
    [
        (2, 2, 0, False, True, None),
        (3, 2, 1, True, True, None),
        (3, 2, 1, True, False, None),
        ((2, 3), 1, (1, 1), False, True, 5),
    ],
)
def test_int64_avg_pool2d_truncates_as_the_cpu(
    kernel, stride, padding, ceil_mode, count_include_pad, divisor
):
    torch.manual_seed(10)
    x = torch.randint(-50, 50, (2, 3, 7, 8))
    args = dict(
        kernel_size=kernel,
        stride=stride,
        padding=padding,
        ceil_mode=ceil_mode,
        count_include_pad=count_include_pad,
        divisor_override=divisor,
    )
    openneuron.clear_op_tracking()
    got = F.avg_pool2d(x.to("neuron"), **args)
    unbatched = F.avg_pool2d(x[0].to("neuron"), **args)
    assert openneuron.get_fallback_ops() == {}
    assert torch.equal(got.cpu(), F.avg_pool2d(x, **args))
    assert torch.equal(unbatched.cpu(), F.avg_pool2d(x[0], **args))


def test_int64_avg_pool2d_takes_a_negative_divisor_override_as_given():
    x = torch.randint(-9, 10, (1, 1, 4, 4))
    got = F.avg_pool2d(x.to("neuron"), 2, divisor_override=-2)
    assert torch.equal(got.cpu(), F.avg_pool2d(x, 2, divisor_override=-2))


def test_int64_transposed_convolution_with_output_padding_past_the_stride():
    # PyTorch allows output padding up to the dilation; rows no window reaches hold the bias.
    torch.manual_seed(11)
    x, w, b = (
        torch.randint(-4, 5, (2, 2, 4, 4)),
        torch.randint(-3, 4, (2, 2, 4, 5)),
        torch.arange(4),
    )
    args = dict(stride=(3, 2), padding=(1, 2), output_padding=(2, 3), groups=2, dilation=(4, 4))
    openneuron.clear_op_tracking()
    got = F.conv_transpose2d(x.to("neuron"), w.to("neuron"), b.to("neuron"), **args)
    assert openneuron.get_fallback_ops() == {}
    assert torch.equal(got.cpu(), F.conv_transpose2d(x, w, b, **args))
