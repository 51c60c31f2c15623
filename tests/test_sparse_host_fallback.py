"""Sparse COO tensors on neuron: their indices and values live on the device, and every sparse
op runs on the host fallback (counted, refused in strict mode), with the CPU's results: plain
ops, in-place ops that keep the caller's tensor, and training an embedding with sparse
gradients under SGD and SparseAdam."""

import pytest
import torch

import openneuron

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")


def _sample(device):
    indices = torch.tensor([[0, 1, 1, 0], [2, 0, 2, 2]])
    values = torch.tensor([3.0, 4.0, 5.0, -1.0])
    return torch.sparse_coo_tensor(indices, values, (2, 3)).to(device)


def _same(on_device, on_cpu):
    assert on_device.device.type == "neuron"
    assert on_device.layout == on_cpu.layout
    if on_cpu.is_sparse:
        assert on_device.is_coalesced() == on_cpu.is_coalesced()
        assert torch.equal(on_device._indices().cpu(), on_cpu._indices())
        assert torch.equal(on_device._values().cpu(), on_cpu._values())
    else:
        assert torch.equal(on_device.cpu(), on_cpu)


OPS = {
    "to_dense": lambda s: s.to_dense(),
    "coalesce": lambda s: s.coalesce(),
    "clone": lambda s: s.clone(),
    "add": lambda s: s + s.coalesce(),
    "mul_scalar": lambda s: s * 2.5,
    "neg": lambda s: -s,
    "sum": lambda s: torch.sparse.sum(s, dim=1),
    "dense_plus_sparse": lambda s: torch.ones(2, 3, device=s.device) + s,
    "sparse_mm": lambda s: torch.sparse.mm(s, torch.arange(6.0, device=s.device).view(3, 2)),
    "t": lambda s: s.coalesce().t(),
}


@pytest.mark.parametrize("name", sorted(OPS))
def test_sparse_ops_run_on_the_host_with_the_cpus_results(name):
    openneuron.clear_op_tracking()
    _same(OPS[name](_sample("neuron")), OPS[name](_sample("cpu")))


@pytest.mark.parametrize(
    "update",
    [
        lambda s, o: s.add_(o),
        lambda s, o: s.mul_(3),
        lambda s, o: s.zero_(),
        lambda s, o: s.copy_(o),
    ],
    ids=["add_", "mul_", "zero_", "copy_"],
)
def test_in_place_sparse_ops_update_the_callers_tensor(update):
    target = torch.sparse_coo_tensor(torch.tensor([[1], [1]]), torch.tensor([7.0]), (2, 3))
    on_device = target.to("neuron")
    returned = update(on_device, _sample("neuron").coalesce())
    assert returned is on_device
    expected = update(target.clone(), _sample("cpu").coalesce())
    _same(on_device, expected)


def test_sparse_ops_are_counted_and_refused_in_strict_mode():
    openneuron.clear_op_tracking()
    _sample("neuron").to_dense()
    assert "aten::_to_dense" in openneuron.get_fallback_ops()
    was_strict = openneuron._C._is_strict()
    openneuron._C._set_strict(True)
    try:
        with pytest.raises(NotImplementedError, match="sparse tensors.*OPENNEURON_STRICT"):
            _sample("neuron").to_dense()
    finally:
        openneuron._C._set_strict(was_strict)


@pytest.mark.parametrize("optimizer", ["SGD", "SparseAdam"])
def test_an_embedding_with_sparse_gradients_trains_as_on_the_cpu(optimizer):
    results = {}
    for device in ("cpu", "neuron"):
        torch.manual_seed(0)
        embedding = torch.nn.Embedding(20, 4, sparse=True).to(device)
        optim = getattr(torch.optim, optimizer)(embedding.parameters(), lr=0.1)
        for step in range(3):
            ids = torch.tensor([[1, 5, 1], [7, 5, step]]).to(device)
            optim.zero_grad()
            loss = embedding(ids).pow(2).sum()
            loss.backward()
            assert embedding.weight.grad.is_sparse
            optim.step()
        results[device] = embedding.weight.detach().cpu()
    torch.testing.assert_close(results["neuron"], results["cpu"], rtol=1e-6, atol=1e-6)


def test_a_cpu_device_argument_keeps_the_result_on_the_cpu():
    result = torch.empty_like(_sample("neuron"), device="cpu")
    assert result.device.type == "cpu" and result.is_sparse
    assert torch.zeros_like(_sample("neuron")).device.type == "neuron"


def test_a_cpu_tensor_does_not_mix_with_a_neuron_sparse_tensor():
    with pytest.raises(RuntimeError, match="same device"):
        _sample("neuron") + torch.ones(2, 3)
