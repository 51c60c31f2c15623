"""Compiled fusion patterns against the accuracy rule (tests/accuracy_rule.py): eager and compiled
results, forward and gradients, both compared with a float64 run of the same function on the CPU.

Each pattern is one the compiler fuses (a GEMM with its bias, activation, residual add or cast; a
batched GEMM with its scale and mask; a convolution with its bias, relu and residual add): the
tests check that the fusion happened, that it meets the rule in fp32 and bf16, and that a
deliberately wrong fused kernel (OPENNEURON_COMPILE_FAULT: a dropped bias, a mis-scaled product,
a skipped epilogue that drops the mask) fails it.
"""

import os
import sys

import pytest
import torch
import torch.nn.functional as F

import openneuron

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from tests.accuracy_rule import accuracy_problem, assert_accurate  # noqa: E402
from tests.compile_fixtures import fresh_compiler  # noqa: E402, F401


def linear_gelu(x, w, b, r):
    return F.gelu(F.linear(x, w, b))


def linear_gelu_tanh(x, w, b, r):
    return F.gelu(F.linear(x, w, b), approximate="tanh")


def linear_silu(x, w, b, r):
    return F.silu(F.linear(x, w, b))


def linear_residual(x, w, b, r):
    return F.linear(x, w, b) * 0.5 + r


def linear_relu_cast(x, w, b, r):
    other = torch.bfloat16 if x.dtype != torch.bfloat16 else torch.float32
    return torch.relu(F.linear(x, w, b)).to(other)


def attention(q, k, v, mask):
    scores = q @ k.transpose(-2, -1) * (q.shape[-1] ** -0.5) + mask
    return scores.softmax(-1) @ v


def conv_relu_residual(x, w, b, r):
    return torch.relu(F.conv2d(x, w, b, padding=1)) + x


def linear_inputs(dtype):
    return [
        torch.randn(6, 7, 48, dtype=dtype, requires_grad=True),
        (torch.randn(64, 48) / 7).to(dtype).requires_grad_(),
        torch.randn(64, dtype=dtype, requires_grad=True),
        torch.randn(6, 7, 64, dtype=dtype, requires_grad=True),
    ]


def attention_inputs(dtype):
    qkv = [torch.randn(2, 4, 24, 16, dtype=dtype, requires_grad=True) for _ in range(3)]
    return qkv + [torch.randn(2, 1, 24, 24, dtype=dtype)]


def conv_inputs(dtype):
    return [
        torch.randn(2, 8, 12, 12, dtype=dtype, requires_grad=True),
        (torch.randn(8, 8, 3, 3) / 8).to(dtype).requires_grad_(),
        torch.randn(8, dtype=dtype, requires_grad=True),
        torch.zeros(1, dtype=dtype),
    ]


# name: (function, inputs, the compile metric that shows the fusion fired)
PATTERNS = {
    "linear_gelu": (linear_gelu, linear_inputs, "gemm_epilogues"),
    "linear_gelu_tanh": (linear_gelu_tanh, linear_inputs, "gemm_epilogues"),
    "linear_silu": (linear_silu, linear_inputs, "gemm_epilogues"),
    "linear_residual": (linear_residual, linear_inputs, "gemm_epilogues"),
    "linear_relu_cast": (linear_relu_cast, linear_inputs, "gemm_epilogues"),
    "attention_scale_mask": (attention, attention_inputs, "bmm_epilogues"),
    "conv_relu_residual": (conv_relu_residual, conv_inputs, "conv_epilogues"),
}


def results_of(fn, inputs, grad):
    """Forward result and (with `grad`) the gradient of every input that wants one, on the CPU."""
    if not grad:
        with torch.no_grad():
            return [fn(*inputs).cpu()]
    for t in inputs:
        t.grad = None
    y = fn(*inputs)
    wide = y.to(torch.promote_types(y.dtype, torch.float32))
    (wide * wide).sum().backward()
    grads = [t.grad for t in inputs if t.requires_grad]
    return [y.detach().cpu()] + [g.cpu() if g is not None else torch.zeros(0) for g in grads]


