"""What torch.distributed reports about a group on neuron: ``dist.get_backend()`` names the
backend in use, and making the default group puts a launched rank on its own device."""

import pytest
import torch
import torch.distributed as dist


@pytest.fixture
def one_rank_group(tmp_path, monkeypatch, restore_device):
    """Makes a one-rank default group (FileStore, in this process) with the given backend
    string, or none; destroys it afterwards."""
    monkeypatch.delenv("LOCAL_RANK", raising=False)

    def make(backend=None):
        store = dist.FileStore(str(tmp_path / "store"), 1)
        named = {} if backend is None else {"backend": backend}
        dist.init_process_group(store=store, rank=0, world_size=1, **named)

    yield make
    if dist.is_initialized():
        dist.destroy_process_group()


def test_unnamed_init_reports_the_neuron_backend(one_rank_group):
    one_rank_group()
    assert dist.get_backend() == "neuron"
    assert dist.get_backend_config() == "neuron:neuron"
    total = torch.full((3,), 2.0, device="neuron")
    dist.all_reduce(total)  # the group really runs on the backend it names
    assert total.cpu().tolist() == [2.0, 2.0, 2.0]


def test_subgroup_of_an_unnamed_default_group_reports_the_neuron_backend(one_rank_group):
    one_rank_group()
    assert dist.get_backend(dist.new_group([0])) == "neuron"


def test_named_backend_is_reported_as_named(one_rank_group):
    one_rank_group("neuron")
    assert dist.get_backend() == "neuron"


def test_device_backend_pairs_are_reported_as_given(one_rank_group):
    # As torch reports "cpu:gloo,cuda:nccl" for that string on CUDA.
    one_rank_group("cpu:gloo,neuron:neuron")
    assert dist.get_backend() == "cpu:gloo,neuron:neuron"


def test_gloo_alone_is_still_gloo(one_rank_group):
    one_rank_group("gloo")
    assert dist.get_backend() == "gloo"


@pytest.mark.usefixtures("second_device")
def test_default_group_puts_the_local_rank_on_its_device(one_rank_group, monkeypatch):
    torch.neuron.set_device(0)
    monkeypatch.setenv("LOCAL_RANK", "1")
    one_rank_group()
    assert torch.neuron.current_device() == 1
    assert torch.ones(1, device="neuron").device == torch.device("neuron", 1)


@pytest.mark.usefixtures("second_device")
def test_a_device_the_process_chose_is_kept(one_rank_group, monkeypatch):
    torch.neuron.set_device(1)
    monkeypatch.setenv("LOCAL_RANK", "0")
    one_rank_group()
    assert torch.neuron.current_device() == 1


def test_local_rank_beyond_the_devices_wraps_around(one_rank_group, monkeypatch):
    torch.neuron.set_device(0)
    monkeypatch.setenv("LOCAL_RANK", str(torch.neuron.device_count() + 1))
    one_rank_group()
    assert torch.neuron.current_device() == 1 % torch.neuron.device_count()
