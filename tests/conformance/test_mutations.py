"""Mutation tests of the checks themselves: deliberately wrong neuron kernels, registered through
the dispatcher over the real ones for the duration of one test, must each be flagged.

Each mutation is a small Python kernel for the PrivateUse1 key (torch.library), built only from
other native ops, with one classic kernel bug: infinities left alone, an off-by-one length, a
scale off by 2%, every attention intermediate rounded to bfloat16, a reduction over the wrong
dimension, a record_stream that records nothing, a dropped alpha. The conformance harness
(check_op, the same code the sweep and the slice run) must fail the pair; record_stream's
check is the allocator test below, shared with tests/test_streams_events.py's intent.
"""

from __future__ import annotations

import math

import pytest
import torch
from kernel_mutants import kernel_replaced as mutated

from . import harness
from .catalog import ops_by_name

MAX_SAMPLES = 12


def check(op_name: str, dtype: torch.dtype) -> harness.Result:
    return harness.check_op(ops_by_name()[op_name], dtype, max_samples=MAX_SAMPLES)


# ---- the wrong kernels ---------------------------------------------------------------------


def nan_to_num_keeping_inf(x, nan=None, posinf=None, neginf=None):
    return torch.where(torch.isnan(x), torch.full_like(x, 0.0 if nan is None else nan), x)


def arange_one_too_long(start, end, step, out):
    right = torch.arange(start, end, step, dtype=out.dtype)  # on the CPU
    longer = torch.cat([right, right[-1:] + step]) if right.numel() else right
    out.resize_(longer.shape)
    return out.copy_(longer)


def mean_two_percent_high(x, dim=None, keepdim=False, dtype=None):
    dims = list(range(x.dim())) if not dim else [d % max(x.dim(), 1) for d in dim]
    count = math.prod(x.shape[d] for d in dims) if x.dim() else 1
    total = torch.sum(x, dims, keepdim, dtype=dtype) if x.dim() else x.to(dtype or x.dtype)
    return total * (1.02 / count)


def sum_over_the_next_dim(x, dim=None, keepdim=False, dtype=None):
    if dim and len(dim) == 1 and x.dim() >= 2:
        d = dim[0] % x.dim()
        same_size = [o for o in range(x.dim()) if o != d and x.shape[o] == x.shape[d]]
        if same_size:
            x = x.transpose(d, same_size[0])  # so the result sums over another dimension
    return torch.sum(x.cpu(), dim, keepdim, dtype=dtype).to(x.device)


def add_without_alpha(x, y, alpha=1):
    shape = torch.broadcast_shapes(x.shape, y.shape)
    out = torch.empty(shape, dtype=torch.result_type(x, y), device=x.device)
    return torch.add(x, y, out=out)


def attention_in_bfloat16(
    query, key, value, attn_bias=None, dropout_p=0.0, is_causal=False,
    return_debug_mask=False, scale=None,
):  # fmt: skip
    # Every intermediate in the inputs' dtype: scores, softmax and the weighted sum each
    # rounded to bfloat16 (the real kernel keeps them in float32).
    s = scale if scale is not None else 1.0 / math.sqrt(query.shape[-1])
    scores = (query @ key.transpose(-2, -1)) * s
    if is_causal:
        mask = torch.ones(scores.shape[-2:], dtype=torch.bool, device=query.device).tril()
        scores = scores.masked_fill(~mask, float("-inf"))
    if attn_bias is not None:
        scores = scores + attn_bias
    weights = torch.softmax(scores, dim=-1)
    out = weights @ value
    lse = torch.logsumexp(scores.float(), dim=-1)
    empty = torch.empty(0, device=query.device)
    seed = torch.zeros((), dtype=torch.long)
    return out, lse, empty, empty, query.shape[-2], key.shape[-2], seed, seed, empty


def elu_backward_zero_at_nan(grad, alpha, scale, input_scale, is_result, x):
    # Neither of the CPU's loops gives 0 at a NaN input (its vectorized one gives NaN, its
    # scalar one the incoming gradient): the layout rule must not accept it.
    negative = alpha * scale * input_scale
    below = grad * (input_scale * (x + alpha * scale) if is_result else negative * torch.exp(x))
    out = torch.where(x > 0, grad * scale, below)
    return torch.where(torch.isnan(x), torch.zeros_like(out), out)


