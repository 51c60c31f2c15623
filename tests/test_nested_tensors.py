"""Nested tensors on neuron, against the same calls on the CPU: the jagged layout
(torch.nested.nested_tensor(..., layout=torch.jagged), as_nested_tensor) through
scaled_dot_product_attention, the strided layout through PyTorch's device-generic nested
kernels, and nn.TransformerEncoder's eval fast path with a key padding mask."""

import pytest
import torch
import torch.nn.functional as F
from torch import nn

import openneuron

neuron0 = torch.device("neuron", 0)

# PyTorch warns that the strided nested layout is a prototype; the warning is not ours.
pytestmark = pytest.mark.filterwarnings("ignore:The PyTorch API of nested tensors")

LENGTHS = (3, 5, 1, 4)


def sequences(width=16, seed=0, lengths=LENGTHS):
    generator = torch.Generator().manual_seed(seed)
    return [torch.randn(length, width, generator=generator) for length in lengths]


def components(nested):
    return [t.cpu() for t in nested.unbind()]


def assert_components_close(on_neuron, on_cpu, **tolerance):
    assert on_neuron.device == neuron0 and on_neuron.is_nested
    actual, expected = components(on_neuron), components(on_cpu)
    assert [t.shape for t in actual] == [t.shape for t in expected]
    for a, e in zip(actual, expected):
        torch.testing.assert_close(a, e, **tolerance)


def test_jagged_construction_keeps_values_and_offsets_on_neuron():
    seqs = sequences()
    nt = torch.nested.nested_tensor([s.to(neuron0) for s in seqs], layout=torch.jagged)
    assert nt.layout == torch.jagged and nt.values().device == neuron0
    assert nt.offsets().tolist() == [0, 3, 8, 9, 13]
    as_nt = torch.nested.as_nested_tensor([s.to(neuron0) for s in seqs], layout=torch.jagged)
    expected = torch.nested.nested_tensor(seqs, layout=torch.jagged)
    for made in (nt, as_nt):
        assert_components_close(made, expected, rtol=0, atol=0)
        assert_components_close((made * 2 + 1).relu(), (expected * 2 + 1).relu())
        assert_components_close(F.linear(made, torch.eye(16, device=neuron0)), expected)


def jagged_attention(device, seed=1, scale=None):
    """Multi-head attention of jagged sequences, projected separately for q, k and v."""
    generator = torch.Generator().manual_seed(seed)
    weights = [torch.randn(16, 16, generator=generator) * 0.3 for _ in range(3)]
    nt = torch.nested.nested_tensor([s.to(device) for s in sequences()], layout=torch.jagged)

    def heads(t):  # [B, j, 16] -> [B, 2 heads, j, 8]
        return t.unflatten(-1, [2, 8]).transpose(1, 2)

    q, k, v = (heads(F.linear(nt, w.to(device))) for w in weights)
    return F.scaled_dot_product_attention(q, k, v, scale=scale).transpose(1, 2).flatten(-2)


@pytest.mark.parametrize("scale", [None, 0.3], ids=["default-scale", "scale"])
def test_sdpa_on_jagged_inputs_matches_the_cpu(scale):
    expected = jagged_attention("cpu", scale=scale)
    actual = jagged_attention(neuron0, scale=scale)
    assert actual.layout == torch.jagged and actual.values().device == neuron0
    assert_components_close(actual, expected, rtol=1e-4, atol=1e-5)


def test_strided_nested_tensors_use_the_generic_kernels():
    seqs = sequences(width=8)
    expected = torch.nested.nested_tensor(seqs)
    nt = torch.nested.nested_tensor([s.to(neuron0) for s in seqs])
    assert nt.layout == torch.strided and nt.is_nested
    assert_components_close(nt, expected, rtol=0, atol=0)
    assert_components_close(nt.transpose(1, 2).contiguous(), expected.transpose(1, 2).contiguous())
    assert_components_close(F.softmax(nt, -1), F.softmax(expected, -1))
    padded = nt.to_padded_tensor(-1.0)
    assert padded.device == neuron0
    assert torch.equal(padded.cpu(), expected.to_padded_tensor(-1.0))
    assert_components_close(nt.cpu().to(neuron0), expected, rtol=0, atol=0)


def encoder(norm_first=False, activation="relu", layers=2, seed=0):
    torch.manual_seed(seed)
    layer = nn.TransformerEncoderLayer(
        16, 4, 32, dropout=0.0, batch_first=True, norm_first=norm_first, activation=activation
    )
    return nn.TransformerEncoder(layer, layers, enable_nested_tensor=not norm_first).eval()


