"""Creation ops on the device: torch.eye at the float8 formats (written as the format's bits),
tril_indices/triu_indices and storage-less zero tensors, equal to the CPU's, with no op on the
host fallback.
"""

import pytest
import torch

import openneuron

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
