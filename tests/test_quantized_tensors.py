"""Quantized tensors on neuron: quantize_per_tensor / quantize_per_channel, int_repr, dequantize,
the quantizer's parameters, copies to and from the host, printing, torch.save / load and
clone, each against the same calls on the CPU."""

import io

import pytest
import torch

neuron0 = torch.device("neuron", 0)

# PyTorch deprecates its quantized dtypes (they still work); the warning is not ours.
pytestmark = pytest.mark.filterwarnings("ignore:.*quantized tensor creation functions")

QUANTIZED_DTYPES = [torch.qint8, torch.quint8, torch.qint32]


def sample(*shape, seed=0, spread=4.0):
    generator = torch.Generator().manual_seed(seed)
    return torch.randn(*shape, generator=generator) * spread


def assert_same_quantized(on_neuron, on_cpu):
    """Same dtype, scheme, parameters and stored integers; the tensor lives on neuron."""
    assert on_neuron.device == neuron0 and on_neuron.is_quantized
    assert on_neuron.dtype == on_cpu.dtype
    assert on_neuron.qscheme() == on_cpu.qscheme()
    if on_cpu.qscheme() == torch.per_tensor_affine:
        assert on_neuron.q_scale() == on_cpu.q_scale()
        assert on_neuron.q_zero_point() == on_cpu.q_zero_point()
    else:
        torch.testing.assert_close(
            on_neuron.q_per_channel_scales().cpu(), on_cpu.q_per_channel_scales()
        )
        assert torch.equal(
            on_neuron.q_per_channel_zero_points().cpu(), on_cpu.q_per_channel_zero_points()
        )
        assert on_neuron.q_per_channel_axis() == on_cpu.q_per_channel_axis()
    representation = on_neuron.int_repr()
    assert representation.device == neuron0 and not representation.is_quantized
    assert torch.equal(representation.cpu(), on_cpu.int_repr())
    dequantized = on_neuron.dequantize()
    assert dequantized.device == neuron0 and dequantized.dtype == torch.float32
    # Per-channel scales are float64 and the CPU rounds its float64 product once; neuron
    # multiplies in float32 (no float64 on a NeuronCore): at most 1 ulp apart.
    per_tensor = on_cpu.qscheme() == torch.per_tensor_affine
    torch.testing.assert_close(
        dequantized.cpu(), on_cpu.dequantize(), rtol=0 if per_tensor else 2**-23, atol=0
    )


@pytest.mark.parametrize("dtype", QUANTIZED_DTYPES)
@pytest.mark.parametrize("scale,zero_point", [(0.05, 3), (0.37, 0), (1e-3, -2)])
def test_quantize_per_tensor_matches_the_cpu(dtype, scale, zero_point):
    if dtype == torch.quint8:
        zero_point = abs(zero_point) + 120
    x = sample(4, 33, 5)
    if dtype != torch.qint32:  # qint32's CPU dequantize overflows int32 at saturation
        x[0, 0, :3] = torch.tensor([1e9, -1e9, 0.0])  # saturation at both ends
    expected = torch.quantize_per_tensor(x, scale, zero_point, dtype)
    actual = torch.quantize_per_tensor(x.to(neuron0), scale, zero_point, dtype)
    assert_same_quantized(actual, expected)


def test_quantize_per_tensor_rounds_ties_to_even_as_the_cpu():
    x = torch.arange(-40, 40, dtype=torch.float32) * 0.25  # many exact .5 multiples of 0.5
    expected = torch.quantize_per_tensor(x, 0.5, 0, torch.qint8)
    actual = torch.quantize_per_tensor(x.to(neuron0), 0.5, 0, torch.qint8)
    assert_same_quantized(actual, expected)


def test_quantize_per_tensor_with_tensor_parameters():
    x = sample(3, 7)
    scale, zero_point = torch.tensor(0.1), torch.tensor(4)
    expected = torch.quantize_per_tensor(x, scale, zero_point, torch.quint8)
    actual = torch.quantize_per_tensor(
        x.to(neuron0), scale.to(neuron0), zero_point.to(neuron0), torch.quint8
    )
    assert_same_quantized(actual, expected)


