"""torch.neuron.memory: memory_summary, _record_memory_history, _snapshot and _dump_snapshot in
the format torch.cuda._memory_viz reads, with the Python stack of each allocation."""

import pickle

import pytest
import torch
from torch.cuda import _memory_viz


@pytest.fixture
def history():
    torch.neuron.memory._record_memory_history(max_entries=1000)
    yield
    torch.neuron.memory._record_memory_history(enabled=None)


def allocate_here():
    return torch.empty(3 << 18, device="neuron")  # 3 MiB: its own block in the large pool


def test_memory_summary_reports_allocator_statistics():
    x = torch.empty(1 << 20, device="neuron")
    text = torch.neuron.memory_summary()
    assert "Allocated memory" in text and "Device reserved memory" in text
    assert "from large pool" in text
    assert len(torch.neuron.memory_summary(abbreviated=True)) < len(text)
    assert torch.neuron.memory.memory_summary is torch.neuron.memory_summary
    del x


def test_snapshot_has_blocks_and_traces_with_stacks(history):
    x = allocate_here()
    snapshot = torch.neuron.memory._snapshot()
    address = x.data_ptr()
    blocks = [b for s in snapshot["segments"] for b in s["blocks"] if b["address"] == address]
    assert len(blocks) == 1 and blocks[0]["state"] == "active_allocated"
    assert blocks[0]["requested_size"] == x.numel() * 4
    assert any(
        f["name"] == "allocate_here" and f["filename"].endswith("test_memory_history.py")
        for f in blocks[0]["frames"]
    )
    trace = snapshot["device_traces"][x.device.index]
    allocs = [e for e in trace if e["action"] == "alloc" and e["addr"] == address]
    assert allocs and allocs[-1]["size"] == x.numel() * 4
    del x
    trace = torch.neuron.memory._snapshot()["device_traces"][0]
    assert [e["action"] for e in trace if e["addr"] == address][-2:] == [
        "free_requested",
        "free_completed",
    ]


def test_memory_viz_renders_the_snapshot(history, tmp_path):
    kept = [allocate_here() for _ in range(3)]
    del kept[1]
    snapshot = torch.neuron.memory._snapshot()

    def lines(flamegraph_lines):  # the flame graph's input, without fetching flamegraph.pl
        return flamegraph_lines

    assert "allocate_here" in _memory_viz.segments(snapshot, format_flamegraph=lines)
    assert "allocate_here" in _memory_viz.memory(snapshot, format_flamegraph=lines)
    assert "free completed" in _memory_viz.trace(snapshot)
    assert "segment" in _memory_viz.segsum(snapshot)
    for html in (_memory_viz.trace_plot(snapshot), _memory_viz.segment_plot(snapshot)):
        assert "<html" in html.lower()
    path = tmp_path / "snapshot.pickle"
    torch.neuron.memory._dump_snapshot(str(path))
    with open(path, "rb") as f:
        assert pickle.load(f)["segments"]
    del kept


def test_history_off_records_nothing():
    torch.neuron.memory._record_memory_history(enabled=None)
    x = allocate_here()
    snapshot = torch.neuron.memory._snapshot()
    assert all(not trace for trace in snapshot["device_traces"])
    blocks = [b for s in snapshot["segments"] for b in s["blocks"] if b["address"] == x.data_ptr()]
    assert blocks and blocks[0]["frames"] == []
    del x


def test_memory_stats_keys_match_cuda():
    expected = {
        "allocated_bytes.all.current",
        "reserved_bytes.large_pool.peak",
        "active.small_pool.allocated",
        "requested_bytes.all.freed",
        "num_ooms",
        "num_alloc_retries",
        "inactive_split_bytes.all.current",
    }
    assert expected <= set(torch.neuron.memory_stats())
