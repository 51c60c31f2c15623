"""TorchNeuron's profiler configuration (``torch_neuronx.profiling``) and distributed module
name (``torch_neuronx.distributed``) on the simulated device: a script written for TorchNeuron's
profiling guide runs unchanged, each mode writes what it collects, and the per-core selection and
event limit hold in torch's own trace."""

import json
import os
import time

import pytest
import torch
from torch._C._profiler import _ExperimentalConfig
from torch.autograd import DeviceType
from torch.profiler import ProfilerActivity, profile, schedule
from torch_neuronx.profiling import NeuronConfig, NeuronProfiler, ProfileMode

ACTIVITIES = [ProfilerActivity.CPU, ProfilerActivity.PrivateUse1]
ALL_MODES = [ProfileMode.DEVICE, ProfileMode.RUNTIME, ProfileMode.CPU_UTIL, ProfileMode.HOST_MEMORY]


def _work_on_two_cores(steps: int = 6) -> None:
    x = torch.randn(128, 128, device="neuron:0")
    y = torch.randn(64, device="neuron:1")
    for _ in range(steps):
        x = (x @ x).tanh()
        y = y * 2 + 1
    torch.neuron.synchronize(0)
    torch.neuron.synchronize(1)


def _device_events(prof) -> list:
    return [e for e in prof.events() if e.device_type == DeviceType.PrivateUse1]


def _load(directory: str, name: str) -> dict:
    with open(os.path.join(directory, name)) as f:
        return json.load(f)


def test_default_config_collects_device_and_runtime_activity():
    config = NeuronConfig()
    assert config.modes == [ProfileMode.DEVICE, ProfileMode.RUNTIME]
    assert config.settings["device"] and config.settings["runtime"]
    assert not config.settings["cpu_util"] and not config.settings["host_memory"]
    assert isinstance(config, _ExperimentalConfig)


@pytest.mark.parametrize(
    "arguments, message",
    [
        ({"modes": ["gpu"]}, "unknown profile mode"),
        ({"capture_enabled_for_nc": "3-1"}, "capture_enabled_for_nc"),
        ({"capture_enabled_for_nc": "zero"}, "capture_enabled_for_nc"),
        ({"max_events_per_nc": -1}, "max_events_per_nc"),
        ({"sample_period_ms": 0}, "sample_period_ms"),
        ({"profile_output_dir": "a;b"}, "may not contain"),
    ],
)
def test_a_config_that_cannot_be_used_is_refused_when_made(arguments, message):
    with pytest.raises(ValueError, match=message):
        NeuronConfig(**arguments)


def test_an_unreadable_config_string_raises_at_the_start_and_the_process_stays_usable():
    with pytest.raises(ValueError, match="unknown key 'colour'"):
        with profile(
            activities=ACTIVITIES,
            experimental_config=_ExperimentalConfig(custom_profiler_config="colour:blue"),
        ):
            pass
    # A later profile works and sees the device.
    with profile(activities=ACTIVITIES) as prof:
        (torch.ones(8, device="neuron") * 3).sum().item()
    assert _device_events(prof)


def test_every_mode_writes_its_file_in_one_directory_per_export(tmp_path):
    config = NeuronConfig(modes=ALL_MODES, profile_output_dir=tmp_path, sample_period_ms=2)
    exporter = NeuronProfiler(config)
    with profile(
        activities=ACTIVITIES, experimental_config=config, on_trace_ready=exporter.export_trace
    ):
        _work_on_two_cores()
    (directory,) = exporter.output_dirs
    assert os.path.dirname(os.path.dirname(directory)) == str(tmp_path)
    assert os.path.basename(os.path.dirname(directory)).endswith(f"_pid_{os.getpid()}")
    assert sorted(os.listdir(directory)) == [
        "cpu_util.json",
        "device_profile.json",
        "host_mem.json",
        "runtime_trace.json",
        "trace.json",
    ]
    runtime = _load(directory, "runtime_trace.json")
    names = {a["name"] for a in runtime["activities"]}
    assert {"aten::mm", "aten::tanh"} <= names
    assert {a["device"] for a in runtime["activities"]} == {0, 1}
    device = _load(directory, "device_profile.json")
    mm = [op for op in device["ops"] if op["name"] == "aten::mm"]
    assert len(mm) == 6 and all(op["projected_trn2_us"] > 0 for op in mm)
    assert device["modes"] == [m.name for m in ALL_MODES]
    trace = _load(directory, "trace.json")
    kernels = [e for e in trace["traceEvents"] if e.get("cat") == "kernel"]
    assert any("projected trn2 us" in e["args"] for e in kernels)


