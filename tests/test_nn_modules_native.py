"""nn modules that used to run on the host fallback, now native: transposed convolution (1-D,
2-D), reflection and replication padding (1-3 padded dims), adaptive max pooling (1-D, 2-D),
the activations hardshrink, softshrink, threshold, logsigmoid, prelu and glu, and the losses
that ran on the host only through logsigmoid.

Each module runs forward and backward on neuron at float32, bfloat16 and float16 and on the CPU
at float32 from the same dtype-rounded inputs and parameters; outputs, input gradients and
parameter gradients are compared, and no op may run on the host fallback. The errors the CPU
raises for bad calls are raised at the call with the CPU's exception type.
"""

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

import openneuron
from tests import module_parity
from tests.kernel_mutants import kernel_replaced
from tests.module_parity import rounded

DEVICE = "neuron"
FLOAT_DTYPES = [torch.float32, torch.bfloat16, torch.float16]

# Tolerances per dtype, from the largest errors measured over these modules' outputs and input
# gradients (in brackets, with the reference's magnitude there):
# float32: sums in another order than the CPU's (transposed convolution) [9.5e-7 on ~5];
#          pointwise and padding results equal the CPU's or lie within an ulp.
# bfloat16: one bf16 rounding (2^-8 relative) of an fp32 result against an fp32 reference; the
#          gradients also see the bf16-rounded upstream gradient [3.1e-2 on ~13, a padding
#          gradient summing several terms].
# float16: one fp16 rounding (2^-11 relative), same reference [2.2e-3 on ~10].
TOL = {
    torch.float32: dict(atol=2e-5, rtol=2e-5),
    torch.bfloat16: dict(atol=4e-2, rtol=2e-2),
    torch.float16: dict(atol=5e-3, rtol=2e-3),
}

MODULES = {
    # name: (module factory, input shape)
    "ConvTranspose1d": (lambda: nn.ConvTranspose1d(4, 6, 3, stride=2, padding=1), (2, 4, 9)),
    "ConvTranspose1d_groups": (
        lambda: nn.ConvTranspose1d(4, 6, 3, stride=3, output_padding=2, groups=2, bias=False),
        (3, 4, 7),
    ),
    "ConvTranspose2d": (
        lambda: nn.ConvTranspose2d(8, 4, 4, stride=2, padding=1),  # a UNet/VAE upsampler
        (2, 8, 6, 5),
    ),
    "ConvTranspose2d_dilated": (
        lambda: nn.ConvTranspose2d(3, 5, (3, 2), stride=(2, 1), output_padding=(1, 0), dilation=2),
        (2, 3, 5, 4),
    ),
    "ReflectionPad1d": (lambda: nn.ReflectionPad1d((3, 1)), (2, 3, 7)),
    "ReflectionPad2d": (lambda: nn.ReflectionPad2d((2, 1, 3, 0)), (2, 3, 6, 5)),
    "ReflectionPad2d_unbatched": (lambda: nn.ReflectionPad2d(2), (3, 6, 5)),
    "ReflectionPad3d": (lambda: nn.ReflectionPad3d((1, 2, 0, 1, 2, 1)), (2, 2, 4, 5, 3)),
    "ReplicationPad1d": (lambda: nn.ReplicationPad1d((4, 2)), (2, 3, 5)),
    "ReplicationPad2d": (lambda: nn.ReplicationPad2d((3, 0, 1, 5)), (2, 3, 4, 4)),
    "ReplicationPad2d_crop": (lambda: nn.ReplicationPad2d((-1, 2, 1, -2)), (2, 3, 5, 6)),
    "ReplicationPad3d": (lambda: nn.ReplicationPad3d(2), (1, 2, 3, 4, 3)),
    "AdaptiveMaxPool1d": (lambda: nn.AdaptiveMaxPool1d(4), (2, 3, 11)),
    "AdaptiveMaxPool2d": (lambda: nn.AdaptiveMaxPool2d((3, 2)), (2, 3, 7, 5)),
    "AdaptiveMaxPool2d_unbatched": (lambda: nn.AdaptiveMaxPool2d(2), (3, 5, 4)),
    "Hardshrink": (lambda: nn.Hardshrink(0.7), (4, 33)),
    "Softshrink": (lambda: nn.Softshrink(0.4), (4, 33)),
    "Threshold": (lambda: nn.Threshold(0.3, -2.0), (4, 33)),
    "LogSigmoid": (lambda: nn.LogSigmoid(), (4, 33)),
    "PReLU": (lambda: nn.PReLU(), (4, 33)),
    "PReLU_channels": (lambda: nn.PReLU(5, init=0.1), (2, 5, 3, 4)),
    "GLU": (lambda: nn.GLU(), (4, 18)),
    "GLU_dim1": (lambda: nn.GLU(dim=1), (2, 6, 5)),
}


