"""hash_tensor and unique along a dimension on the device: results equal to the CPU's (hash bits,
unique rows with their inverse and counts), the CPU's errors, and no op on the host fallback.
"""

import pytest
import torch

import openneuron
from tests.device_dtypes import NATIVE_DTYPES
from tests.kernel_mutants import kernel_replaced

DEVICE = "neuron"


def sample(dtype, shape=(4, 6, 5), seed=0):
    torch.manual_seed(seed)
    if dtype == torch.bool:
        return torch.randint(0, 2, shape).bool()
    x = torch.randint(-3, 4, shape).to(torch.float32) * 1.5
    if dtype == torch.uint8:
        x = x.abs()
    return x.to(dtype)


@pytest.mark.parametrize("dtype", NATIVE_DTYPES, ids=str)
def test_hash_tensor_matches_cpu(dtype):
    x = sample(dtype)
    if dtype.is_floating_point:
        x[0, 0, :3] = torch.tensor([-0.0, float("nan"), float("inf")]).to(dtype)
    d = x.to(DEVICE)
    openneuron.clear_op_tracking()
    cases = [((), False), ((1,), False), ((0, 2), True), ((-1,), True)]
    for dim, keepdim in cases:
        got = torch.hash_tensor(d, dim, keepdim=keepdim)
        want = torch.hash_tensor(x, dim, keepdim=keepdim)
        assert got.dtype == torch.uint64 and got.shape == want.shape
        assert torch.equal(got.cpu().view(torch.int64), want.view(torch.int64)), dim
    out = torch.empty(0, dtype=torch.uint64, device=DEVICE)
    torch.hash_tensor(d[:, ::2], (2,), out=out)
    assert torch.equal(
        out.cpu().view(torch.int64), torch.hash_tensor(x[:, ::2], (2,)).view(torch.int64)
    )
    assert openneuron.get_fallback_ops() == {}


def test_hash_tensor_refusals_match_cpu():
    with pytest.raises(RuntimeError, match="Expected reduction dim to be specified"):
        torch.hash_tensor(torch.empty(0, device=DEVICE))
    with pytest.raises(IndexError, match="Expected reduction dim 1 to have non-zero size"):
        torch.hash_tensor(torch.empty(3, 0, device=DEVICE), (1,))


@pytest.mark.parametrize("dtype", NATIVE_DTYPES, ids=str)
@pytest.mark.parametrize("dim", [0, 1, -1])
def test_unique_along_a_dim_matches_cpu(dtype, dim):
    x = sample(dtype, (9, 4, 3), seed=1)
    x = torch.cat([x, x[:, :3], x[:, :1].expand(9, 2, 3)], dim=1)  # repeated slices along dim 1
    x = torch.cat([x, x[:2]], dim=0)  # and along dim 0
    x = torch.cat([x, x[..., :1]], dim=2)  # and along dim 2
    d = x.to(DEVICE)
    openneuron.clear_op_tracking()
    got = torch.unique(d, dim=dim, return_inverse=True, return_counts=True)
    want = torch.unique(x, dim=dim, return_inverse=True, return_counts=True)
    consecutive = torch.unique_consecutive(d, dim=dim, return_inverse=True, return_counts=True)
    want_consecutive = torch.unique_consecutive(x, dim=dim, return_inverse=True, return_counts=True)
    assert openneuron.get_fallback_ops() == {}
    for dev, cpu in [*zip(got, want), *zip(consecutive, want_consecutive)]:
        assert dev.dtype == cpu.dtype
        assert torch.equal(dev.cpu(), cpu)


def test_unique_dim_edges_match_cpu():
    empty = torch.empty(0, 3)
    for dev, cpu in zip(
        torch.unique(empty.to(DEVICE), dim=0, return_counts=True),
        torch.unique(empty, dim=0, return_counts=True),
    ):
        assert dev.shape == cpu.shape
    with pytest.raises(RuntimeError, match="0 sized dimensions, and they aren't selected"):
        torch.unique(empty.to(DEVICE), dim=1)
    with pytest.raises(RuntimeError, match="more than one"):
        torch.unique(torch.empty(0, 0, device=DEVICE), dim=1)


def test_a_wrong_unique_dim_is_caught():
    def unsorted_rows(self, dim, sorted=True, return_inverse=False, return_counts=False):
        # Distinct slices in first-seen order: CUDA's and the CPU's results are sorted.
        host = torch.empty(self.shape, dtype=self.dtype)
        host.copy_(self)
        values, inverse, counts = torch.unique_consecutive(
            host, dim=dim, return_inverse=True, return_counts=True
        )
        return tuple(t.to(DEVICE) for t in (values, inverse, counts))

    with kernel_replaced("unique_dim", unsorted_rows), pytest.raises(AssertionError):
        test_unique_along_a_dim_matches_cpu(torch.int32, 0)
