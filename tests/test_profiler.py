"""torch.profiler with ProfilerActivity.PrivateUse1: device ops per stream, linked to the host op
that launched them, copies with bytes, memory events, record_function ranges, the Chrome trace,
key_averages' device time, schedule + tensorboard_trace_handler, and the trn2/trn3 projection."""

import json
import os

import pytest
import torch
from torch.autograd import DeviceType
from torch.profiler import ProfilerActivity, profile, record_function

import openneuron.profiler as neuron_profiler
from openneuron.profiler.roofline import LAUNCH_FLOOR_US, project

ACTIVITIES = [ProfilerActivity.CPU, ProfilerActivity.PrivateUse1]


def device_events(prof):
    return [e for e in prof.events() if e.device_type == DeviceType.PrivateUse1]


def test_privateuse1_activity_is_supported():
    assert ProfilerActivity.PrivateUse1 in torch.profiler.supported_activities()


def test_device_ops_are_linked_to_the_host_op_that_launched_them():
    a = torch.randn(256, 256, device="neuron")
    b = torch.randn(256, 256, device="neuron")
    torch.neuron.synchronize()
    with profile(activities=ACTIVITIES) as prof:
        c = torch.mm(a, b)
        d = torch.relu(c)
        torch.neuron.synchronize()
    host = {e.id: e for e in prof.events() if e.device_type == DeviceType.CPU}
    kernels = {e.name: e for e in device_events(prof)}
    assert "aten::mm" in kernels and "aten::relu" in kernels
    for name in ("aten::mm", "aten::relu"):
        kernel = kernels[name]
        assert host[kernel.linked_correlation_id].name == name
        assert kernel.time_range.end > kernel.time_range.start
        launcher = host[kernel.linked_correlation_id]
        assert kernel.time_range.start >= launcher.time_range.start  # queued, then ran
    # key_averages attributes device time to the launching op.
    averages = {a.key: a for a in prof.key_averages()}
    assert averages["aten::mm"].device_time_total > 0
    assert (
        "neuron" in prof.key_averages().table(sort_by="device_time_total", row_limit=5).lower()
        or "privateuse1" in prof.key_averages().table(row_limit=5).lower()
    )
    del d


def test_each_stream_reports_its_own_ops():
    x = torch.randn(64, 64, device="neuron")
    side = torch.neuron.Stream()
    with profile(activities=ACTIVITIES) as prof:
        torch.add(x, 1)
        with torch.neuron.stream(side):
            torch.mul(x, 3)
        torch.neuron.synchronize()
    ops = {op["name"]: op for op in neuron_profiler.device_ops(prof)}
    assert ops["aten::add"]["stream"] == 0
    assert ops["aten::mul"]["stream"] == side.stream_id != 0


def test_copies_have_direction_and_bytes():
    host = torch.randn(1000, 100)
    with profile(activities=ACTIVITIES) as prof:
        on_device = host.to("neuron")
        other = on_device.clone()
        back = other.cpu()
    copies = [op for op in neuron_profiler.device_ops(prof) if op["name"].startswith("Memcpy")]
    kinds = {op["name"].split()[1]: op for op in copies}
    assert set(kinds) >= {"HtoD", "DtoH"}
    assert kinds["HtoD"]["bytes"] == host.numel() * 4
    assert kinds["DtoH"]["bytes"] == host.numel() * 4
    assert torch.equal(back, host)


def test_memory_events_with_profile_memory():
    with profile(activities=ACTIVITIES, profile_memory=True) as prof:
        x = torch.empty(1 << 20, device="neuron")
        del x
    # The allocation is charged to the op that made it; the free, outside any op, stands alone.
    averages = {a.key: a for a in prof.key_averages()}
    assert averages["aten::empty"].device_memory_usage == 1 << 22
    assert averages["[memory]"].device_memory_usage == -(1 << 22)
    # PyTorch's memory visualizer turns a profile's memory events into a timeline.
    from torch.cuda import _memory_viz

    with profile(
        activities=ACTIVITIES, profile_memory=True, record_shapes=True, with_stack=True
    ) as prof:
        x = torch.empty(1 << 20, device="neuron")
        del x
    assert "<html" in _memory_viz.profile_plot(prof).lower()


def test_record_function_ranges_and_chrome_trace(tmp_path):
    x = torch.randn(128, 128, device="neuron")
    with profile(activities=ACTIVITIES, record_shapes=True) as prof:
        with record_function("my_block"):
            y = x @ x
        torch.neuron.synchronize()
    path = str(tmp_path / "trace.json")
    neuron_profiler.export_chrome_trace(prof, path)
    with open(path) as f:
        trace = json.load(f)
    events = trace["traceEvents"]
    assert any(e.get("name") == "my_block" for e in events)
    kernels = [e for e in events if e.get("cat") == "kernel" and e.get("name") == "aten::mm"]
    assert kernels and kernels[0]["dur"] > 0
    assert kernels[0]["args"]["projected trn2 us"] >= LAUNCH_FLOOR_US
    assert kernels[0]["args"]["projected bound"] in ("compute", "memory", "launch")
    # A flow arrow joins the host op and its kernel (Perfetto draws it).
    flows = [e for e in events if e.get("ph") in ("s", "f") and e.get("cat") == "ac2g"]
    assert flows
    del y