def run_module(name, dtype):
    factory, shape = MODULES[name]
    return module_parity.run_module(factory, shape, dtype, input_scale=3)


def check_module(name, dtype):
    factory, shape = MODULES[name]
    module_parity.check_module(factory, shape, dtype, 3, TOL[dtype])


@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=str)
@pytest.mark.parametrize("name", list(MODULES))
def test_module_matches_cpu_natively(name, dtype):
    check_module(name, dtype)


def on_host(op, transform=lambda result: result):
    """A kernel computing op on the CPU copy of its tensor arguments, then spoiling it."""

    def kernel(*args):
        device = next(a.device for a in args if isinstance(a, torch.Tensor))
        host = [a.cpu() if isinstance(a, torch.Tensor) else a for a in args]
        result = transform(op(*host))
        if isinstance(result, tuple):
            return tuple(r.to(device) for r in result)
        return result.to(device)

    return kernel


MUTANTS = {
    # module: (op replaced, wrong kernel)
    "ReflectionPad2d": (
        "reflection_pad2d",
        lambda self, padding: torch.ops.aten.replication_pad2d(self.cpu(), padding).to(self.device),
    ),
    "ConvTranspose2d": (
        "convolution_overrideable",
        lambda i, w, b, s, p, d, t, op, g: torch.ops.aten.convolution(
            i.cpu(), w.cpu().flip(-1), b.cpu(), s, p, d, t, op, g
        ).to(i.device),
    ),
    "LogSigmoid": (
        "log_sigmoid_forward",
        on_host(torch.ops.aten.log_sigmoid_forward, lambda r: (r[0] * 1.01, r[1])),
    ),
    "GLU": ("glu", on_host(torch.ops.aten.glu, lambda r: r.flip(-1))),
    "AdaptiveMaxPool2d": (
        "adaptive_max_pool2d",
        on_host(torch.ops.aten.adaptive_max_pool2d, lambda r: (r[0].roll(1, -1), r[1])),
    ),
}


@pytest.mark.parametrize("name", list(MUTANTS))
def test_a_wrong_kernel_is_caught(name):
    op_name, kernel = MUTANTS[name]
    with kernel_replaced(op_name, kernel), pytest.raises(AssertionError):
        check_module(name, torch.float32)


LOSSES = {
    # name: (loss, input transform, target factory); native through log_sigmoid.
    "BCEWithLogitsLoss": (nn.BCEWithLogitsLoss(), lambda x: x, torch.rand),
    "MultiLabelSoftMarginLoss": (
        nn.MultiLabelSoftMarginLoss(),
        lambda x: x,
        lambda shape: (torch.rand(shape) > 0.5).float(),
    ),
}


