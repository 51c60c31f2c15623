"""NKI kernels on PyTorch tensors: eager on neuron tensors (traced once per signature),
custom ops registered with openneuron.nki_op (fake kernels, autograd)."""

import pytest
import torch
import torch.nn.functional as F

import openneuron
from examples.nki.elementwise import tensor_add
from examples.nki.norms import rmsnorm
from openneuron.nki import language as nl
from openneuron.nki import torch_kernels


def test_eager_call_on_neuron_tensors_traces_once_per_signature():
    torch_kernels.clear_cache()
    a, b = torch.randn(200, 64, device="neuron"), torch.randn(200, 64, device="neuron")
    out = tensor_add(a, b)
    assert out.device.type == "neuron"
    torch.testing.assert_close(out.cpu(), a.cpu() + b.cpu(), rtol=0, atol=0)
    tensor_add(a * 2, b)
    assert torch_kernels.cache_info() == {"entries": 1, "hits": 1, "misses": 1}
    tensor_add(a[:100], b[:100])  # new shape: traced again
    tensor_add(a.bfloat16(), b.bfloat16())  # new dtype: traced again
    assert torch_kernels.cache_info()["misses"] == 3


def test_eager_kernel_writing_an_argument_updates_the_neuron_tensor():
    @openneuron.nki.jit
    def exp_into(x, out):
        nl.store(out, nl.exp(nl.load(x)))

    x = torch.randn(32, 16, device="neuron")
    out = torch.zeros(32, 16, device="neuron")
    exp_into(x, out)
    torch.testing.assert_close(out.cpu(), x.cpu().exp(), rtol=1e-6, atol=1e-6)


def _rmsnorm_backward_setup(ctx, inputs, output):
    x, weight, eps = inputs
    ctx.save_for_backward(x, weight)
    ctx.eps = eps


def _rmsnorm_backward(ctx, grad):
    # The backward runs PyTorch's own on CPU: the test is about the registration plumbing.
    x, weight = ctx.saved_tensors
    with torch.enable_grad():
        x_cpu = x.detach().cpu().requires_grad_()
        w_cpu = weight.detach().cpu().requires_grad_()
        y = F.rms_norm(x_cpu, (x.shape[-1],), w_cpu, eps=ctx.eps)
        gx, gw = torch.autograd.grad(y, (x_cpu, w_cpu), grad.cpu())
    return gx.to(x.device), gw.to(weight.device), None


@pytest.fixture(scope="module")
def rmsnorm_op():
    op = openneuron.nki_op("nki_test::rmsnorm")(rmsnorm)
    op.register_autograd(_rmsnorm_backward, setup_context=_rmsnorm_backward_setup)
    return op


def test_nki_op_forward_on_neuron_and_cpu(rmsnorm_op):
    x, w = torch.randn(130, 96), torch.randn(96)
    expected = F.rms_norm(x, (96,), w, eps=1e-6)
    on_device = rmsnorm_op(x.to("neuron"), w.to("neuron"), 1e-6)
    assert on_device.device.type == "neuron"
    torch.testing.assert_close(on_device.cpu(), expected, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(rmsnorm_op(x, w, 1e-6), expected, rtol=1e-5, atol=1e-5)
    assert torch.ops.nki_test.rmsnorm.default is not None


def test_nki_op_fake_kernel_gives_shapes_without_running(rmsnorm_op):
    x, w = torch.empty(300, 64, device="meta"), torch.empty(64, device="meta")
    out = rmsnorm_op(x, w, 1e-6)
    assert out.device.type == "meta" and out.shape == (300, 64) and out.dtype == torch.float32
    torch.library.opcheck(
        rmsnorm_op,
        (torch.randn(8, 16), torch.randn(16), 1e-6),
        test_utils=("test_schema", "test_faketensor"),
    )


def test_nki_op_autograd_matches_pytorch(rmsnorm_op):
    x = torch.randn(64, 32)
    w = torch.randn(32)
    x_dev = x.to("neuron").requires_grad_()
    w_dev = w.to("neuron").requires_grad_()
    (rmsnorm_op(x_dev, w_dev, 1e-6) * torch.arange(32.0, device="neuron")).sum().backward()
    x_ref, w_ref = x.clone().requires_grad_(), w.clone().requires_grad_()
    (F.rms_norm(x_ref, (32,), w_ref, eps=1e-6) * torch.arange(32.0)).sum().backward()
    torch.testing.assert_close(x_dev.grad.cpu(), x_ref.grad, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(w_dev.grad.cpu(), w_ref.grad, rtol=1e-5, atol=1e-5)