@pytest.mark.parametrize("dtype", QUANTIZED_DTYPES)
@pytest.mark.parametrize("axis", [0, 1, 2])
def test_quantize_per_channel_matches_the_cpu(dtype, axis):
    x = sample(3, 4, 6, seed=axis)
    channels = x.shape[axis]
    scales = torch.linspace(0.01, 0.2, channels, dtype=torch.float64)
    zero_points = torch.arange(channels, dtype=torch.long) + (100 if dtype == torch.quint8 else -1)
    expected = torch.quantize_per_channel(x, scales, zero_points, axis, dtype)
    actual = torch.quantize_per_channel(
        x.to(neuron0), scales.to(neuron0), zero_points.to(neuron0), axis, dtype
    )
    assert_same_quantized(actual, expected)


def test_quantize_per_channel_with_float_zero_points():
    x = sample(5, 8)
    scales = torch.tensor([0.1, 0.2, 0.05, 0.3, 0.0], dtype=torch.float32)
    zero_points = torch.tensor([1.5, -2.0, 0.25, 3.0, 7.0], dtype=torch.float32)
    expected = torch.quantize_per_channel(x, scales, zero_points, 0, torch.quint8)
    actual = torch.quantize_per_channel(
        x.to(neuron0), scales.to(neuron0), zero_points.to(neuron0), 0, torch.quint8
    )
    assert actual.qscheme() == torch.per_channel_affine_float_qparams
    assert_same_quantized(actual, expected)


@pytest.mark.parametrize("dtype", [torch.quint4x2, torch.quint2x4])
def test_bit_packed_dtypes_match_the_cpu(dtype):
    x = sample(3, 5, spread=1.0)  # an odd count: the last byte is half used
    expected = torch.quantize_per_tensor(x, 0.25, 2, dtype)
    actual = torch.quantize_per_tensor(x.to(neuron0), 0.25, 2, dtype)
    assert_same_quantized(actual, expected)
    assert torch.equal(actual.cpu().int_repr(), expected.int_repr())


@pytest.mark.parametrize("scheme", ["per_tensor", "per_channel"])
def test_host_round_trip_keeps_integers_and_parameters(scheme):
    x = sample(4, 6)
    if scheme == "per_tensor":
        on_cpu = torch.quantize_per_tensor(x, 0.07, 5, torch.qint8)
    else:
        on_cpu = torch.quantize_per_channel(
            x,
            torch.rand(6, dtype=torch.float64) + 0.05,
            torch.zeros(6, dtype=torch.long),
            1,
            torch.qint8,
        )
    on_neuron = on_cpu.to("neuron")
    assert_same_quantized(on_neuron, on_cpu)
    back = on_neuron.cpu()
    assert back.device.type == "cpu" and back.is_quantized
    assert torch.equal(back, on_cpu)


def test_views_clone_copy_and_equal():
    on_cpu = torch.quantize_per_tensor(sample(6, 8), 0.1, 2, torch.quint8)
    on_neuron = on_cpu.to(neuron0)
    for view in (
        lambda t: t[1:4, ::2],
        lambda t: t.view(8, 6),
        lambda t: t.reshape(48),
        lambda t: t.t(),
    ):
        assert_same_quantized(view(on_neuron), view(on_cpu))
    cloned = on_neuron.clone()
    assert cloned.data_ptr() != on_neuron.data_ptr()
    assert_same_quantized(cloned, on_cpu)
    assert torch.equal(cloned, on_neuron)
    target = torch._empty_affine_quantized(
        [6, 8], scale=1.0, zero_point=0, dtype=torch.quint8, device=neuron0
    )
    target.copy_(on_neuron)
    assert_same_quantized(target, on_cpu)
    # A float source is quantized with the destination's parameters, as on the CPU.
    floats = sample(6, 8, seed=2)
    expected = on_cpu.clone().copy_(floats)
    assert_same_quantized(on_neuron.clone().copy_(floats.to(neuron0)), expected)
    different = torch.quantize_per_tensor(sample(6, 8, seed=1), 0.1, 2, torch.quint8).to(neuron0)
    assert not torch.equal(different, on_neuron)


def test_printing_matches_the_cpu():
    on_cpu = torch.quantize_per_tensor(torch.tensor([[0.3, -1.2, 2.0]]), 0.1, 1, torch.qint8)
    values, parameters = repr(on_cpu).split(", size=", 1)
    # The CPU's text with the device after the values, as for any neuron tensor.
    assert repr(on_cpu.to(neuron0)) == f"{values}, device='neuron:0', size={parameters}"


