"""Device memory: caching-allocator statistics, cache control, OOM, and pinned host memory."""

import gc

import pytest
import torch
from torch.utils.data import DataLoader, TensorDataset

MiB = 1 << 20

# The keys torch.cuda.memory_stats() has that tools (and torch.accelerator) read.
CUDA_STYLE_KEYS = {
    f"{stat}.{pool}.{field}"
    for stat in (
        "allocation",
        "segment",
        "active",
        "inactive_split",
        "allocated_bytes",
        "reserved_bytes",
        "active_bytes",
        "inactive_split_bytes",
        "requested_bytes",
    )
    for pool in ("all", "small_pool", "large_pool")
    for field in ("current", "peak", "allocated", "freed")
} | {"num_alloc_retries", "num_ooms", "num_sync_all_streams", "num_device_alloc", "num_device_free"}


def test_memory_stats_have_the_cuda_keys():
    stats = torch.neuron.memory_stats()
    assert CUDA_STYLE_KEYS <= stats.keys()
    assert all(isinstance(value, int) for value in stats.values())
    assert stats["allocated_bytes.all.current"] == torch.neuron.memory_allocated()
    assert stats["reserved_bytes.all.current"] == torch.neuron.memory_reserved()


def test_allocated_grows_with_a_tensor_and_returns_after_del():
    start = torch.neuron.memory_allocated()
    blocks = torch.neuron.memory_stats()["allocation.all.current"]
    x = torch.empty(MiB, dtype=torch.uint8, device="neuron")
    assert torch.neuron.memory_allocated() >= start + x.nbytes
    assert torch.neuron.max_memory_allocated() >= start + x.nbytes
    assert torch.neuron.memory_reserved() >= torch.neuron.memory_allocated()
    assert torch.neuron.memory_stats()["allocation.all.current"] == blocks + 1
    del x
    assert torch.neuron.memory_allocated() == start
    assert torch.neuron.memory_stats()["allocation.all.current"] == blocks


def test_small_and_large_pools_are_accounted_separately():
    before = torch.neuron.memory_stats()
    small = torch.empty(1000, dtype=torch.uint8, device="neuron")
    large = torch.empty(4 * MiB, dtype=torch.uint8, device="neuron")
    after = torch.neuron.memory_stats()
    grew = {
        pool: after[f"allocated_bytes.{pool}.current"] - before[f"allocated_bytes.{pool}.current"]
        for pool in ("small_pool", "large_pool")
    }
    assert grew["small_pool"] >= small.nbytes and grew["small_pool"] < MiB
    assert grew["large_pool"] >= large.nbytes
    requested = after["requested_bytes.all.current"] - before["requested_bytes.all.current"]
    assert requested == small.nbytes + large.nbytes


def test_reset_peak_memory_stats():
    x = torch.empty(8 * MiB, dtype=torch.uint8, device="neuron")
    del x
    assert torch.neuron.max_memory_allocated() > torch.neuron.memory_allocated()
    torch.neuron.reset_peak_memory_stats()
    assert torch.neuron.max_memory_allocated() == torch.neuron.memory_allocated()
    assert torch.neuron.max_memory_reserved() == torch.neuron.memory_reserved()


def test_empty_cache_returns_freed_blocks_to_the_device():
    x = torch.empty(16 * MiB, dtype=torch.uint8, device="neuron")
    reserved_with_x = torch.neuron.memory_reserved()
    del x
    # The freed block stays cached (reserved) until empty_cache().
    assert torch.neuron.memory_reserved() == reserved_with_x
    free_before, total = torch.neuron.mem_get_info()
    torch.neuron.empty_cache()
    assert torch.neuron.memory_reserved() <= reserved_with_x - 16 * MiB
    free_after, total_after = torch.neuron.mem_get_info()
    assert total_after == total
    assert free_after >= free_before + 16 * MiB


def test_mem_get_info_is_capacity_minus_reserved():
    free, total = torch.neuron.mem_get_info()
    assert total == torch.neuron.get_device_properties()["total_memory"]
    assert free == total - torch.neuron.memory_reserved()


def test_torch_accelerator_memory_api_agrees_with_torch_neuron(second_device):
    keep = [torch.empty(MiB, device="neuron:0"), torch.empty(3 * MiB, device=second_device)]
    # Each pair of calls reads the counters twice: a free between them (an earlier test's cyclic
    # garbage collected, or queued work releasing what it held) would change them, so let both
    # happen first and hold collection off.
    gc.collect()
    torch.neuron.synchronize(0)
    torch.neuron.synchronize(1)
    gc.disable()
    try:
        _compare_memory_apis()
    finally:
        gc.enable()
    del keep


def _compare_memory_apis():
    for index in (0, 1):
        neuron_stats = torch.neuron.memory_stats(index)
        accelerator_stats = torch.accelerator.memory_stats(index)
        assert {k: accelerator_stats[k] for k in neuron_stats} == neuron_stats
        assert torch.accelerator.memory_allocated(index) == torch.neuron.memory_allocated(index)
        assert torch.accelerator.max_memory_allocated(index) == torch.neuron.max_memory_allocated(
            index
        )
        assert torch.accelerator.memory_reserved(index) == torch.neuron.memory_reserved(index)
        assert torch.accelerator.get_memory_info(index) == torch.neuron.mem_get_info(index)


