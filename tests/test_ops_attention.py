"""Blocked attention and row norms at workload sizes, neuron vs PyTorch CPU.

The kernels work in 64-query x 128-key blocks (attention) and 16-lane vectors (layer/RMS
norm); these cases cross those boundaries with the shapes the bench workloads use (head
dim 64, sequence 128, hidden 256), forward and gradients, and assert nothing fell back.
"""

import warnings

import pytest
import torch
import torch.nn.functional as F

import openneuron

# Tolerances per dtype, with the reason:
# float32: fp32 block products in a different summation order than CPU's -> ~1e-5 relative;
#          gradients sum over up to a few hundred terms.
# bfloat16: one bf16 rounding of fp32 results (2^-8 relative), plus the rounding of the
#          saved output the backward reads; the CPU reference runs in fp32 on the same inputs.
# float16: the same with 2^-11.
# Measured (largest |error| / (atol + rtol * |expected|) over every case here, at the old
# 1e-4 / 5e-2,3e-2 / 5e-3 bounds): float32 0.12, bfloat16 0.18, float16 0.16; the bounds below
# leave about 2x headroom over those measurements.
TOL = {
    torch.float32: dict(atol=2.5e-5, rtol=2.5e-5),
    torch.bfloat16: dict(atol=2e-2, rtol=1.2e-2),
    torch.float16: dict(atol=2e-3, rtol=2e-3),
}
# Layer/RMS norm weight and bias gradients in 16-bit sum R rows of g * xhat, where xhat carries
# the 16-bit rounding of the saved rstd (PyTorch's contract keeps the statistics in the input
# dtype): ~sqrt(R) * 2^-9 absolute for R = 512 in bf16 (CPU's own bf16 kernel is ~8x worse).
COLUMN_SUM_TOL = {
    torch.float32: dict(atol=1e-4, rtol=1e-4),
    torch.bfloat16: dict(atol=0.3, rtol=3e-2),
    torch.float16: dict(atol=4e-2, rtol=5e-3),
}
FLOAT_DTYPES = [torch.float32, torch.bfloat16, torch.float16]
DEVICE = "neuron"
OURS = ("scaled_dot_product", "sdp_choice", "layer_norm", "rms_norm")


def our_fallbacks():
    return {op: n for op, n in openneuron.get_fallback_ops().items() if any(s in op for s in OURS)}


def compare(fn, *inputs, dtype=torch.float32, tol=None, grad_tols=None):
    """fn on neuron (inputs rounded to dtype) vs fn on CPU in fp32 from the same rounded values;
    compares the output and the gradient of every floating input (grad_tols: per-input
    overrides, by position)."""
    tol = tol or TOL[dtype]
    cpu_inputs, dev_inputs = [], []
    for value in inputs:
        if isinstance(value, torch.Tensor) and value.is_floating_point():
            rounded = value.detach().to(dtype)
            cpu_inputs.append(rounded.float().clone().requires_grad_())
            dev_inputs.append(rounded.to(DEVICE).detach().requires_grad_())
        elif isinstance(value, torch.Tensor):
            cpu_inputs.append(value)
            dev_inputs.append(value.to(DEVICE))
        else:
            cpu_inputs.append(value)
            dev_inputs.append(value)
    openneuron.clear_op_tracking()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out_dev = fn(*dev_inputs)
        out_cpu = fn(*cpu_inputs)
        weights = torch.randn(out_cpu.shape)
        (out_cpu * weights).sum().backward()
        (out_dev * weights.to(dtype).to(DEVICE)).sum().backward()
    assert our_fallbacks() == {}, openneuron.get_fallback_ops()
    assert out_dev.dtype == dtype
    torch.testing.assert_close(out_dev.cpu().float(), out_cpu.detach(), **tol)
    for index, (dev, cpu) in enumerate(zip(dev_inputs, cpu_inputs, strict=True)):
        if isinstance(cpu, torch.Tensor) and cpu.requires_grad:
            assert dev.grad is not None
            grad_tol = (grad_tols or {}).get(index, tol)
            torch.testing.assert_close(dev.grad.cpu().float(), cpu.grad, **grad_tol)


def sdpa(*args, **kwargs):
    return F.scaled_dot_product_attention(*args, **kwargs)


# ---------------------------------------------------------------- attention


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("length", [128, 130])
def test_sdpa_workload_heads(dtype, causal, length):
    """bert/gpt2 heads: head dim 64, sequence 128 (one key block) and 130 (a second one)."""
    torch.manual_seed(31)
    q, k, v = (torch.randn(2, 4, length, 64) for _ in range(3))
    compare(lambda q, k, v: sdpa(q, k, v, is_causal=causal), q, k, v, dtype=dtype)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_sdpa_gqa_causal_llama_layout(dtype):
    """llama: 4 query heads over 2 key/value heads, causal, [B, L, H, E] transposed views."""
    torch.manual_seed(32)
    q = torch.randn(2, 150, 4, 64)
    k, v = torch.randn(2, 150, 2, 64), torch.randn(2, 150, 2, 64)
    compare(
        lambda q, k, v: sdpa(
            q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2), is_causal=True, enable_gqa=True
        ),
        q,
        k,
        v,
        dtype=dtype,
    )


