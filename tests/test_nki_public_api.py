"""Keywords and older spellings AWS's public kernels use, each in a small kernel of our own:
the current API's extra keywords (tensor_copy's dtype, full's lazy_initialization, reshape's
shape=) and the older ``neuronxcc.nki`` generation."""

import ml_dtypes
import numpy as np
import pytest

import openneuron.nki as nki
from openneuron.nki import isa as nisa
from openneuron.nki import language as nl
from openneuron.nki.errors import KernelTraceError


def test_tensor_copy_takes_dtype_equal_to_its_destination():
    @nki.jit
    def evacuate(a_t, b):
        out = nl.ndarray((a_t.shape[1], b.shape[1]), dtype=nl.float32, buffer=nl.shared_hbm)
        acc = nl.ndarray(out.shape, dtype=nl.float32, buffer=nl.psum)
        nisa.nc_matmul(acc, nl.load(a_t), nl.load(b))
        res = nl.ndarray(out.shape, dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_copy(dst=res, src=acc, dtype=nl.float32)
        nl.store(out, res)
        return out

    rng = np.random.default_rng(1)
    a_t, b = rng.random((32, 8), np.float32), rng.random((32, 16), np.float32)
    np.testing.assert_allclose(nki.simulate(evacuate)(a_t, b), a_t.T @ b, rtol=1e-5)


def test_tensor_copy_dtype_narrower_than_destination_rounds_through_it():
    @nki.jit
    def through_bf16(x):
        out = nl.ndarray(x.shape, dtype=nl.float32, buffer=nl.shared_hbm)
        wide = nl.ndarray(x.shape, dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_copy(dst=wide, src=nl.load(x), dtype=nl.bfloat16)
        nl.store(out, wide)
        return out

    x = np.random.default_rng(2).standard_normal((16, 32)).astype(np.float32)
    rounded = x.astype(ml_dtypes.bfloat16).astype(np.float32)
    got = nki.simulate(through_bf16)(x)
    np.testing.assert_array_equal(got, rounded)
    assert not np.array_equal(got, x)


def test_full_accepts_lazy_initialization_and_still_fills():
    @nki.jit
    def filled(x):
        out = nl.ndarray(x.shape, dtype=nl.float32, buffer=nl.shared_hbm)
        acc = nl.zeros(x.shape, dtype=nl.float32, buffer=nl.sbuf, lazy_initialization=True)
        twos = nl.full(x.shape, 2.0, dtype=nl.float32, lazy_initialization=False)
        nl.store(out, nl.add(nl.add(acc, twos), nl.load(x)))
        return out

    x = np.random.default_rng(3).random((8, 4), np.float32)
    np.testing.assert_array_equal(nki.simulate(filled)(x), x + 2)


def test_reshape_takes_shape_as_a_keyword():
    @nki.jit
    def flatten(x):
        out = nl.ndarray((x.shape[0] * x.shape[1], x.shape[2]), dtype=x.dtype, buffer=nl.shared_hbm)
        flat_in = x.reshape(shape=(x.shape[0] * x.shape[1], x.shape[2]))
        nl.store(out, nl.load(flat_in))
        return out

    x = np.random.default_rng(4).random((2, 8, 4), np.float32)
    np.testing.assert_array_equal(nki.simulate(flatten)(x), x.reshape(16, 4))

    @nki.jit
    def wrong(x):
        x.reshape(size=(4, 4))

    with pytest.raises(KernelTraceError, match=r"\[unknown-argument\] reshape\(\)"):
        nki.simulate(wrong)(np.zeros((2, 8), np.float32))


def test_matmul_stages_a_transposed_operand_held_in_psum():
    @nki.jit
    def gram(x):
        out = nl.ndarray((x.shape[1], x.shape[1]), dtype=nl.float32, buffer=nl.shared_hbm)
        tile = nl.load(x)
        flipped = nl.transpose(nl.transpose(tile))  # PSUM, as the attention tutorial's
        nl.store(out, nl.copy(nl.matmul(flipped, tile, transpose_x=True)))
        return out

    x = np.random.default_rng(5).random((32, 16), np.float32)
    np.testing.assert_allclose(nki.simulate(gram)(x), x.T @ x, rtol=1e-5)