def test_allocations_on_one_device_leave_the_other_untouched(second_device):
    zero_before = torch.neuron.memory_stats(0)
    one_before = torch.neuron.memory_allocated(1)
    x = torch.empty(2 * MiB, dtype=torch.uint8, device=second_device)
    assert torch.neuron.memory_allocated(1) >= one_before + x.nbytes
    zero_after = torch.neuron.memory_stats(0)
    assert zero_after["allocated_bytes.all.current"] == zero_before["allocated_bytes.all.current"]
    assert zero_after["allocation.all.allocated"] == zero_before["allocation.all.allocated"]
    del x
    assert torch.neuron.memory_allocated(1) == one_before


OOM_SCRIPT = """
import re
import torch

MiB = 1 << 20
stats = torch.neuron.memory_stats
assert torch.neuron.mem_get_info() == (64 * MiB, 64 * MiB), torch.neuron.mem_get_info()
keep = torch.ones(MiB, dtype=torch.uint8, device="neuron")
try:
    torch.empty(100 * MiB, dtype=torch.uint8, device="neuron")
except torch.OutOfMemoryError as error:
    message = str(error)
else:
    raise SystemExit("no OutOfMemoryError")
print("MESSAGE", message)
# The failed request left the allocator consistent: only `keep` is live and reserved.
after_oom = stats()
print("OOMS", after_oom["num_ooms"])
print("ALLOCATED", after_oom["allocated_bytes.all.current"], keep.nbytes)
print("RESERVED", after_oom["reserved_bytes.all.current"])
print("FREE", torch.neuron.mem_get_info()[0], 64 * MiB - after_oom["reserved_bytes.all.current"])
smaller = torch.full((10 * MiB,), 3, dtype=torch.uint8, device="neuron")
print("SMALLER", int(smaller[-1].item()), int(keep[0].item()))
print("ALLOCATED_AFTER", stats()["allocated_bytes.all.current"], keep.nbytes + smaller.nbytes)
print("OOMS_AFTER", stats()["num_ooms"], stats(1)["num_ooms"])
"""


def test_out_of_memory_is_reported_and_recoverable(run_python):
    done = run_python(OOM_SCRIPT, OPENNEURON_HBM_BYTES="64M")
    assert done.returncode == 0, done.stdout + done.stderr
    lines = dict(line.split(" ", 1) for line in done.stdout.splitlines())
    message = lines["MESSAGE"]
    # Names the requested bytes, what is free, and the capacity.
    assert str(100 * MiB) in message
    assert str(63 * MiB) in message  # free: 64 MiB capacity minus the live 1 MiB block
    assert str(64 * MiB) in message
    assert "free" in message and "capacity" in message
    assert lines["OOMS"] == "1"
    allocated, expected = lines["ALLOCATED"].split()
    assert allocated == expected
    assert lines["RESERVED"] == str(MiB)
    free, expected_free = lines["FREE"].split()
    assert free == expected_free
    assert lines["SMALLER"] == "3 1"
    allocated, expected = lines["ALLOCATED_AFTER"].split()
    assert allocated == expected
    # Still one OOM on neuron:0, none on neuron:1.
    assert lines["OOMS_AFTER"] == "1 0"


# --- pinned host memory ----------------------------------------------------------------------


def test_pinned_host_tensors():
    assert torch.empty(16, pin_memory=True).is_pinned()
    pinned = torch.arange(16.0).pin_memory()
    assert pinned.is_pinned()
    assert torch.equal(pinned, torch.arange(16.0))
    assert not torch.arange(16.0).is_pinned()
    assert not torch.ones(4, device="neuron").is_pinned()


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.int64], ids=str)
def test_non_blocking_copies_from_pinned_memory_round_trip(dtype):
    source = (torch.randn(512, 129) * 100).to(dtype).pin_memory()
    device = source.to("neuron", non_blocking=True)
    doubled = device * 2
    back = torch.empty(source.shape, dtype=dtype).pin_memory()
    back.copy_(doubled, non_blocking=True)
    torch.neuron.synchronize()
    assert torch.equal(device.cpu(), source)
    assert torch.equal(back, source * 2)


def test_non_blocking_copy_to_host_gives_pinned_memory():
    device = torch.randn(64, 64, device="neuron")
    host = device.to("cpu", non_blocking=True)
    torch.neuron.synchronize()
    assert host.is_pinned()
    assert torch.equal(host, device.cpu())


def test_dataloader_pin_memory_feeds_the_device():
    features = torch.randn(96, 7)
    labels = torch.arange(96)
    loader = DataLoader(TensorDataset(features, labels), batch_size=32, pin_memory=True)
    on_device = []
    for batch_features, batch_labels in loader:
        assert batch_features.is_pinned() and batch_labels.is_pinned()
        on_device.append(
            (
                batch_features.to("neuron", non_blocking=True),
                batch_labels.to("neuron", non_blocking=True),
            )
        )
    torch.neuron.synchronize()
    assert torch.equal(torch.cat([f.cpu() for f, _ in on_device]), features)
    assert torch.equal(torch.cat([y.cpu() for _, y in on_device]), labels)
