"""nisa.tensor_scalar_reduce is one Vector instruction (a tensor_scalar whose rows are also
reduced), in both API generations, against NumPy; its reduce_res must be one value a row."""

import numpy as np
import pytest

import openneuron.nki as nki
import openneuron.nki.isa as nisa
import openneuron.nki.language as nl
import openneuron.nki.legacy.nki as older
from openneuron.nki import trace as tr
from openneuron.nki.errors import KernelRuleError
from openneuron.nki.legacy.nki import isa as older_isa
from openneuron.nki.legacy.nki import language as older_nl

rng = np.random.default_rng(5)


def _scaled_with_row_max(reduce_shape):
    @nki.jit
    def kernel(x, scale):
        out = nl.ndarray(x.shape, dtype=nl.bfloat16, buffer=nl.shared_hbm)
        maxima = nl.ndarray((x.shape[0], 1), dtype=nl.float32, buffer=nl.shared_hbm)
        data = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=data, src=x)
        factor = nl.ndarray((x.shape[0], 1), dtype=x.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=factor, src=scale)
        scaled = nl.ndarray(x.shape, dtype=nl.bfloat16, buffer=nl.sbuf)
        row_max = nl.ndarray(reduce_shape, dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_scalar_reduce(
            dst=scaled,
            data=data,
            op0=nl.multiply,
            operand0=factor,
            reduce_op=nl.maximum,
            reduce_res=row_max,
        )
        nisa.dma_copy(dst=out, src=scaled)
        nisa.dma_copy(dst=maxima, src=row_max[:, 0:1])
        return out, maxima

    return kernel


def test_one_instruction_scales_and_reduces_each_row():
    x = rng.standard_normal((64, 300), dtype=np.float32)
    scale = rng.standard_normal((64, 1), dtype=np.float32)
    result = nki.estimate(_scaled_with_row_max((64, 1)), x, scale, execute=True)
    out, maxima = result.outputs
    opcodes = [opcode for opcode, _, _ in result.traces[0].instructions]
    assert opcodes.count(tr.TENSOR_SCALAR) == 1 and tr.TENSOR_REDUCE not in opcodes
    expected = x * scale
    np.testing.assert_array_equal(np.asarray(out, np.float32), expected.astype(out.dtype))
    # The rows are reduced in fp32, before the result is rounded to bf16.
    np.testing.assert_array_equal(maxima[:, 0], expected.max(axis=1))


def test_reduce_res_must_hold_one_value_a_row():
    x = np.zeros((64, 32), np.float32)
    with pytest.raises(KernelRuleError, match="reduce_res"):
        nki.simulate(_scaled_with_row_max((64, 2)))(x, np.ones((64, 1), np.float32))


def test_the_older_generation_returns_the_tile_and_fills_reduce_res():
    @older.jit
    def kernel(x):
        out = older_nl.ndarray(x.shape, dtype=x.dtype, buffer=older_nl.shared_hbm)
        sums = older_nl.ndarray((x.shape[0], 1), dtype=x.dtype, buffer=older_nl.shared_hbm)
        total = older_nl.ndarray((older_nl.par_dim(x.shape[0]), 1), dtype=x.dtype)
        shifted = older_isa.tensor_scalar_reduce(
            data=older_nl.load(x), op0=np.add, operand0=1.5, reduce_op=np.add, reduce_res=total
        )
        older_nl.store(out, value=shifted)
        older_nl.store(sums, value=total)
        return out, sums

    x = rng.standard_normal((32, 48), dtype=np.float32)
    out, sums = older.simulate_kernel(kernel, x)
    np.testing.assert_array_equal(out, x + np.float32(1.5))
    np.testing.assert_allclose(sums[:, 0], (x + np.float32(1.5)).sum(axis=1), rtol=1e-5)
