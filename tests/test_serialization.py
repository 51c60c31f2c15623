"""torch.save / torch.load of neuron tensors and checkpoints, with and without map_location."""

import io

import pytest
import torch
from torch import nn

neuron0 = torch.device("neuron", 0)


def save_to_buffer(obj) -> io.BytesIO:
    buffer = io.BytesIO()
    torch.save(obj, buffer)
    buffer.seek(0)
    return buffer


@pytest.mark.parametrize(
    "dtype",
    [
        torch.float32,
        torch.bfloat16,
        torch.float16,
        torch.int8,
        torch.int64,
        torch.bool,
        torch.float64,
        torch.complex64,
    ],
    ids=str,
)
def test_neuron_tensor_round_trips_through_a_buffer(dtype):
    host = (torch.randn(5, 3) * 10).to(dtype)
    loaded = torch.load(save_to_buffer(host.to("neuron")))
    assert loaded.device == neuron0
    assert loaded.dtype == dtype
    assert torch.equal(loaded.cpu(), host)


def test_neuron_tensor_round_trips_through_a_file(tmp_path):
    host = torch.randn(4, 4)
    path = tmp_path / "tensor.pt"
    torch.save(host.to("neuron"), path)
    loaded = torch.load(path)
    assert loaded.device == neuron0
    assert torch.equal(loaded.cpu(), host)


def test_state_dict_round_trip_restores_the_model(tmp_path):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(6, 5), nn.ReLU(), nn.Linear(5, 2)).neuron()
    path = tmp_path / "model.pt"
    torch.save(model.state_dict(), path)
    state = torch.load(path, weights_only=True)
    assert all(t.device == neuron0 for t in state.values())
    restored = nn.Sequential(nn.Linear(6, 5), nn.ReLU(), nn.Linear(5, 2)).neuron()
    restored.load_state_dict(state)
    for name, tensor in model.state_dict().items():
        assert torch.equal(restored.state_dict()[name].cpu(), tensor.cpu()), name
    x = torch.randn(3, 6, device="neuron")
    assert torch.equal(restored(x).cpu(), model(x).cpu())


def test_map_location_cpu():
    host = torch.randn(7)
    loaded = torch.load(save_to_buffer(host.to("neuron")), map_location="cpu")
    assert loaded.device.type == "cpu"
    assert torch.equal(loaded, host)


def test_map_location_neuron_for_a_cpu_checkpoint():
    checkpoint = {"weight": torch.randn(3, 2), "step": torch.tensor(5)}
    loaded = torch.load(save_to_buffer(checkpoint), map_location="neuron")
    assert loaded["weight"].device == neuron0
    assert loaded["step"].device == neuron0
    assert torch.equal(loaded["weight"].cpu(), checkpoint["weight"])
    assert loaded["step"].item() == 5


def test_map_location_second_device(second_device):
    host = torch.randn(6)
    for source in (host, host.to("neuron")):
        loaded = torch.load(save_to_buffer(source), map_location="neuron:1")
        assert loaded.device == second_device
        assert torch.equal(loaded.cpu(), host)
    remapped = torch.load(save_to_buffer(host), map_location={"cpu": "neuron:1"})
    assert remapped.device == second_device


def test_tensor_saved_on_the_second_device_loads_there(second_device):
    host = torch.randn(5)
    loaded = torch.load(save_to_buffer(host.to(second_device)))
    assert loaded.device == second_device
    assert torch.equal(loaded.cpu(), host)


def test_weights_only_load_of_neuron_tensors():
    checkpoint = {"a": torch.randn(3, device="neuron"), "b": [torch.ones(2, device="neuron")]}
    loaded = torch.load(save_to_buffer(checkpoint), weights_only=True)
    assert loaded["a"].device == neuron0 and loaded["b"][0].device == neuron0
    assert torch.equal(loaded["a"].cpu(), checkpoint["a"].cpu())
    assert torch.equal(loaded["b"][0].cpu(), torch.ones(2))


def test_views_sharing_storage_stay_shared_after_load():
    base = torch.randn(10).to("neuron")
    checkpoint = {"base": base, "middle": base[2:5], "grid": base.view(2, 5).t()}
    loaded = torch.load(save_to_buffer(checkpoint))
    pointer = loaded["base"].untyped_storage().data_ptr()
    assert loaded["middle"].untyped_storage().data_ptr() == pointer
    assert loaded["grid"].untyped_storage().data_ptr() == pointer
    assert loaded["middle"].storage_offset() == 2
    assert loaded["grid"].stride() == (1, 5)
    # A write through the base is visible through both views.
    loaded["base"][3] = 100.0
    assert loaded["middle"][1].item() == 100.0
    assert loaded["grid"][3, 0].item() == 100.0


def test_non_contiguous_tensor_keeps_its_layout():
    host = torch.randn(3, 4)
    loaded = torch.load(save_to_buffer(host.to("neuron").t()))
    assert loaded.stride() == host.t().stride()
    assert torch.equal(loaded.cpu(), host.t())


def test_backend_metadata_survives_save_and_load_onto_neuron(tmp_path):
    tensor = torch.arange(6.0, device="neuron")
    assert torch._utils.get_tensor_metadata(tensor) == {}
    flags = {"packed_layout": True, "calibrated": False}
    torch._utils.set_tensor_metadata(tensor, flags)
    assert torch._utils.get_tensor_metadata(tensor) == flags
    torch._utils.set_tensor_metadata(tensor, {"calibrated": True})  # one flag changes
    flags["calibrated"] = True
    assert torch._utils.get_tensor_metadata(tensor) == flags
    assert torch._utils.get_tensor_metadata(tensor.detach()) == flags  # shallow copies keep them
    assert torch._utils.get_tensor_metadata(tensor + 1) == {}  # an op's result starts bare

    path = tmp_path / "tagged.pt"
    torch.save({"weight": tensor}, path)
    loaded = torch.load(path)["weight"]
    assert loaded.device == neuron0
    assert torch._utils.get_tensor_metadata(loaded) == flags
    torch.testing.assert_close(loaded.cpu(), tensor.cpu())
    # Loaded onto the CPU, the neuron-only flags are dropped (PyTorch's own bits would stay).
    assert torch._utils.get_tensor_metadata(torch.load(path, map_location="cpu")["weight"]) == {}
