"""The neuron device: discovery, current device, tensor placement, copies and views."""

import os

import pytest
import torch
from torch import nn

ROUND_TRIP_DTYPES = [
    torch.float32,
    torch.bfloat16,
    torch.float16,
    torch.int8,
    torch.int32,
    torch.int64,
    torch.uint8,
    torch.bool,
    torch.float64,
    torch.complex64,
]


def sample(shape: tuple[int, ...], dtype: torch.dtype, seed: int = 0) -> torch.Tensor:
    """A CPU tensor of distinct-ish values that exercise the dtype's range (incl. negatives)."""
    g = torch.Generator().manual_seed(seed)
    if dtype == torch.bool:
        return torch.rand(shape, generator=g) > 0.5
    if dtype == torch.complex64:
        return torch.randn(shape, generator=g, dtype=torch.complex64) * 10
    if dtype == torch.uint8:
        return torch.randint(0, 256, shape, generator=g, dtype=torch.uint8)
    if dtype.is_floating_point:
        return (torch.randn(shape, generator=g) * 10).to(dtype)
    info = torch.iinfo(dtype)
    low, high = max(info.min, -1000), min(info.max, 1000)
    return torch.randint(low, high, shape, generator=g, dtype=dtype)


# --- discovery and the current device -------------------------------------------------------


def test_neuron_is_available_with_the_configured_device_count():
    assert torch.neuron.is_available()
    # Two devices unless the environment running the suite asks for another count.
    assert torch.neuron.device_count() == int(os.environ.get("OPENNEURON_DEVICES", "2"))