@pytest.mark.parametrize("scheme", ["per_tensor", "per_channel"])
def test_save_and_load_keep_the_device(scheme):
    x = sample(3, 4)
    if scheme == "per_tensor":
        on_cpu = torch.quantize_per_tensor(x, 0.2, 3, torch.qint8)
    else:
        on_cpu = torch.quantize_per_channel(
            x,
            torch.tensor([0.1, 0.2, 0.3], dtype=torch.float64),
            torch.tensor([0, 1, 2]),
            0,
            torch.qint8,
        )
    buffer = io.BytesIO()
    torch.save({"q": on_cpu.to(neuron0)}, buffer)
    buffer.seek(0)
    loaded = torch.load(buffer, weights_only=True)["q"]
    assert_same_quantized(loaded, on_cpu)
    buffer.seek(0)
    on_host = torch.load(buffer, map_location="cpu", weights_only=True)["q"]
    assert on_host.device.type == "cpu" and torch.equal(on_host, on_cpu)


def test_empty_quantized_factories_allocate_on_neuron():
    per_tensor = torch._empty_affine_quantized(
        [2, 3], scale=0.5, zero_point=1, dtype=torch.qint32, device=neuron0
    )
    assert (
        per_tensor.device == neuron0
        and per_tensor.dtype == torch.qint32
        and per_tensor.q_scale() == 0.5
    )
    per_channel = torch._empty_per_channel_affine_quantized(
        [2, 3],
        scales=torch.ones(3, dtype=torch.float64),
        zero_points=torch.zeros(3, dtype=torch.long),
        axis=1,
        dtype=torch.qint8,
        device=neuron0,
    )
    assert per_channel.device == neuron0 and per_channel.q_per_channel_axis() == 1


@pytest.mark.parametrize(
    "make",
    [
        pytest.param(
            lambda d: torch.quantize_per_tensor(
                torch.ones(3, dtype=torch.int32, device=d), 0.1, 0, torch.qint8
            ),
            id="int-input",
        ),
        pytest.param(
            lambda d: torch.quantize_per_tensor(torch.ones(3, device=d), 0.1, 300, torch.quint8),
            id="zero-point-out-of-range",
        ),
        pytest.param(
            lambda d: torch.quantize_per_tensor(torch.ones(3, device=d), 0.1, 0, torch.float32),
            id="not-a-quantized-dtype",
        ),
        pytest.param(
            lambda d: torch.quantize_per_channel(
                torch.ones(2, 3, device=d),
                torch.ones(3, dtype=torch.float64, device=d),
                torch.zeros(3, dtype=torch.long, device=d),
                2,
                torch.qint8,
            ),
            id="axis-out-of-range",
        ),
        pytest.param(
            lambda d: torch.quantize_per_channel(
                torch.ones(2, 3, device=d),
                torch.ones(2, dtype=torch.float64, device=d),
                torch.zeros(2, dtype=torch.long, device=d),
                1,
                torch.qint8,
            ),
            id="wrong-channel-count",
        ),
        pytest.param(
            lambda d: torch.quantize_per_tensor(torch.ones(3, device=d), 0.1, 0, torch.qint8).copy_(
                torch.ones(3, device=d).int()
            ),
            id="int-into-quantized",
        ),
        pytest.param(
            lambda d: torch.ones(3, device=d).copy_(
                torch.quantize_per_tensor(torch.ones(3, device=d), 0.1, 0, torch.qint8)
            ),
            id="quantized-into-float",
        ),
    ],
)
def test_bad_input_raises_the_cpus_exception(make):
    with pytest.raises(Exception) as on_cpu:
        make("cpu")
    with pytest.raises(Exception) as on_neuron:
        make(neuron0)
    assert type(on_neuron.value) is type(on_cpu.value), (on_cpu.value, on_neuron.value)
    # The process stays usable.
    assert torch.quantize_per_tensor(
        torch.ones(2, device=neuron0), 0.5, 0, torch.qint8
    ).int_repr().cpu().tolist() == [2, 2]


def test_quantizing_runs_no_host_fallback():
    import openneuron

    x = sample(8, 8).to(neuron0)
    scales = torch.tensor([0.1] * 8, dtype=torch.float64, device=neuron0)
    zero_points = torch.zeros(8, dtype=torch.long, device=neuron0)
    with openneuron.strict():
        q = torch.quantize_per_tensor(x, 0.1, 0, torch.qint8)
        q.int_repr(), q.dequantize(), q.cpu(), q.clone()
        c = torch.quantize_per_channel(x, scales, zero_points, 0, torch.quint8)
        c.int_repr(), c.dequantize(), c.cpu()
