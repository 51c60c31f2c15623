"""Tensors with more than 16 dimensions run natively and match the CPU: pointwise, reductions,
copies, indexing, sorting and autograd at 20, 25 and 64 dims (PyTorch's own limit is 64)."""

import pytest
import torch

import openneuron


def _shape(ndim: int) -> list[int]:
    # Mostly size-1 dims with a 2 every fourth, so even 64 dims stay small (12288 elements).
    return [2, 1, 3] + [2 if d % 4 == 0 else 1 for d in range(3, ndim)]


def _idx(values, like):
    return torch.tensor(values, device=like.device)


OPS = {
    "add_scalar": lambda x: x + 1,
    "mul_transposed": lambda x: x.transpose(0, 2) * 2,
    "sin": lambda x: x.sin(),
    "where": lambda x: torch.where(x > 0, x, -x),
    "masked_fill": lambda x: x.masked_fill(x > 0, 0.0),
    "sum": lambda x: x.sum(),
    "sum_dims": lambda x: x.sum(dim=(0, 4)),
    "mean_keepdim": lambda x: x.mean(dim=2, keepdim=True),
    "amax": lambda x: x.amax(dim=-2),
    "argmax": lambda x: x.argmax(dim=2),
    "max": lambda x: x.max(),
    "all": lambda x: (x == x).all(),
    "cumsum": lambda x: x.cumsum(dim=2),
    "softmax": lambda x: x.softmax(dim=2),
    "contiguous_of_transpose": lambda x: x.transpose(0, 2).contiguous(),
    "clone_reversed_dims": lambda x: x.permute(*range(x.dim() - 1, -1, -1)).clone(),
    "to_half_transposed": lambda x: x.transpose(0, 2).half(),
    "copy_": lambda x: torch.empty_like(x).copy_(x),
    "expand_add": lambda x: x.select(1, 0).unsqueeze(1).expand_as(x) + x,
    "cat": lambda x: torch.cat([x, x], dim=4),
    "index_select": lambda x: x.index_select(2, _idx([2, 0], x)),
    "getitem_tensor": lambda x: x[_idx([1, 0], x)],
    "getitem_inner_tensor": lambda x: x[:, :, _idx([1, 0], x)],
    "gather": lambda x: x.gather(2, (x.abs() * 10).long() % 3),
    # argsort along the dim: a permutation, so no two values land in one slot.
    "scatter": lambda x: torch.zeros_like(x).scatter(2, x.argsort(dim=2), x),
    "index_put": lambda x: x.clone().index_put_(
        (_idx([1], x),), torch.tensor(5.0, device=x.device)
    ),
    "index_add": lambda x: x.clone().index_add_(2, _idx([2, 2], x), x[:, :, :2].clone()),
    "masked_select": lambda x: x[x > 0],
    "nonzero": lambda x: (x > 0).nonzero(),
    "sort": lambda x: x.sort(dim=2)[0],
    "topk": lambda x: x.topk(2, dim=2)[0],
}

# Exact for everything but sin and softmax, whose kernels may differ from the CPU's by an ulp
# (float32: the default assert_close tolerances, 1.3e-6 relative, are a few ulps).
INEXACT = {"sin", "softmax", "mean_keepdim", "sum", "sum_dims", "cumsum"}


# Reductions and scans take a 32-bit mask of reduced dims: beyond 31 dims they run the host
# fallback (checked for values here, not for nativeness).
FALLBACK_ABOVE_31_DIMS = {
    "sum",
    "sum_dims",
    "mean_keepdim",
    "amax",
    "argmax",
    "max",
    "all",
    "cumsum",
}


@pytest.mark.parametrize("ndim", [20, 25, 64])
@pytest.mark.parametrize("name", OPS)
def test_op_beyond_sixteen_dims_matches_cpu(name, ndim):
    torch.manual_seed(ndim)
    cpu = torch.randn(_shape(ndim))
    expected = OPS[name](cpu)
    native = ndim <= 31 or name not in FALLBACK_ABOVE_31_DIMS
    with openneuron.strict(native):  # native: no host fallback
        got = OPS[name](cpu.to("neuron"))
    assert got.device.type == "neuron" and got.shape == expected.shape
    if name in INEXACT:
        torch.testing.assert_close(got.cpu(), expected)
    else:
        torch.testing.assert_close(got.cpu(), expected, rtol=0, atol=0)


@pytest.mark.parametrize("ndim", [20, 25, 64])
def test_autograd_beyond_sixteen_dims(ndim):
    torch.manual_seed(ndim)
    cpu = torch.randn(_shape(ndim), requires_grad=True)
    dev = cpu.detach().to("neuron").requires_grad_()
    (cpu.sin() * cpu).sum(dim=(1, 2)).sum().backward()
    (dev.sin() * dev).sum(dim=(1, 2)).sum().backward()
    torch.testing.assert_close(dev.grad.cpu(), cpu.grad)  # sin: an ulp apart at most


def test_more_dims_than_pytorch_allows_is_refused_clearly():
    # A 65-dim tensor can be made and filled, as on the CPU; the device's elementwise kernels
    # refuse it with a clear error (the CPU runs them; its reductions refuse, with this text).
    x = torch.ones([1] * 63 + [2, 3], device="neuron")
    with pytest.raises(RuntimeError, match="only tensors with up to 64 dims are supported"):
        torch.exp(x)
    assert (torch.ones(2, device="neuron") + 1).cpu().tolist() == [2.0, 2.0]
