"""Copy-on-write lazy clones (``torch._lazy_clone``) on neuron, as on the CPU and CUDA: the clone
shares its source's memory until either is written, reads leave both shared, and the first write
copies in stream order, so work queued before the clone is seen and the other tensor keeps its
values. The device allocator's DataPtrs carry their data pointer as context (what PyTorch's
copy-on-write wrapping requires)."""

import gc

import pytest
import torch

is_cow = torch._C._is_cow_tensor
address = torch._C._data_address  # reads the pointer without copying

DTYPES = [torch.float32, torch.bfloat16, torch.int64, torch.bool, torch.complex64]


def _sample(dtype, device):
    values = torch.tensor([[0, 1], [2, 3]], dtype=torch.float32)
    return values.to(dtype).to(device)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_a_lazy_clone_shares_memory_until_written(dtype):
    source = _sample(dtype, "neuron")
    clone = source._lazy_clone()
    assert is_cow(source) and is_cow(clone)
    assert address(clone) == address(source)
    assert torch.equal(clone.cpu(), _sample(dtype, "cpu"))
    clone.fill_(1)
    assert not is_cow(clone)
    assert address(clone) != address(source)
    assert torch.equal(source.cpu(), _sample(dtype, "cpu"))  # the source kept its values
    assert torch.equal(clone.cpu(), torch.ones(2, 2, dtype=dtype))


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_reading_both_copies_nothing(dtype):
    source = _sample(dtype, "neuron")
    clone = source._lazy_clone()
    result = source + clone if dtype != torch.bool else source | clone
    source.cpu(), clone[0, 0].item()  # device-to-host reads
    assert is_cow(source) and is_cow(clone)
    expected = _sample(dtype, "cpu")
    expected = expected + expected if dtype != torch.bool else expected | expected
    assert torch.equal(result.cpu(), expected)


def test_writing_the_source_leaves_the_clone_with_the_values_queued_before_it():
    x = torch.randn(512, 512, device="neuron")
    y = x @ x  # queued, likely still running when the clone is made
    clone = y._lazy_clone()
    y.add_(1)
    torch.testing.assert_close(clone.cpu(), x.cpu() @ x.cpu(), rtol=1e-4, atol=1e-3)
    torch.testing.assert_close(y.cpu(), clone.cpu() + 1)


def test_a_view_of_a_clone_writes_only_the_clone():
    source = torch.arange(12.0, device="neuron").view(3, 4)
    clone = source._lazy_clone()
    clone[1].mul_(10)  # the view materialises the whole storage of the clone
    assert torch.equal(source.cpu(), torch.arange(12.0).view(3, 4))
    expected = torch.arange(12.0).view(3, 4)
    expected[1] *= 10
    assert torch.equal(clone.cpu(), expected)


def test_lazy_clones_return_their_memory():
    # Exact counts: earlier tests' garbage and queued work are settled first, collection held.
    gc.collect()
    torch.neuron.synchronize()
    gc.disable()
    try:
        _count_lazy_clone_memory()
    finally:
        gc.enable()


def _count_lazy_clone_memory():
    before = torch.neuron.memory_allocated()
    source = torch.ones(1 << 18, device="neuron")
    clones = [source._lazy_clone() for _ in range(3)]
    clones[0].add_(1)  # one materialised copy
    assert torch.neuron.memory_allocated() == before + 2 * (1 << 20)
    del source, clones
    torch.neuron.synchronize()
    assert torch.neuron.memory_allocated() == before
