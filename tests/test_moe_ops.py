"""The ops a Mixture-of-Experts layer routes tokens with, native on neuron: torch._grouped_mm
(every expert's product in one kernel, forward and gradient, against a float64 loop of mm) and
torch.histc at the integer dtypes CUDA accepts and the CPU does not (tokens per expert)."""

import pytest
import torch
from kernel_mutants import kernel_replaced

import openneuron

GROUPED_DTYPES = [torch.float32, torch.bfloat16, torch.float16]
# Measured: fp32 results differ from the float64 loop by < 2e-6 relative; 16-bit ones by one
# rounding of the fp32 accumulator (2^-8 for bf16, 2^-11 for fp16).
TOLERANCE = {
    torch.float32: dict(rtol=1e-5, atol=1e-5),
    torch.bfloat16: dict(rtol=1.6e-2, atol=1e-2),
    torch.float16: dict(rtol=2e-3, atol=2e-3),
}


def reference_grouped_mm(a, b, offs):
    """A float64 loop of mm over the groups, as _grouped_mm defines them."""
    a, b = a.double(), b.double()
    if a.dim() == 3 and b.dim() == 3:
        return torch.bmm(a, b)
    ends = offs.tolist()
    starts = [0] + ends[:-1]
    if a.dim() == 2 and b.dim() == 3:
        out = torch.zeros(a.shape[0], b.shape[-1], dtype=torch.float64)
        for g, (s, e) in enumerate(zip(starts, ends)):
            out[s:e] = a[s:e] @ b[g]
    elif a.dim() == 3 and b.dim() == 2:
        out = torch.zeros(a.shape[1], b.shape[1], dtype=torch.float64)
        for g, (s, e) in enumerate(zip(starts, ends)):
            out[:, s:e] = a[g] @ b[:, s:e]
    else:
        out = torch.zeros(len(ends), a.shape[0], b.shape[1], dtype=torch.float64)
        for g, (s, e) in enumerate(zip(starts, ends)):
            out[g] = a[:, s:e] @ b[s:e]
    return out


# (a shape, b shape, offsets): tokens grouped by expert (with an empty expert and rows past the
# last offset), the transposed form, the weight-gradient form, and plain batches.
CASES = {
    "tokens_x_experts": ((24, 16), (4, 16, 8), [5, 5, 13, 20]),
    "experts_x_tokens": ((3, 8, 16), (16, 24), [8, 8, 24]),
    "weight_gradient": ((8, 24), (24, 16), [4, 4, 16, 24]),
    "batched": ((3, 8, 16), (3, 16, 8), None),
}


@pytest.mark.parametrize("dtype", GROUPED_DTYPES, ids=str)
@pytest.mark.parametrize("case", list(CASES))
def test_grouped_mm_matches_a_float64_loop_natively(case, dtype):
    a_shape, b_shape, ends = CASES[case]
    torch.manual_seed(0)
    a = torch.randn(a_shape).to(dtype)
    b = torch.randn(b_shape).to(dtype)
    offs = None if ends is None else torch.tensor(ends, dtype=torch.int32)
    openneuron.clear_op_tracking()
    on_device = torch._grouped_mm(
        a.to("neuron"), b.to("neuron"), None if offs is None else offs.to("neuron")
    )
    assert openneuron.get_fallback_ops() == {}
    assert openneuron.get_executed_ops().get("aten::_grouped_mm") == 1
    assert on_device.dtype == dtype and on_device.device.type == "neuron"
    expected = reference_grouped_mm(a, b, offs)
    torch.testing.assert_close(on_device.cpu().double(), expected, **TOLERANCE[dtype])


# (tokens, hidden, out features, group ends): a small layer, and one whose groups are longer
# than the kernel's 256-row blocks (an empty one among them; 3 rows past the last end), so the
# products and the weight gradient's sums are split into blocks across threads.
GRADIENT_CASES = {
    "small": (24, 16, 8, [6, 6, 15, 24]),
    "groups_longer_than_a_block": (1100, 32, 24, [300, 300, 557, 1097]),
}


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=str)
@pytest.mark.parametrize("case", list(GRADIENT_CASES))
def test_grouped_mm_gradients_match_a_float64_loop(case, dtype):
    tokens, hidden, features, ends = GRADIENT_CASES[case]
    torch.manual_seed(1)
    a = torch.randn(tokens, hidden).to(dtype)
    b = torch.randn(len(ends), hidden, features).to(dtype)
    cotangent = torch.randn(tokens, features).to(dtype)

    a_dev = a.to("neuron").requires_grad_()
    b_dev = b.to("neuron").requires_grad_()
    offs = torch.tensor(ends, dtype=torch.int32, device="neuron")
    openneuron.clear_op_tracking()
    torch._grouped_mm(a_dev, b_dev, offs).backward(cotangent.to("neuron"))
    assert openneuron.get_fallback_ops() == {}

    a_ref = a.double().requires_grad_()
    b_ref = b.double().requires_grad_()
    reference_grouped_mm(a_ref, b_ref, torch.tensor(ends)).backward(cotangent.double())
    torch.testing.assert_close(a_dev.grad.cpu().double(), a_ref.grad, **TOLERANCE[dtype])
    torch.testing.assert_close(b_dev.grad.cpu().double(), b_ref.grad, **TOLERANCE[dtype])