def hardtanh_backward_passing_at_the_bounds(grad, x, min_val, max_val):
    # The CPU's gradient is 0 at exactly min_val and max_val; this one passes grad there.
    return torch.where((x < min_val) | (x > max_val), torch.zeros_like(grad), grad)


def record_stream_noop(tensor, stream):
    return None


# ---- the harness flags each ----------------------------------------------------------------


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
def test_nan_to_num_leaving_infinities_is_flagged(dtype):
    assert check("nan_to_num", dtype).status in ("native", "fallback")
    with mutated("nan_to_num", nan_to_num_keeping_inf):
        result = check("nan_to_num", dtype)
    assert result.status == "fail", result


@pytest.mark.parametrize("dtype", [torch.int64, torch.float32])
def test_arange_one_element_too_long_is_flagged(dtype):
    with mutated("arange.start_out", arange_one_too_long):
        result = check("arange", dtype)
    assert result.status == "fail", result


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_mean_off_by_two_percent_is_flagged(dtype):
    with mutated("mean.dim", mean_two_percent_high):
        result = check("mean", dtype)
    assert result.status == "fail", result
    assert "raised" not in result.reason, result.reason  # wrong values, not a crash


def test_sum_over_the_wrong_dimension_is_flagged():
    with mutated("sum.dim_IntList", sum_over_the_next_dim):
        result = check("sum", torch.float32)
    assert result.status == "fail", result
    assert "not close" in result.reason, result.reason  # wrong values, not a crash


@pytest.mark.parametrize("dtype", [torch.float32, torch.int64])
def test_add_dropping_alpha_is_flagged(dtype):
    with mutated("add.Tensor", add_without_alpha):
        result = check("add", dtype)
    assert result.status == "fail", result


def test_attention_with_bfloat16_intermediates_is_flagged():
    op = "nn.functional.scaled_dot_product_attention"
    # The real kernel's forward values all pass (its known failure is in a few gradients).
    real = check(op, torch.bfloat16)
    assert not any("forward" in s for s in real.signatures), real.signatures
    with mutated("_scaled_dot_product_fused_attention_overrideable", attention_in_bfloat16):
        result = check(op, torch.bfloat16)
    assert any("forward: wrong values" in s for s in result.signatures), result


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_elu_gradient_zero_at_nan_is_flagged(dtype):
    # The real kernel passes, some values by the CPU layout rule (the CPU's own value at NaN
    # depends on the layout); a value no layout gives must still fail.
    assert check("nn.functional.elu", dtype).status in ("native", "fallback")
    with mutated("elu_backward", elu_backward_zero_at_nan):
        result = check("nn.functional.elu", dtype)
    assert any("grad: wrong values" in s for s in result.signatures), result


def test_hardtanh_gradient_passing_at_the_bounds_is_flagged():
    with mutated("hardtanh_backward", hardtanh_backward_passing_at_the_bounds):
        result = check("nn.functional.hardtanh", torch.float32)
    assert any("grad: wrong values" in s for s in result.signatures), result


# ---- record_stream -------------------------------------------------------------------------


def freed_block_waits_for_recorded_stream() -> None:
    """Raises AssertionError unless a block freed after record_stream(side) is not handed out
    again while the side stream's queued work (reading it) is still running."""
    torch.neuron.synchronize()
    torch.neuron.empty_cache()  # so the freed block is the only cached one of its size
    side = torch.neuron.Stream()
    g = torch.Generator().manual_seed(0)
    a = torch.randn(512, 512, generator=g).to("neuron")
    source = torch.randn(512, 512, generator=g).to("neuron")
    side.wait_stream(torch.neuron.current_stream())
    torch.neuron.synchronize()
    with torch.neuron.stream(side):
        x = source
        for _ in range(40):  # ~0.2 s of queued work on the side stream, reading source
            x = torch.tanh(x @ a)
    source.record_stream(side)
    pointer = source.data_ptr()
    del source
    busy = not side.query()
    again = torch.empty(512, 512, device="neuron")
    reused = again.data_ptr() == pointer
    torch.neuron.synchronize()
    assert busy, "the side stream finished before the check could run (make its work longer)"
    assert not reused, "a block recorded on a busy stream was handed out again"


def test_record_stream_defers_reuse():
    freed_block_waits_for_recorded_stream()


def test_record_stream_that_records_nothing_is_flagged():
    with mutated("record_stream", record_stream_noop):
        with pytest.raises(AssertionError, match="handed out again"):
            freed_block_waits_for_recorded_stream()
