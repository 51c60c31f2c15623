"""Dynamo's device registry knows neuron: get_interface_for_device("neuron") answers with the
neuron runtime (devices, streams, events, properties), which Dynamo, Inductor and the
torch.compile utilities use to reach a device."""

import pytest
import torch
import torch._dynamo
from torch._dynamo.device_interface import (
    DeviceGuard,
    get_interface_for_device,
    get_registered_device_interfaces,
)


@pytest.fixture
def interface():
    return get_interface_for_device("neuron")


def test_neuron_and_each_indexed_device_have_the_interface(interface):
    assert interface is get_interface_for_device(torch.device("neuron"))
    for index in range(torch.neuron.device_count()):
        assert get_interface_for_device(f"neuron:{index}") is interface
    assert ("neuron", interface) in list(get_registered_device_interfaces())
    # CUDA's and the CPU's entries are still there next to ours.
    assert get_interface_for_device("cpu") is not interface


def test_device_queries_answer_from_the_neuron_runtime(interface):
    assert interface.is_available() and interface.device_count() == torch.neuron.device_count()
    assert interface.current_device() == torch.neuron.current_device()
    props = interface.get_device_properties(0)
    assert props.name == torch.neuron.get_device_name(0)
    assert props.total_memory == torch.neuron.get_device_properties(0)["total_memory"]
    assert interface.Worker.get_device_properties("neuron:0") == props
    assert interface.get_compute_capability() == "v3"  # the default profile's NeuronCore
    assert interface.is_bf16_supported()
    assert interface.is_dtype_supported(torch.float8_e4m3fn)
    assert interface.is_dtype_supported(torch.qint8)  # quantized tensors live on the device
    assert not interface.is_dtype_supported(torch.bits8)
    x = torch.ones(1024, device="neuron")
    assert interface.memory_allocated() == torch.neuron.memory_allocated() >= x.nbytes


def test_device_guard_switches_and_restores_the_device(interface, restore_device, second_device):
    with DeviceGuard(interface, 1):
        assert torch.neuron.current_device() == 1
        assert torch.ones(1, device="neuron").device == second_device
    assert torch.neuron.current_device() == 0


def test_streams_and_events_are_the_devices(interface):
    side = interface.Stream()
    assert isinstance(side, torch.Stream) and side.device.type == "neuron"
    with interface.stream(side):
        assert interface.current_stream().stream_id == side.stream_id
        assert interface.get_raw_stream(interface.current_device()) == side.stream_id
    assert interface.current_stream().stream_id != side.stream_id
    start, end = interface.Event(enable_timing=True), interface.Event(enable_timing=True)
    start.record()
    torch.ones(256, 256, device="neuron").sum()
    end.record()
    interface.synchronize()
    assert start.elapsed_time(end) >= 0


def test_compiling_with_the_neuron_backend_still_works():
    torch._dynamo.reset()
    x = torch.randn(8, 8, device="neuron")
    compiled = torch.compile(lambda a: (a @ a).relu() + 1, backend="neuron")
    torch.testing.assert_close(compiled(x).cpu(), ((x @ x).relu() + 1).cpu())


def test_importing_torch_does_not_import_dynamo_and_the_interface_still_registers(run_python):
    result = run_python(
        """
        import sys
        import torch
        assert "torch._dynamo" not in sys.modules, "import torch loaded Dynamo"
        from torch._dynamo.device_interface import get_interface_for_device
        print(get_interface_for_device("neuron").__name__)
        """
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "NeuronInterface"