def on(device, tensors, dtype=None):
    return [
        t.detach().to(device, dtype or t.dtype).requires_grad_(t.requires_grad) for t in tensors
    ]


def run_three_ways(name, dtype, options=None, grad=True):
    """(eager, compiled, float64) results of pattern `name`, from fresh compiles and metrics."""
    fn, make_inputs, _ = PATTERNS[name]
    torch._dynamo.reset()
    openneuron.reset_compile_metrics()
    torch.manual_seed(0)
    cpu = make_inputs(dtype)
    eager = results_of(fn, on("neuron", cpu), grad)
    compiled_fn = torch.compile(fn, backend="neuron", options=options or {})
    compiled = results_of(compiled_fn, on("neuron", cpu), grad)
    float64 = results_of(fn, on("cpu", cpu, torch.float64), grad)
    return eager, compiled, float64


def fused(name) -> bool:
    return openneuron.compile_metrics()[PATTERNS[name][2]] >= 1


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("name", list(PATTERNS))
def test_fused_pattern_meets_the_float64_rule(name, dtype):
    # Inference: the epilogue holds the whole pattern (training saves the product for the
    # backward, which can keep it out of the epilogue).
    assert_accurate(*run_three_ways(name, dtype, grad=False))
    assert fused(name), "the pattern did not fuse"
    # Training: forward and the gradient of every input.
    assert_accurate(*run_three_ways(name, dtype, grad=True))


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("name", list(PATTERNS))
def test_bitwise_option_equals_eager_bit_for_bit(name, dtype):
    for grad in (False, True):
        eager, compiled, _ = run_three_ways(name, dtype, {"bitwise": True}, grad)
        assert grad or fused(name)
        for e, c in zip(eager, compiled):
            assert torch.equal(e, c), (e.double() - c.double()).abs().max()


@pytest.mark.parametrize(
    "name, fault",
    [
        ("linear_gelu", "drop_bias"),
        ("linear_gelu", "wrong_scale"),
        ("linear_silu", "skip_body"),
        ("linear_residual", "skip_body"),
        ("linear_residual", "wrong_scale"),
        ("linear_relu_cast", "drop_bias"),
        ("attention_scale_mask", "skip_body"),  # the scale and the mask are never applied
        ("conv_relu_residual", "drop_bias"),
        ("conv_relu_residual", "skip_body"),
    ],
)
@pytest.mark.parametrize("bitwise", [False, True])
def test_a_wrong_fused_kernel_fails_the_rule(name, fault, bitwise, monkeypatch):
    monkeypatch.setenv("OPENNEURON_COMPILE_FAULT", fault)
    eager, compiled, float64 = run_three_ways(name, torch.float32, {"bitwise": bitwise}, False)
    assert fused(name)
    problems = [accuracy_problem(e, c, f) for e, c, f in zip(eager, compiled, float64)]
    assert any(problems), f"{fault} in {name} went unnoticed"
    assert not all(torch.equal(e, c) for e, c in zip(eager, compiled))


def test_the_two_modes_never_share_a_cached_program():
    """bitwise is part of the cache key: the second mode compiles its own program."""
    x = torch.randn(8, 16, device="neuron")
    w = torch.randn(16, 16, device="neuron")

    def fn(x, w):
        return torch.relu(x @ w) + 1

    def cache_hits():
        # Any of the three caches may serve a repeat: AOTAutograd's, our memory or disk cache.
        metrics = openneuron.compile_metrics()
        return sum(metrics[k] for k in ("cache_hits_aot", "cache_hits_memory", "cache_hits_disk"))

    torch.compile(fn, backend="neuron")(x, w)
    torch._dynamo.reset()
    torch.compile(fn, backend="neuron", options={"bitwise": False})(x, w)
    assert cache_hits() == 1  # explicit default: same key
    torch._dynamo.reset()
    torch.compile(fn, backend="neuron", options={"bitwise": True})(x, w)
    assert cache_hits() == 1  # the bitwise program is compiled, not served from a cache