def test_grouped_mm_refuses_what_cuda_refuses_at_the_call():
    a = torch.randn(8, 16, device="neuron")
    b = torch.randn(2, 16, 8, device="neuron")
    with pytest.raises(RuntimeError, match="Offsets have to be int32"):
        torch._grouped_mm(a, b, torch.tensor([4, 8], device="neuron"))
    with pytest.raises(RuntimeError, match="Have to provide offsets"):
        torch._grouped_mm(a, b)
    offs = torch.tensor([4, 8], dtype=torch.int32, device="neuron")
    with pytest.raises(RuntimeError, match="contraction dimension"):
        torch._grouped_mm(a, b.transpose(1, 2), offs)
    # Both 2-D (the weight-gradient form): a shorter mat_b would be read past its end.
    with pytest.raises(RuntimeError, match="contraction dimension"):
        torch._grouped_mm(a.t(), torch.randn(6, 4, device="neuron"), offs)
    with pytest.raises(RuntimeError, match="Float32, BFloat16 or Float16"):
        torch._grouped_mm(a.double(), b.double(), offs)
    with pytest.raises(RuntimeError, match="same device"):
        torch._grouped_mm(a, b, offs.cpu())
    # The process stays usable.
    assert torch._grouped_mm(a, b, offs).shape == (8, 8)


HISTC_VALUES = [0, 3, 1, 1, 7, 2, -1, 8, 3, 3, 6, 0, 5]


@pytest.mark.parametrize(
    "dtype", [torch.int32, torch.int64, torch.int16, torch.int8, torch.uint8], ids=str
)
def test_integer_histc_counts_as_cuda_does_natively(dtype):
    values = torch.tensor([v for v in HISTC_VALUES if v >= 0 or dtype != torch.uint8], dtype=dtype)
    openneuron.clear_op_tracking()
    counts = torch.histc(values.to("neuron"), bins=4, min=0, max=7)
    assert openneuron.get_fallback_ops() == {}
    assert counts.dtype == dtype
    # Bins of width 2 over [0, 7]: 7 counts in the last bin; -1 and 8 are outside.
    expected = torch.histc(values.double(), bins=4, min=0, max=7).to(dtype)
    assert torch.equal(counts.cpu(), expected)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16], ids=str)
def test_floating_histc_matches_the_cpu_bin_for_bin(dtype):
    torch.manual_seed(2)
    # At most ~150 per bin: PyTorch's CPU kernel counts in the input's dtype, which stops
    # counting exactly past 256 in bfloat16 (the next test covers larger counts).
    values = torch.cat([torch.randn(600), torch.linspace(-2, 2, 41), torch.tensor([float("nan")])])
    values = values.to(dtype)
    for bins, low, high in [(40, -2, 2), (7, -1.5, 3), (10, 0, 0)]:
        openneuron.clear_op_tracking()
        counts = torch.histc(values.to("neuron").nan_to_num(), bins=bins, min=low, max=high)
        assert openneuron.get_fallback_ops() == {}
        expected = torch.histc(values.nan_to_num(), bins=bins, min=low, max=high)
        assert torch.equal(counts.cpu(), expected), (bins, low, high)
    # NaNs are not counted.
    counts = torch.histc(values.to("neuron"), bins=4, min=-1, max=1)
    assert torch.equal(counts.cpu(), torch.histc(values, bins=4, min=-1, max=1))


def test_16_bit_histc_counts_exactly_and_rounds_once():
    """Counts are kept exactly and rounded once on store (the design's rule for 16-bit floats),
    where the CPU's bfloat16 kernel adds 1 to a bfloat16 count, which stops growing at 512."""
    values = torch.full((1000,), 0.5, dtype=torch.bfloat16)
    counts = torch.histc(values.to("neuron"), bins=4, min=0, max=2)
    assert counts.cpu().tolist() == [0.0, 1000.0, 0.0, 0.0]
    assert torch.histc(values, bins=4, min=0, max=2)[1].item() == 512.0


