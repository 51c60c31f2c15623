"""multilabel_margin_loss (F.multilabel_margin_loss, nn.MultiLabelMarginLoss) on neuron: the
CPU's losses, gradients and errors at float32, and at bfloat16/float16 (which CUDA has and the
CPU lacks) the CPU's float32 result on the same 16-bit inputs rounded once; no op falls back."""

import pytest
import torch
import torch.nn.functional as F

import openneuron
from tests.kernel_mutants import kernel_replaced

FLOATS = [torch.float32, torch.bfloat16, torch.float16]
# float32: sums of up to C^2 hinge terms, here in double and rounded once, on the CPU in float
# (measured |neuron - cpu| <= 4.8e-7 relative); 16-bit: one rounding of the fp32 reference.
TOL = {
    torch.float32: dict(atol=1e-5, rtol=1e-5),
    torch.bfloat16: dict(atol=1e-2, rtol=1e-2),
    torch.float16: dict(atol=1e-3, rtol=1e-3),
}
REDUCTIONS = ["none", "mean", "sum"]


def case(shape, seed):
    generator = torch.Generator().manual_seed(seed)
    x = torch.randn(shape, generator=generator)
    classes = shape[-1]
    target = torch.randint(-1, classes, shape, generator=generator)
    return x, target


CASES = [case((4, 6), 0), case((1, 3), 1), case((7,), 2), case((0, 5), 3), case((3, 9), 4)]


def natively(fn):
    openneuron.clear_op_tracking()
    with openneuron.strict():
        result = fn()
    assert openneuron.get_fallback_ops() == {}
    return result


def loss_and_grad(x, target, reduction, device):
    leaf = x.to(device).requires_grad_()
    loss = F.multilabel_margin_loss(leaf, target.to(device), reduction=reduction)
    # 0.5, 0.75, 1, 1.25, ...: exact in every dtype, so both devices scale alike.
    grad_out = (torch.arange(loss.numel()) % 4 * 0.25 + 0.5).reshape(loss.shape).to(loss.dtype)
    (grad,) = torch.autograd.grad(loss, leaf, grad_out.to(device))
    return loss, grad


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_multilabel_margin_loss_and_gradient_match_the_cpu(dtype, reduction):
    for x, target in CASES:
        if x.numel() == 0 and reduction != "none":
            continue  # the CPU's mean and sum over no rows read uninitialized memory
        x = x.to(dtype)
        loss, grad = natively(lambda: loss_and_grad(x, target, reduction, "neuron"))
        cpu_loss, cpu_grad = loss_and_grad(x.float(), target, reduction, "cpu")
        assert loss.dtype == dtype and grad.dtype == dtype
        torch.testing.assert_close(loss.cpu(), cpu_loss.to(dtype), **TOL[dtype])
        torch.testing.assert_close(grad.cpu(), cpu_grad.to(dtype), **TOL[dtype])


def test_multilabel_margin_loss_module_and_is_target_match_the_cpu():
    x, target = CASES[0]
    module = torch.nn.MultiLabelMarginLoss()
    got = natively(lambda: module(x.to("neuron"), target.to("neuron")))
    torch.testing.assert_close(got.cpu(), module(x, target))
    for reduction in (0, 1, 2):
        got = natively(
            lambda: torch.ops.aten.multilabel_margin_loss_forward(
                x.to("neuron"), target.to("neuron"), reduction
            )
        )
        cpu = torch.ops.aten.multilabel_margin_loss_forward(x, target, reduction)
        torch.testing.assert_close(got[0].cpu(), cpu[0], **TOL[torch.float32])
        assert torch.equal(got[1].cpu(), cpu[1])


def same_error(fn, *args):
    with pytest.raises(Exception) as on_cpu:
        fn(*args)
    with pytest.raises(type(on_cpu.value)) as on_neuron:
        fn(*[a.to("neuron") for a in args])
    assert str(on_neuron.value).splitlines()[0] == str(on_cpu.value).splitlines()[0]


def test_multilabel_margin_loss_refuses_what_the_cpu_refuses():
    forward = torch.ops.aten.multilabel_margin_loss_forward
    backward = torch.ops.aten.multilabel_margin_loss_backward
    x = torch.randn(2, 4)
    good = torch.tensor([[3, 0, -1, 1], [1, 2, 3, 0]])
    same_error(lambda x, t: forward(x, t, 1), x, torch.tensor([[4, 0, -1, 1], [1, 2, 3, 0]]))
    same_error(lambda x, t: forward(x, t, 1), x, torch.tensor([[0, -1, 7, 1], [1, 2, 3, 0]]))
    same_error(lambda x, t: forward(x, t, 1), x, torch.tensor([[-2, 0, -1, 1], [1, 2, 3, 0]]))
    same_error(lambda x, t: forward(x, t, 1), x, good[:, :3])
    same_error(lambda x, t: forward(x, t, 1), x, good.int())
    same_error(lambda x, t: forward(x, t, 1), torch.randn(2, 0), torch.zeros(2, 0).long())
    same_error(lambda x, t: forward(x, t, 1), torch.randn(2, 3, 4), torch.zeros(2, 3, 4).long())
    _, is_target = forward(x, good, 0)
    same_error(lambda g, x, t, i: backward(g, x, t, 0, i), torch.ones(3), x, good, is_target)
    same_error(lambda g, x, t, i: backward(g, x, t, 0, i), torch.ones(2), x, good, is_target[:1])
    same_error(
        lambda g, x, t, i: backward(g, x, t, 0, i), torch.ones(2), x, good, is_target.double()
    )


def test_multilabel_margin_loss_mutant_is_caught():
    def every_target(x, target, reduction):
        # Reads past the first -1: every listed class counts as a target.
        cpu = torch.ops.aten.multilabel_margin_loss_forward.default(
            x.cpu(), target.cpu().abs(), reduction
        )
        return cpu[0].to(x.device), cpu[1].to(x.device)

    with kernel_replaced("multilabel_margin_loss_forward", every_target):
        with pytest.raises(AssertionError):
            test_multilabel_margin_loss_and_gradient_match_the_cpu(torch.float32, "none")