@pytest.mark.parametrize("lengths", [(70, 300), (200, 70), (1, 129)])
def test_sdpa_causal_cross_lengths(lengths):
    """Causal with L != S is top-left aligned; key blocks past the last row are skipped."""
    torch.manual_seed(33)
    q_len, kv_len = lengths
    q = torch.randn(2, 2, q_len, 32)
    k, v = torch.randn(2, 2, kv_len, 32), torch.randn(2, 2, kv_len, 48)
    compare(lambda q, k, v: sdpa(q, k, v, is_causal=True), q, k, v)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_sdpa_masks_across_blocks(dtype):
    torch.manual_seed(34)
    q, k, v = torch.randn(2, 2, 70, 64), torch.randn(2, 2, 200, 64), torch.randn(2, 2, 200, 64)
    keep = torch.rand(2, 1, 70, 200) > 0.3
    keep[..., 0] = True  # no fully masked rows (CPU's math path gives NaN there)
    compare(lambda q, k, v, m: sdpa(q, k, v, attn_mask=m), q, k, v, keep, dtype=dtype)
    # An additive mask that needs its own gradient.
    bias = torch.randn(1, 2, 70, 200)
    compare(lambda q, k, v, m: sdpa(q, k, v, attn_mask=m), q, k, v, bias, dtype=dtype)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
@pytest.mark.parametrize(
    "q_len, kv_len, causal, with_bias",
    [(6, 6, True, False), (200, 200, True, False), (64, 300, False, True), (3, 6, False, True)],
)
def test_sdpa_16bit_gradients_rounded_once(dtype, q_len, kv_len, causal, with_bias):
    """16-bit gradients are the float64 gradients of the same inputs rounded once: within half
    an ulp of each element plus 5e-6 of the largest (fp32 sums over up to 300 keys of values
    near 8 reach 2e-6, measured). Where a gradient cancels to
    near 0 (a causal row that sees one key), the softmax correction rowsum(dO * O) taken from
    the rounded O was off by an ulp of O's magnitude (measured 1e-4 to 3e-3 of the largest
    element, as CPU's flash kernel still is); with one and with several key blocks. P is
    recomputed as exp(s - lse), which carries lse's fp32 rounding as one relative error per row
    (the bias makes lse large, and values with a common offset make that error count); rows
    are normalized by their own sum to remove it."""
    torch.manual_seed(35)
    tensors = [torch.randn(2, 2, q_len, 32), torch.randn(2, 2, kv_len, 32)]
    # Values with a common offset make D large against the spread of dP.
    tensors.append(torch.randn(2, 2, kv_len, 32) + (8 if with_bias else 0))
    if with_bias:
        tensors.append(4 * torch.randn(1, 2, q_len, kv_len) + 8)  # a large logsumexp
    tensors = [t.to(dtype) for t in tensors]
    grad_out = torch.randn(2, 2, q_len, 32).to(dtype)

    def gradients(device, compute_dtype):
        xs = [t.to(device, compute_dtype).requires_grad_() for t in tensors]
        bias = xs[3] if with_bias else None
        out = sdpa(xs[0], xs[1], xs[2], attn_mask=bias, is_causal=causal)
        grads = torch.autograd.grad(out, xs, grad_out.to(device, compute_dtype))
        return [g.cpu().double() for g in grads]

    half_ulp = {torch.float16: 2.0**-11, torch.bfloat16: 2.0**-8}[dtype]
    openneuron.clear_op_tracking()
    for got, exact in zip(gradients(DEVICE, dtype), gradients("cpu", torch.float64), strict=True):
        excess = (got - exact).abs() - half_ulp * exact.abs()
        assert excess.max() <= 5e-6 * exact.abs().max(), excess.max() / exact.abs().max()
    assert our_fallbacks() == {}, openneuron.get_fallback_ops()


# ---------------------------------------------------------------- layer / RMS norm


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_layer_norm_workload_rows(dtype):
    """bert/gpt2 layer norm: [B, 128, 256] rows with weight and bias."""
    torch.manual_seed(35)
    x = torch.randn(4, 128, 256) * 2 + 0.5
    compare(
        lambda x, w, b: F.layer_norm(x, (256,), w, b),
        x,
        torch.rand(256) + 0.5,
        torch.randn(256),
        dtype=dtype,
        grad_tols={1: COLUMN_SUM_TOL[dtype], 2: COLUMN_SUM_TOL[dtype]},
    )


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_layer_norm_strided_rows_and_odd_lengths(dtype):
    torch.manual_seed(36)
    x = torch.randn(3, 50, 300)
    # Rows of 257 elements spaced 300 apart (a slice), and a row length that is no multiple of 16.
    compare(
        lambda x, w: F.layer_norm(x[..., :257], (257,), w),
        x,
        torch.rand(257) + 0.5,
        dtype=dtype,
        grad_tols={1: COLUMN_SUM_TOL[dtype]},
    )
    compare(lambda x: F.layer_norm(x, (33,)), torch.randn(7, 33), dtype=dtype)


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_rms_norm_workload_rows(dtype):
    torch.manual_seed(37)
    x = torch.randn(4, 130, 256)
    compare(
        lambda x, w: F.rms_norm(x, (256,), w, eps=1e-6),
        x,
        torch.rand(256) + 0.5,
        dtype=dtype,
        grad_tols={1: COLUMN_SUM_TOL[dtype]},
    )