@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=str)
@pytest.mark.parametrize("name", list(LOSSES))
def test_loss_matches_cpu_natively(name, dtype):
    loss, transform, target_factory = LOSSES[name]
    torch.manual_seed(1)
    x = rounded(torch.randn(6, 10) * 2, dtype)
    target = rounded(target_factory((6, 10)), dtype)
    cpu_x = x.clone().requires_grad_()
    dev_x = x.to(DEVICE, dtype).requires_grad_()
    openneuron.clear_op_tracking()
    cpu_loss = loss(transform(cpu_x), target)
    dev_loss = loss(transform(dev_x), target.to(DEVICE, dtype))
    cpu_loss.backward()
    dev_loss.backward()
    assert openneuron.get_fallback_ops() == {}
    tol = TOL[dtype]
    torch.testing.assert_close(dev_loss.cpu().float(), cpu_loss.detach(), **tol)
    torch.testing.assert_close(dev_x.grad.cpu().float(), cpu_x.grad, **tol)


def test_float32_transposed_convolution_and_padding_are_exact_or_close():
    # Padding copies values: bitwise equal to the CPU. Its gradient sums at most a few terms.
    _, _, dev_x, cpu_x, dev_out, cpu_out = run_module("ReflectionPad2d", torch.float32)
    assert torch.equal(dev_out.cpu(), cpu_out.detach())
    torch.testing.assert_close(dev_x.grad.cpu(), cpu_x.grad, atol=1e-6, rtol=1e-6)


def test_out_variants_and_in_place_threshold():
    x = torch.randn(3, 4, 6)
    openneuron.clear_op_tracking()
    out = torch.empty(0, device=DEVICE)
    torch.ops.aten.reflection_pad1d.out(x.to(DEVICE), [2, 2], out=out)
    torch.testing.assert_close(out.cpu(), torch.ops.aten.reflection_pad1d(x, [2, 2]))
    y = x.to(DEVICE)
    F.threshold(y, 0.1, 5.0, inplace=True)
    torch.testing.assert_close(y.cpu(), F.threshold(x, 0.1, 5.0))
    glu_out = torch.empty(0, device=DEVICE)
    torch.ops.aten.glu.out(x.to(DEVICE), 1, out=glu_out)
    torch.testing.assert_close(glu_out.cpu(), F.glu(x, 1))
    grad_out = torch.empty(0, device=DEVICE)
    grad = torch.randn(3, 4, 10)
    torch.ops.aten.replication_pad1d_backward.grad_input(
        grad.to(DEVICE), x.to(DEVICE), [3, 1], grad_input=grad_out
    )
    torch.testing.assert_close(
        grad_out.cpu(), torch.ops.aten.replication_pad1d_backward(grad, x, [3, 1])
    )
    assert openneuron.get_fallback_ops() == {}


BAD_CALLS = {
    "glu_odd_dim": lambda t: F.glu(t(2, 5), 1),
    "glu_scalar": lambda t: F.glu(t(), 0),
    "softshrink_negative_lambda": lambda t: F.softshrink(t(3), -1.0),
    "reflection_pad_too_wide": lambda t: F.pad(t(1, 2, 3), (3, 3), mode="reflect"),
    "reflection_pad2d_wrong_rank": lambda t: torch.ops.aten.reflection_pad2d(t(3), [1, 1, 1, 1]),
    "replication_pad_negative_output": lambda t: F.pad(t(1, 2, 3), (-2, -2), mode="replicate"),
    "pad_backward_wrong_grad": lambda t: torch.ops.aten.reflection_pad1d_backward(
        t(1, 2, 9), t(1, 2, 5), [1, 1]
    ),
    "conv_transpose_channels": lambda t: F.conv_transpose2d(t(1, 3, 4, 4), t(4, 2, 3, 3)),
    "prelu_weight_size": lambda t: F.prelu(t(2, 3), t(4)),
}


@pytest.mark.parametrize("name", list(BAD_CALLS))
def test_bad_calls_raise_as_on_cpu(name):
    call = BAD_CALLS[name]

    def caught(device):
        try:
            call(lambda *shape: torch.randn(*shape, device=device))
        except Exception as error:  # noqa: BLE001 - the type is what is compared
            return type(error)
        return None

    expected = caught("cpu")
    assert expected is not None, "the CPU accepts this call"
    assert caught(DEVICE) is expected
    # The process stays usable.
    assert torch.ones(2, device=DEVICE).sum().item() == 2.0