def test_histc_range_from_the_data_and_its_errors_at_the_call():
    x = torch.tensor([2, 5, 5, 9], dtype=torch.int32, device="neuron")
    expected = torch.histc(x.cpu().double(), bins=3).to(torch.int32)
    assert torch.equal(torch.histc(x, bins=3).cpu(), expected)
    single = torch.tensor([4.0, 4.0], device="neuron")
    assert torch.equal(torch.histc(single, bins=4).cpu(), torch.histc(single.cpu(), bins=4))
    with pytest.raises(RuntimeError, match="bins must be > 0"):
        torch.histc(x, bins=0, min=0, max=3)
    with pytest.raises(RuntimeError, match="max must be larger than min"):
        torch.histc(x, bins=4, min=3, max=0)
    with pytest.raises(RuntimeError, match="is not finite"):
        torch.histc(torch.tensor([1.0, float("inf")], device="neuron"), bins=4)
    with pytest.raises(RuntimeError, match="should have the same dtype"):
        torch.histc(x, bins=4, min=0, max=9, out=torch.empty(4, device="neuron"))
    out = torch.empty(4, dtype=torch.int32, device="neuron")
    torch.histc(x, bins=4, min=0, max=9, out=out)
    assert out.cpu().sum().item() == 4


def test_a_wrong_histc_bin_edge_is_caught():
    """The integer check above fails when a kernel puts values on a bin edge one bin high."""

    def off_by_one_edge(values, bins=100, min=0, max=0):
        width = (max - min) / bins
        positions = ((values.cpu().double() - min) / width).floor() + 1  # the mutant: + 1
        positions = positions.clamp(0, bins - 1)
        inside = (values.cpu() >= min) & (values.cpu() <= max)
        counts = torch.bincount(positions[inside].long(), minlength=bins)
        return counts.to(values.dtype).to(values.device)

    with kernel_replaced("histc", off_by_one_edge), pytest.raises(AssertionError):
        test_integer_histc_counts_as_cuda_does_natively(torch.int32)
    test_integer_histc_counts_as_cuda_does_natively(torch.int32)


@pytest.mark.parametrize("dtype", [torch.int64, torch.int32, torch.uint8], ids=str)
def test_bincount_counts_and_sums_weights_as_the_cpu_natively(dtype):
    values = torch.tensor([0, 3, 1, 1, 7, 3, 3], dtype=dtype)
    weights = torch.linspace(0.1, 0.7, 7)
    openneuron.clear_op_tracking()
    counts = torch.bincount(values.to("neuron"))
    padded = torch.bincount(values.to("neuron"), minlength=12)
    sums = torch.bincount(values.to("neuron"), weights=weights.to("neuron"))
    assert openneuron.get_fallback_ops() == {}
    assert torch.equal(counts.cpu(), torch.bincount(values))
    assert torch.equal(padded.cpu(), torch.bincount(values, minlength=12))
    assert torch.equal(sums.cpu(), torch.bincount(values, weights=weights))
    empty = torch.bincount(torch.tensor([], dtype=dtype, device="neuron"), minlength=3)
    assert torch.equal(empty.cpu(), torch.zeros(3, dtype=torch.long))


def test_bincount_refuses_what_the_cpu_refuses_at_the_call():
    with pytest.raises(RuntimeError, match="non-negative integral"):
        torch.bincount(torch.tensor([2, -1], device="neuron"))
    with pytest.raises(RuntimeError, match="non-negative integral"):
        torch.bincount(torch.tensor([[1]], device="neuron"))
    with pytest.raises(RuntimeError, match="minlength should be >= 0"):
        torch.bincount(torch.tensor([1], device="neuron"), minlength=-1)
    with pytest.raises(RuntimeError, match="same length as input"):
        torch.bincount(
            torch.tensor([1, 2], device="neuron"), weights=torch.ones(3, device="neuron")
        )
    # float64 sums (non-float32 weights) come from the host, as the CPU computes them.
    weights = torch.ones(2, dtype=torch.float16)
    result = torch.bincount(torch.tensor([1, 1], device="neuron"), weights=weights.to("neuron"))
    assert result.dtype == torch.float64
    assert torch.equal(result.cpu(), torch.bincount(torch.tensor([1, 1]), weights=weights))