def test_schedule_and_tensorboard_trace_handler(tmp_path):
    x = torch.randn(32, 32, device="neuron")
    handler = torch.profiler.tensorboard_trace_handler(str(tmp_path))
    schedule = torch.profiler.schedule(wait=1, warmup=1, active=2, repeat=1)
    with profile(activities=ACTIVITIES, schedule=schedule, on_trace_ready=handler) as prof:
        for _ in range(5):
            torch.sigmoid(x @ x)
            torch.neuron.synchronize()
            prof.step()
    written = [f for f in os.listdir(tmp_path) if f.endswith(".pt.trace.json")]
    assert len(written) == 1
    with open(tmp_path / written[0]) as f:
        names = [e.get("name") for e in json.load(f)["traceEvents"]]
    assert names.count("aten::sigmoid") >= 2 * 2  # two active steps: host op and device op each


def test_cpu_only_profile_traces_no_device_ops():
    x = torch.randn(32, 32, device="neuron")
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        torch.relu(x)
        torch.neuron.synchronize()
    assert device_events(prof) == []


def test_projection_of_a_matmul_follows_the_cost_model():
    m = k = n = 2048
    projection = project("aten::mm", [[m, k], [k, n]], ["float", "float"])
    # 16 x 16 x 4 nc_matmul tiles of 4 x 512 cycles (fp32) at 2.4 GHz, split over the logical
    # core's two physical cores, plus one DMA latency.
    tensor_us = 16 * 16 * 4 * 4 * 512 / 2.4e3
    assert projection.flops == 2 * m * k * n
    assert projection.trn2_us == pytest.approx(tensor_us / 2 + 1.3)
    assert projection.bound == "compute" and projection.engine == "tensor"
    bf16 = project("aten::mm", [[m, k], [k, n]], ["c10::BFloat16", "c10::BFloat16"])
    assert bf16.trn2_us < projection.trn2_us  # fp32 takes four passes through the array
    other = project("aten::_fft_r2c", [[m, k]], ["float"])  # unknown to the model: roofline
    assert other.engine == "" and other.trn2_us >= LAUNCH_FLOOR_US


def test_projection_bounds_of_elementwise_and_tiny_ops():
    big_add = project("aten::add", [[1 << 24], [1 << 24]], ["float", "float"])
    assert big_add.bound == "memory"
    assert big_add.trn3_us < big_add.trn2_us  # trn3 has more HBM bandwidth per core
    tiny = project("aten::add", [[4], [4]], ["float", "float"])
    assert tiny.bound == "launch" and tiny.trn2_us == LAUNCH_FLOOR_US


def test_projection_table_lists_top_ops():
    x = torch.randn(512, 512, device="neuron")
    with profile(activities=ACTIVITIES, record_shapes=True) as prof:
        for _ in range(3):
            x = torch.tanh(x @ x)
        torch.neuron.synchronize()
    table = neuron_profiler.projection_table(prof)
    assert table.splitlines()[2].split()[0] == "aten::mm"  # the matmuls dominate
    rows = neuron_profiler.projection_summary(neuron_profiler.device_ops(prof))
    assert rows[0]["count"] == 3 and rows[0]["bound"] == "compute"


def test_backward_ops_and_nested_ops_are_linked():
    w = torch.randn(64, 64, device="neuron", requires_grad=True)
    x = torch.randn(32, 64, device="neuron")
    with profile(activities=ACTIVITIES, record_shapes=True) as prof:
        (x @ w).tanh().sum().backward()  # backward runs on the autograd engine's thread
        torch.neuron.synchronize()
    ops = neuron_profiler.device_ops(prof)
    assert [op["name"] for op in ops].count("aten::mm") == 2  # forward, and grad of w
    for op in ops:
        assert op["launched_by"] == op["name"], op  # aten::sum's kernel comes from a nested sum
    matmuls = [op for op in ops if op["name"] == "aten::mm"]
    assert all(op["flops"] == 2 * 32 * 64 * 64 for op in matmuls)


def test_legacy_autograd_profiler_times_device_work(capfd):
    """torch.autograd.profiler.profile(use_device="neuron") (PyTorch's legacy profiler, which
    times each op with a pair of device events) reports non-negative times, device time for the
    ops that queue device work, and no profiler errors."""
    import time

    x = torch.randn(192, 192, device="neuron")
    torch.neuron.synchronize()
    started = time.perf_counter()
    with torch.autograd.profiler.profile(use_device="neuron") as prof:
        for _ in range(3):
            (x @ x).relu_()
        torch.neuron.synchronize()
    wall_us = (time.perf_counter() - started) * 1e6
    log = capfd.readouterr().err
    assert "not enabled" not in log and "INTERNAL ASSERT" not in log, log
    events = prof.function_events
    assert events and all(e.cpu_time_total >= 0 and e.device_time_total >= 0 for e in events)
    matmuls = [e for e in events if e.name == "aten::mm"]
    assert len(matmuls) == 3
    assert all(e.self_device_time_total > 0 for e in matmuls)
    # Device time is time the stream spent inside the region: bounded by its wall time.
    assert sum(e.device_time_total for e in matmuls) <= wall_us
    # An op that queues nothing has next to no device time (its two marks pass back to back).
    empty = sum(e.device_time_total for e in events if e.name == "aten::empty")
    assert empty < 0.05 * sum(e.device_time_total for e in matmuls)
    # The parent op's device time includes its child's.
    parents = [e for e in events if e.name == "aten::matmul"]
    assert all(p.device_time_total >= c.device_time_total for p, c in zip(parents, matmuls))