def test_openneuron_devices_sets_the_device_count(run_python):
    done = run_python(
        """
        import torch
        x = torch.ones(2, device="neuron:2")
        print(torch.neuron.device_count(), torch.accelerator.device_count(), x.device)
        """,
        OPENNEURON_DEVICES="3",
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["3", "3", "neuron:2"]


def test_accelerator_reports_neuron():
    assert torch.accelerator.is_available()
    assert torch.accelerator.current_accelerator().type == "neuron"
    assert torch.accelerator.device_count() == torch.neuron.device_count()


def test_set_device_changes_current_device(restore_device, second_device):
    assert torch.neuron.current_device() == 0
    torch.neuron.set_device(1)
    assert torch.neuron.current_device() == 1
    # Factory calls without an index follow the current device.
    assert torch.empty(2, device="neuron").device == second_device
    torch.neuron.set_device("neuron:0")
    assert torch.neuron.current_device() == 0
    torch.neuron.set_device(torch.device("neuron", 1))
    assert torch.neuron.current_device() == 1


def test_accelerator_device_index_api_agrees_with_torch_neuron(restore_device, second_device):
    torch.accelerator.set_device_index(1)
    assert torch.accelerator.current_device_index() == 1
    assert torch.neuron.current_device() == 1
    torch.neuron.set_device(0)
    assert torch.accelerator.current_device_index() == 0
    with torch.accelerator.device_index(1):
        assert torch.neuron.current_device() == 1
    assert torch.accelerator.current_device_index() == 0


def test_an_index_past_the_last_device_is_refused_in_the_reference_words(restore_device):
    # PrivateUse1 tests written for the reference backend match its sentence; ours opens with it
    # and then names the index and the devices there are.
    count = torch.accelerator.device_count()
    with pytest.raises(RuntimeError, match=rf"The device index is out of range: .*index {count}"):
        torch.accelerator.set_device_index(count)
    assert torch.accelerator.current_device_index() == 0


def test_device_context_manager_restores_previous_device(restore_device, second_device):
    with torch.neuron.device(1):
        assert torch.neuron.current_device() == 1
        assert torch.ones(1, device="neuron").device == second_device
        with torch.neuron.device("neuron:0"):
            assert torch.neuron.current_device() == 0
        assert torch.neuron.current_device() == 1
    assert torch.neuron.current_device() == 0


def test_device_context_manager_restores_after_an_exception(restore_device, second_device):
    with pytest.raises(ValueError, match="inside"):
        with torch.neuron.device(1):
            raise ValueError("inside")
    assert torch.neuron.current_device() == 0


def test_device_of_makes_the_tensors_device_current(restore_device, second_device):
    with torch.neuron.device_of(torch.ones(1, device=second_device)):
        assert torch.neuron.current_device() == 1
    with torch.neuron.device_of(torch.ones(1)):  # a CPU tensor changes nothing
        assert torch.neuron.current_device() == 0
    assert torch.neuron.current_device() == 0


def test_device_name_and_properties():
    name = torch.neuron.get_device_name()
    assert "NeuronCore" in name
    props = torch.neuron.get_device_properties(0)
    assert props["name"] == name
    assert props["profile"] in name
    # The capacity the allocator enforces is the one the properties advertise.
    assert props["total_memory"] == torch.neuron.mem_get_info(0)[1] > 0
    assert props["total_memory"] <= props["profile_hbm_bytes"]


QUANTIZED_DTYPES = {torch.qint8, torch.quint8, torch.qint32, torch.quint4x2, torch.quint2x4}


def test_accelerator_device_capability_lists_the_dtypes_a_neuron_tensor_holds():
    supported = torch.accelerator.get_device_capability("neuron:0")["supported_dtypes"]
    assert torch.accelerator.get_device_capability(torch.device("neuron", 1)) is not None
    # Each listed dtype can be made on the device, converted there and copied back; no other.
    every_dtype = {v for v in vars(torch).values() if isinstance(v, torch.dtype)}
    for dtype in sorted(every_dtype, key=str):
        try:
            if dtype in QUANTIZED_DTYPES:  # made by quantizing, widened by dequantizing
                made = torch.quantize_per_tensor(torch.ones(3, device="neuron"), 0.5, 1, dtype)
                wide = made.dequantize()
            else:
                made = torch.ones(3, dtype=dtype, device="neuron")
                wide = made.to(torch.complex64 if dtype.is_complex else torch.float32)
            works = made.cpu().dtype == dtype and bool(wide.cpu().eq(1).all())
        except (RuntimeError, NotImplementedError, TypeError):
            works = False
        assert (dtype in supported) == works, dtype
    assert {torch.float32, torch.bfloat16, torch.float8_e4m3fn, torch.complex64} <= supported


def test_get_device_name_rejects_a_missing_device():
    with pytest.raises(RuntimeError, match="neuron:0, neuron:1"):
        torch.neuron.get_device_name(7)


def test_amp_supported_dtypes_are_the_16_bit_floats():
    assert set(torch.neuron.get_amp_supported_dtype()) == {torch.bfloat16, torch.float16}


# --- placing tensors and modules -------------------------------------------------------------


def test_tensors_are_created_on_the_requested_device(second_device):
    x = torch.ones(3, device="neuron:1")
    assert x.device == second_device
    assert torch.empty(2, 2, device=second_device).device == second_device
    torch.testing.assert_close(x.cpu(), torch.ones(3), rtol=0, atol=0)


def test_tensor_neuron_method_and_is_neuron(second_device):
    cpu = torch.arange(6.0).reshape(2, 3)
    on_device = cpu.neuron()
    assert on_device.is_neuron and on_device.device == torch.device("neuron", 0)
    assert not cpu.is_neuron
    assert cpu.neuron(1).device == second_device
    torch.testing.assert_close(on_device.cpu(), cpu, rtol=0, atol=0)


def test_to_neuron_follows_the_current_device(restore_device, second_device):
    assert torch.ones(2).to("neuron").device == torch.device("neuron", 0)
    with torch.neuron.device(1):
        assert torch.ones(2).to("neuron").device == second_device
        assert torch.ones(2).neuron().device == second_device


def test_module_neuron_moves_parameters_and_buffers(second_device):
    model = nn.Sequential(nn.Linear(4, 3), nn.BatchNorm1d(3))
    reference = [t.clone() for t in model.state_dict().values()]
    model.neuron()
    for tensor in model.state_dict().values():
        assert tensor.device == torch.device("neuron", 0)
    for moved, original in zip(model.state_dict().values(), reference, strict=True):
        torch.testing.assert_close(moved.cpu(), original, rtol=0, atol=0)
    model.neuron(1)
    assert all(p.device == second_device for p in model.parameters())


# --- host <-> device copies --------------------------------------------------------------------


@pytest.mark.parametrize("dtype", ROUND_TRIP_DTYPES, ids=str)
def test_round_trip_contiguous(dtype):
    host = sample((5, 7), dtype)
    device = host.to("neuron")
    assert device.dtype == dtype and device.shape == host.shape
    assert torch.equal(device.cpu(), host)


@pytest.mark.parametrize("dtype", ROUND_TRIP_DTYPES, ids=str)
def test_round_trip_non_contiguous_sources(dtype):
    host = sample((6, 8), dtype)
    for source in (host.t(), host[1:5, ::3], host[:, 2]):
        assert not source.is_contiguous()
        assert torch.equal(source.to("neuron").cpu(), source)
    # A non-contiguous device tensor copied back to the host.
    device = host.to("neuron")
    assert torch.equal(device.t().cpu(), host.t())
    assert torch.equal(device[::2, 1::3].cpu(), host[::2, 1::3])


@pytest.mark.parametrize("dtype", ROUND_TRIP_DTYPES, ids=str)
def test_round_trip_non_contiguous_destinations(dtype):
    host = sample((4, 6), dtype)
    # Host -> strided device destination.
    destination = torch.empty(6, 4, dtype=dtype, device="neuron").t()
    destination.copy_(host)
    assert torch.equal(destination.cpu(), host)
    # Device -> strided host destination.
    back = torch.empty(6, 4, dtype=dtype).t()
    back.copy_(host.to("neuron"))
    assert torch.equal(back, host)
    # Into every other column of a wider device tensor; the gaps keep their values.
    wide = sample((4, 12), dtype, seed=1)
    wide_device = wide.to("neuron")
    wide_device[:, ::2].copy_(host)
    wide[:, ::2] = host
    assert torch.equal(wide_device.cpu(), wide)


@pytest.mark.parametrize("dtype", ROUND_TRIP_DTYPES, ids=str)
def test_copy_between_devices(dtype, second_device):
    host = sample((5, 6), dtype)
    on_zero = host.to("neuron:0")
    on_one = on_zero.to(second_device)
    assert on_one.device == second_device
    assert torch.equal(on_one.cpu(), host)
    # Strided source on one device into a strided destination on the other.
    destination = torch.empty(5, 6, dtype=dtype, device="neuron:0").t()
    destination.copy_(on_one.t())
    assert torch.equal(destination.cpu(), host.t())


def test_copy_between_devices_is_ordered_after_queued_work(second_device):
    # The copy must wait for the matmul queued on neuron:1 before reading its result.
    a = torch.randn(256, 256)
    on_one = a.to(second_device)
    result = ((on_one @ on_one) * 2).to("neuron:0")
    assert result.device == torch.device("neuron", 0)
    torch.testing.assert_close(result.cpu(), (a @ a) * 2, rtol=1e-4, atol=1e-3)


@pytest.mark.parametrize(
    "dtype", [torch.bfloat16, torch.float16, torch.int32, torch.float64, torch.uint8], ids=str
)
def test_dtype_conversion_during_copy(dtype):
    host = torch.randn(4, 5) * 50
    expected = host.abs().to(dtype) if dtype == torch.uint8 else host.to(dtype)
    source = host.abs() if dtype == torch.uint8 else host
    converted = source.to("neuron", dtype)
    assert converted.dtype == dtype and converted.is_neuron
    assert torch.equal(converted.cpu(), expected)
    # The same conversion done on the device.
    assert torch.equal(source.to("neuron").to(dtype).cpu(), expected)


def test_zero_dim_tensors():
    host = torch.tensor(3.5)
    device = host.to("neuron")
    assert device.dim() == 0 and device.shape == torch.Size([])
    assert device.item() == 3.5
    assert torch.equal(device.cpu(), host)
    assert (device * 2).item() == 7.0
    assert torch.tensor(7, device="neuron").item() == 7


def test_zero_size_tensors():
    empty = torch.empty(0, 3).to("neuron")
    assert empty.shape == (0, 3) and empty.is_neuron
    assert empty.cpu().shape == (0, 3)
    summed = torch.ones(2, 0, 4, device="neuron") + 1
    assert summed.shape == (2, 0, 4)
    assert torch.ones(2, 0, device="neuron").t().cpu().shape == (0, 2)


# --- views -----------------------------------------------------------------------------------


def shares_storage(a: torch.Tensor, b: torch.Tensor) -> bool:
    return a.untyped_storage().data_ptr() == b.untyped_storage().data_ptr()


VIEWS = {
    "view": lambda t: t.view(4, 6),
    "reshape_of_contiguous": lambda t: t.reshape(2, 12),
    "transpose": lambda t: t.view(4, 6).transpose(0, 1),
    "slice": lambda t: t.view(4, 6)[1:3, ::2],
    "select": lambda t: t.view(4, 6)[2],
    "as_strided": lambda t: t.as_strided((3, 3), (1, 2), 2),
    "expand": lambda t: t[:3].expand(4, 3),
    "unsqueeze": lambda t: t.unsqueeze(0),
}


@pytest.mark.parametrize("make_view", VIEWS.values(), ids=VIEWS.keys())
def test_views_match_cpu_and_share_storage(make_view):
    host = torch.randn(24)
    device = host.to("neuron")
    view = make_view(device)
    assert shares_storage(view, device)
    expected = make_view(host)
    assert view.shape == expected.shape and view.stride() == expected.stride()
    assert torch.equal(view.cpu(), expected)
    # Reading a view through an op (not only a copy) sees the same elements.
    torch.testing.assert_close((view + 1).cpu(), expected + 1, rtol=0, atol=0)


def test_reshape_of_non_contiguous_copies():
    host = torch.randn(4, 6)
    device = host.to("neuron")
    flat = device.t().reshape(24)
    assert torch.equal(flat.cpu(), host.t().reshape(24))


def test_in_place_ops_on_views_reflect_in_the_base():
    host = torch.randn(24)
    base = host.to("neuron")
    grid, host_grid = base.view(4, 6), host.view(4, 6)
    assert shares_storage(grid, base)
    grid[1].fill_(-1.0)
    host_grid[1].fill_(-1.0)
    grid.t()[0].mul_(2.0)
    host_grid.t()[0].mul_(2.0)
    grid[2:, 1::2].add_(10.0)
    host_grid[2:, 1::2].add_(10.0)
    grid[0, :3] = torch.tensor([7.0, 8.0, 9.0], device="neuron")
    host_grid[0, :3] = torch.tensor([7.0, 8.0, 9.0])
    base.as_strided((2, 2), (6, 1), 3).copy_(torch.full((2, 2), 5.0))
    host.as_strided((2, 2), (6, 1), 3).copy_(torch.full((2, 2), 5.0))
    assert torch.equal(base.cpu(), host)


def test_copies_resolve_conjugate_and_negative_views():
    x = torch.randn(5, dtype=torch.complex64)
    on_device = x.to("neuron")
    torch.testing.assert_close(on_device.conj().resolve_conj().cpu(), x.conj())
    torch.testing.assert_close(on_device.conj().cpu().resolve_conj(), x.conj())
    target = torch.empty(5, dtype=torch.complex64, device="neuron")
    target.copy_(x.conj())
    torch.testing.assert_close(target.cpu(), x.conj())
    torch.testing.assert_close(torch._neg_view(on_device).cpu().resolve_neg(), -x)