def test_only_the_chosen_modes_are_written(tmp_path):
    config = NeuronConfig(modes=[ProfileMode.RUNTIME], profile_output_dir=tmp_path)
    exporter = NeuronProfiler(config)
    with profile(
        activities=ACTIVITIES, experimental_config=config, on_trace_ready=exporter.export_trace
    ):
        _work_on_two_cores(2)
    assert sorted(os.listdir(exporter.output_dirs[0])) == ["runtime_trace.json", "trace.json"]


def test_no_modes_leaves_the_device_untraced():
    with profile(activities=ACTIVITIES, experimental_config=NeuronConfig(modes=[])) as prof:
        _work_on_two_cores(2)
    assert not _device_events(prof)


def test_cores_and_event_limit_select_what_torch_sees():
    with profile(activities=ACTIVITIES) as everything:
        _work_on_two_cores()
    assert {e.device_index for e in _device_events(everything)} == {0, 1}

    config = NeuronConfig(capture_enabled_for_nc=[1], max_events_per_nc=4)
    with profile(activities=ACTIVITIES, experimental_config=config) as selected:
        _work_on_two_cores()
    events = _device_events(selected)
    assert {e.device_index for e in events} == {1}
    assert len(events) == 4
    # The earliest four of core 1: randn's draw, then the first steps' mul and add.
    assert [e.name for e in sorted(events, key=lambda e: e.time_range.start)] == [
        "aten::normal_",
        "aten::mul",
        "aten::add",
        "aten::mul",
    ]


def test_cpu_samples_see_a_busy_host_and_memory_samples_see_device_memory(tmp_path):
    config = NeuronConfig(
        modes=[ProfileMode.CPU_UTIL, ProfileMode.HOST_MEMORY],
        profile_output_dir=tmp_path,
        sample_period_ms=5,
    )
    exporter = NeuronProfiler(config)
    with profile(
        activities=ACTIVITIES, experimental_config=config, on_trace_ready=exporter.export_trace
    ):
        block = torch.empty(16 << 20, dtype=torch.float32, device="neuron")  # 64 MiB
        end = time.perf_counter() + 0.1
        while time.perf_counter() < end:
            pass
        torch.neuron.synchronize()
        del block
    directory = exporter.output_dirs[0]
    cpu = _load(directory, "cpu_util.json")["samples"]
    memory = _load(directory, "host_mem.json")["samples"]
    assert len(cpu) >= 5 and len(memory) == len(cpu)
    # One Python thread spinning is 100% of a core; room left for a loaded host.
    assert max(s["process_cpu_percent"] for s in cpu) > 25
    assert max(s["device_allocated_bytes"] for s in memory) >= 64 << 20
    assert all(s["resident_bytes"] > 0 for s in memory)
    times = [s["time_ns"] for s in cpu]
    assert times == sorted(times)


def test_each_cycle_of_a_schedule_gets_its_own_directory(tmp_path):
    config = NeuronConfig(profile_output_dir=tmp_path)
    exporter = NeuronProfiler(config)
    with profile(
        activities=ACTIVITIES,
        experimental_config=config,
        schedule=schedule(wait=0, warmup=0, active=1, repeat=2),
        on_trace_ready=exporter.export_trace,
    ) as prof:
        for _ in range(3):
            _work_on_two_cores(1)
            prof.step()
    assert len(exporter.output_dirs) == 2
    assert len(set(exporter.output_dirs)) == 2


def test_distributed_module_names_the_backend_class(tmp_path, monkeypatch):
    import torch.distributed as dist
    import torch_neuronx.distributed as neuron_distributed
    from torch_neuronx.distributed.backend import ProcessGroupNeuron

    monkeypatch.delenv("LOCAL_RANK", raising=False)
    assert neuron_distributed.ProcessGroupNeuron is ProcessGroupNeuron
    dist.init_process_group(
        backend="neuron", store=dist.FileStore(str(tmp_path / "store"), 1), rank=0, world_size=1
    )
    try:
        backend = dist.group.WORLD._get_backend(torch.device("neuron"))
        assert isinstance(backend, ProcessGroupNeuron)
    finally:
        dist.destroy_process_group()


def test_a_profile_without_the_device_activity_writes_no_neuron_files(tmp_path):
    # The previous profile's device activity and samples must not leak into this one's files.
    config = NeuronConfig(modes=ALL_MODES, profile_output_dir=tmp_path, sample_period_ms=2)
    with profile(activities=ACTIVITIES, experimental_config=config):
        _work_on_two_cores(2)
    exporter = NeuronProfiler(config)
    with profile(
        activities=[ProfilerActivity.CPU],
        experimental_config=config,
        on_trace_ready=exporter.export_trace,
    ):
        _work_on_two_cores(2)
    assert os.listdir(exporter.output_dirs[0]) == ["trace.json"]
