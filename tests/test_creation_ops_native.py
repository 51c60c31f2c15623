"""Creation ops on the device: torch.eye at the float8 formats (written as the format's bits),
tril_indices/triu_indices and storage-less zero tensors; Tensor.unfold's gradient and
nn.functional.unfold/fold (im2col/col2im), which gather and scatter windows. Equal to the CPU's,
with no op on the host fallback.
"""

import pytest
import torch

import openneuron
from tests.kernel_mutants import kernel_replaced

FLOAT8 = [torch.float8_e4m3fn, torch.float8_e5m2, torch.float8_e4m3fnuz, torch.float8_e5m2fnuz]


@pytest.mark.parametrize("dtype", FLOAT8, ids=str)
@pytest.mark.parametrize("shape", [(4,), (3, 5), (6, 2), (0, 3)])
def test_eye_at_float8_matches_cpu_bits(dtype, shape):
    openneuron.clear_op_tracking()
    got = torch.eye(*shape, dtype=dtype, device="neuron")
    out = torch.empty(1, dtype=dtype, device="neuron")
    torch.eye(*shape, out=out)
    assert openneuron.get_fallback_ops() == {}
    want = torch.eye(*shape, dtype=dtype)
    for result in (got, out):
        assert result.dtype == dtype and result.shape == want.shape
        assert torch.equal(result.cpu().view(torch.uint8), want.view(torch.uint8))


@pytest.mark.parametrize("dtype", [torch.int64, torch.int32], ids=str)
@pytest.mark.parametrize("op", [torch.tril_indices, torch.triu_indices], ids=lambda f: f.__name__)
def test_triangle_indices_match_cpu(op, dtype):
    openneuron.clear_op_tracking()
    for row, col, offset in [(3, 4, 0), (3, 4, 1), (5, 3, -2), (4, 4, -9), (0, 3, 0), (6, 6, 7)]:
        got = op(row, col, offset, dtype=dtype, device="neuron")
        want = op(row, col, offset, dtype=dtype)
        assert got.dtype == want.dtype and torch.equal(got.cpu(), want), (row, col, offset)
    assert openneuron.get_fallback_ops() == {}
    with pytest.raises(RuntimeError, match="row must be non-negative"):
        op(-1, 3, device="neuron")
    with pytest.raises(NotImplementedError, match="not implemented for 'Float'"):
        op(3, 3, dtype=torch.float32, device="neuron")


def test_efficient_zero_tensors_are_made_on_the_device():
    # Autograd gives sgn of a real input a storage-less zero gradient.
    x = torch.randn(4, 5, device="neuron", requires_grad=True)
    openneuron.clear_op_tracking()
    torch.sgn(x).sum().backward()
    zero = torch._efficientzerotensor((2, 3), device="neuron")
    assert openneuron.get_fallback_ops() == {}
    assert torch.equal(x.grad.cpu(), torch.zeros(4, 5))
    assert torch._is_zerotensor(zero) and zero.device.type == "neuron"
    assert torch.equal((zero + torch.ones(2, 3, device="neuron")).cpu(), torch.ones(2, 3))


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16], ids=str)
@pytest.mark.parametrize("size,step", [(3, 1), (2, 2), (2, 3), (4, 2)])
def test_unfold_gradient_sums_overlapping_windows_as_the_cpu(dtype, size, step):
    torch.manual_seed(3)
    x = torch.randn(4, 9, 5).to(dtype)
    dev = x.to("neuron").requires_grad_()
    cpu = x.clone().requires_grad_()
    weights = torch.randn(dev.unfold(1, size, step).shape).to(dtype)
    openneuron.clear_op_tracking()
    (dev.unfold(1, size, step) * weights.to("neuron")).sum().backward()
    (cpu.unfold(1, size, step) * weights).sum().backward()
    assert openneuron.get_fallback_ops() == {}
    # Windows are summed in the CPU's order, rounding as it rounds: equal bit for bit.
    assert torch.equal(dev.grad.cpu(), cpu.grad)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16], ids=str)
@pytest.mark.parametrize(
    "kernel,dilation,padding,stride", [(3, 1, 0, 1), ((2, 3), (2, 1), (1, 2), (2, 1)), (2, 1, 1, 2)]
)
def test_unfold_and_fold_match_cpu(dtype, kernel, dilation, padding, stride):
    torch.manual_seed(6)
    x = torch.randn(2, 3, 7, 8).to(dtype)
    args = dict(kernel_size=kernel, dilation=dilation, padding=padding, stride=stride)
    dev = x.to("neuron").requires_grad_()
    cpu = x.clone().requires_grad_()
    openneuron.clear_op_tracking()
    got = torch.nn.functional.unfold(dev, **args)
    want = torch.nn.functional.unfold(cpu, **args)
    weights = torch.randn(want.shape).to(dtype)
    (got * weights.to("neuron")).sum().backward()  # the gradient of unfold is fold
    (want * weights).sum().backward()
    folded = torch.nn.functional.fold(got.detach()[0], (7, 8), **args)  # unbatched
    assert openneuron.get_fallback_ops() == {}
    assert torch.equal(got.detach().cpu(), want.detach())
    tol = {} if dtype == torch.float32 else dict(rtol=1e-2, atol=1e-2)
    torch.testing.assert_close(dev.grad.cpu(), cpu.grad, **tol)
    torch.testing.assert_close(
        folded.cpu(), torch.nn.functional.fold(want.detach()[0], (7, 8), **args), **tol
    )
    with pytest.raises(RuntimeError):
        torch.nn.functional.unfold(dev.detach(), kernel_size=20)


def test_a_wrong_triangle_is_caught():
    def upper_instead(row, col, offset=0, *, dtype=None, layout=None, device=None, pin_memory=None):
        # The upper triangle's coordinates where the lower one's were asked for.
        return torch.triu_indices(row, col, offset, dtype=dtype or torch.long).to(device)

    with kernel_replaced("tril_indices", upper_instead), pytest.raises(AssertionError):
        test_triangle_indices_match_cpu(torch.tril_indices, torch.int64)