def padded_batch(seed=0):
    generator = torch.Generator().manual_seed(seed)
    src = torch.randn(len(LENGTHS), max(LENGTHS), 16, generator=generator)
    padding = torch.arange(max(LENGTHS)).unsqueeze(0) >= torch.tensor(LENGTHS).unsqueeze(1)
    return src, padding


@pytest.mark.parametrize("activation", ["relu", "gelu"])
def test_transformer_encoder_fast_path_with_padding_mask_matches_the_cpu(activation):
    model = encoder(activation=activation)
    src, padding = padded_batch()
    with torch.inference_mode():
        expected = model(src, src_key_padding_mask=padding)
        model.to(neuron0)
        openneuron.clear_op_tracking()
        with openneuron.strict():  # no op on the host fallback
            actual = model(src.to(neuron0), src_key_padding_mask=padding.to(neuron0))
    executed = openneuron.get_executed_ops()
    # The fast path ran: the batch became a nested tensor and each layer ran fused.
    assert executed.get("aten::_nested_tensor_from_mask") == 1
    assert executed.get("aten::_transformer_encoder_layer_fwd") == 2
    assert actual.device == neuron0
    # Padded positions are zeros in both (the fast path returns them so).
    torch.testing.assert_close(actual.cpu(), expected, rtol=1e-4, atol=1e-5)


def test_transformer_encoder_layer_on_a_nested_input_matches_the_cpu():
    layer = encoder(layers=1).layers[0]
    seqs = sequences()
    with torch.inference_mode():
        expected = layer(torch.nested.nested_tensor(seqs))
        layer.to(neuron0)
        actual = layer(torch.nested.nested_tensor([s.to(neuron0) for s in seqs]))
    assert_components_close(actual, expected, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("norm_first", [False, True])
def test_dense_encoder_layer_fast_path_matches_the_cpu(norm_first):
    layer = encoder(norm_first=norm_first, layers=1).layers[0]
    src, padding = padded_batch(seed=3)
    causal = nn.Transformer.generate_square_subsequent_mask(src.size(1))
    with torch.inference_mode():
        expected = [
            layer(src),
            layer(src, src_mask=causal),
            layer(src, src_key_padding_mask=padding),
        ]
        layer.to(neuron0)
        with openneuron.strict():
            actual = [
                layer(src.to(neuron0)),
                layer(src.to(neuron0), src_mask=causal.to(neuron0)),
                layer(src.to(neuron0), src_key_padding_mask=padding.to(neuron0)),
            ]
    for a, e in zip(actual, expected):
        torch.testing.assert_close(a.cpu(), e, rtol=1e-4, atol=1e-5, equal_nan=True)


@pytest.mark.parametrize(
    "call",
    [
        pytest.param(lambda t, m: torch._nested_tensor_from_mask(t, m.int()), id="mask-not-bool"),
        pytest.param(
            lambda t, m: torch._nested_tensor_from_mask(t, m.flip(1)), id="not-left-aligned"
        ),
        pytest.param(lambda t, m: torch._nested_tensor_from_mask(t[0], m), id="input-not-3d"),
        pytest.param(
            lambda t, m: torch._nested_tensor_from_mask_left_aligned(t, m[:, :2]),
            id="size-mismatch",
        ),
    ],
)
def test_bad_masks_raise_the_cpus_exception(call):
    src, padding = padded_batch()
    keep = padding.logical_not()
    with pytest.raises(Exception) as on_cpu:
        call(src, keep)
    with pytest.raises(Exception) as on_neuron:
        call(src.to(neuron0), keep.to(neuron0))
    assert type(on_neuron.value) is type(on_cpu.value), (on_cpu.value, on_neuron.value)


def test_masks_left_aligned_or_not_agree_with_the_cpu():
    src, padding = padded_batch()
    keep = padding.logical_not()
    for mask in (keep, keep.flip(1)):
        assert torch._nested_tensor_from_mask_left_aligned(src.to(neuron0), mask.to(neuron0)) == (
            torch._nested_tensor_from_mask_left_aligned(src, mask)
        )
    assert_components_close(
        torch._nested_tensor_from_mask(src.to(neuron0), keep.to(neuron0)),
        torch._nested_tensor_from_mask(src, keep),
        rtol=0,
        atol=0,
    )


def test_encoder_layer_returns_an_empty_batch_as_the_cpu():
    layer = encoder(layers=1).layers[0]
    with torch.inference_mode():
        expected = layer(torch.nested.nested_tensor([torch.rand(0, 16)]))
        layer.to(neuron0)
        empty = layer(torch.nested.nested_tensor([torch.rand(0, 16, device=neuron0)]))
        dense = layer(torch.rand(0, 5, 16, device=neuron0))
    assert empty.is_nested and empty.device == neuron0
    assert [t.shape for t in components(empty)] == [t.shape for t in components(expected)]
    assert dense.shape == (0, 5, 16) and dense.device == neuron0
