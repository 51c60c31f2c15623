"""Sample NKI kernels on the simulated NeuronCore against PyTorch on CPU, across shapes and
dtypes. Errors are relative to the reference's largest magnitude. Measured: fp32 <= 1.2e-6
(softmax), bf16 <= 3.2e-3 (layernorm; bf16 results round once, step 2^-8), so the tolerances
are 1e-5 and 1e-2."""

import numpy as np
import pytest
import torch
import torch.nn.functional as F

import openneuron.nki as nki
from bench.nki.matmul_kernels import VARIANTS
from examples.nki.attention import flash_attention_forward
from examples.nki.elementwise import tensor_add
from examples.nki.matmul import matmul
from examples.nki.norms import layernorm, rmsnorm
from examples.nki.softmax import softmax

DTYPES = {"float32": (torch.float32, 1e-5), "bfloat16": (torch.bfloat16, 1e-2)}


def random(shape, dtype, seed):
    generator = torch.Generator().manual_seed(seed)
    return torch.randn(shape, generator=generator).to(dtype)


def check(got, expected, tolerance):
    """Relative to the reference's magnitude (bf16 rounds relative to each value)."""
    got = torch.as_tensor(got).float()
    expected = expected.float()
    assert got.shape == expected.shape
    scale = expected.abs().max().clamp(min=1.0)
    error = (got - expected).abs().max() / scale
    assert error <= tolerance, f"max error {error:.3g} > {tolerance}"


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(128, 64), (300, 200)])
def test_tensor_add(dtype, shape):
    torch_dtype, tolerance = DTYPES[dtype]
    a, b = random(shape, torch_dtype, 1), random(shape, torch_dtype, 2)
    got = nki.simulate(tensor_add)(a, b)
    assert got.dtype == torch_dtype
    check(got, (a.float() + b.float()).to(torch_dtype), tolerance)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(128, 128, 256), (256, 384, 1024)])
def test_matmul(dtype, shape):
    torch_dtype, tolerance = DTYPES[dtype]
    m, k, n = shape
    a, b = random((m, k), torch_dtype, 3), random((k, n), torch_dtype, 4)
    got = nki.simulate(matmul)(a, b)
    check(got, a.float() @ b.float(), tolerance)


@pytest.mark.parametrize("name", list(VARIANTS))
def test_tutorial_matmul_variants(name):
    lhs_t, rhs = random((1024, 256), torch.float32, 5), random((1024, 2048), torch.float32, 6)
    got = nki.simulate(VARIANTS[name])(lhs_t, rhs)
    check(got, lhs_t.T @ rhs, 1e-5)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(128, 512), (200, 300)])
def test_softmax(dtype, shape):
    torch_dtype, tolerance = DTYPES[dtype]
    x = random(shape, torch_dtype, 7) * 3
    check(nki.simulate(softmax)(x), torch.softmax(x.float(), -1), tolerance)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(128, 256), (200, 1000)])
def test_layernorm(dtype, shape):
    torch_dtype, tolerance = DTYPES[dtype]
    x = random(shape, torch_dtype, 8)
    weight, bias = random(shape[1:], torch.float32, 9), random(shape[1:], torch.float32, 10)
    got = nki.simulate(layernorm)(x, weight, bias)
    check(got, F.layer_norm(x.float(), shape[1:], weight, bias), tolerance)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(128, 256), (260, 96)])
def test_rmsnorm(dtype, shape):
    torch_dtype, tolerance = DTYPES[dtype]
    x = random(shape, torch_dtype, 11)
    weight = random(shape[1:], torch.float32, 12)
    got = nki.simulate(rmsnorm)(x, weight)
    check(got, F.rms_norm(x.float(), shape[1:], weight, eps=1e-6), tolerance)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("shape", [(128, 64), (384, 128)])
def test_flash_attention_forward(dtype, causal, shape):
    torch_dtype, tolerance = DTYPES[dtype]
    q, k, v = (random(shape, torch_dtype, 13 + i) for i in range(3))
    got = nki.simulate(flash_attention_forward)(q, k, v, causal=causal)
    expected = F.scaled_dot_product_attention(
        q.float()[None], k.float()[None], v.float()[None], is_causal=causal
    )[0]
    check(got, expected, tolerance)


def test_the_comparison_catches_a_wrong_kernel():
    """A softmax that forgets to normalise must fail the same check the real one passes."""
    import nki as nki_alias
    import nki.isa as nisa
    import nki.language as nl

    @nki_alias.jit
    def unnormalised_softmax(x):
        out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
        tile = nl.load(x)
        exps = nl.ndarray(x.shape, dtype=nl.float32, buffer=nl.sbuf)
        nisa.activation(dst=exps, op=nl.exp, data=tile)
        nl.store(out, exps)
        return out

    x = random((64, 32), torch.float32, 20)
    with pytest.raises(AssertionError, match="max error"):
        check(nki.simulate(unnormalised_softmax)(x), torch.softmax(x, -1), 2e-5)


def test_fast_executor_matches_reference_interpreter():
    """The same kernels through the reference interpreter give identical bytes."""
    x = random((130, 96), torch.float32, 21)
    weight = random((96,), torch.float32, 22)
    q, k, v = (random((128, 32), torch.bfloat16, 23 + i) for i in range(3))
    for kernel, args in [
        (rmsnorm, (x, weight)),
        (softmax, (x,)),
        (flash_attention_forward, (q, k, v)),
    ]:
        fast = nki.kernel.launch(kernel, args, {}, reference=False).outputs
        reference = nki.kernel.launch(kernel, args, {}, reference=True).outputs
        assert np.array_equal(np.asarray(fast).view(np.uint8), np.asarray(reference).view(np.uint8))
