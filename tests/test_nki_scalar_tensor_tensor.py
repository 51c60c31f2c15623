"""nisa.scalar_tensor_tensor, the two-step (data op0 scalar) op1 tile instruction, when its
destination is also its tile operand: the accumulation ``acc = psum * scale + acc`` that the
NKI Library's attention backward uses for dQ."""

import numpy as np
import pytest

import openneuron.nki as nki
from openneuron.nki import isa as nisa
from openneuron.nki import language as nl


@nki.jit
def accumulate_kernel(acc_in, data, scale):
    out = nl.ndarray(acc_in.shape, dtype=acc_in.dtype, buffer=nl.shared_hbm)
    acc = nl.load(acc_in)
    nisa.scalar_tensor_tensor(
        dst=acc, data=nl.load(data), op0=nl.multiply, operand0=scale, op1=nl.add, operand1=acc
    )
    nl.store(out, acc)
    return out


@pytest.mark.parametrize("reference", [False, True])
@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_scalar_tensor_tensor_accumulates_into_its_own_operand(reference, dtype):
    rng = np.random.default_rng(21)
    acc = rng.standard_normal((32, 48)).astype(dtype)
    data = rng.standard_normal((32, 48)).astype(np.float32)
    result = nki.kernel.launch(accumulate_kernel, (acc, data, 0.5), {}, reference=reference)
    expected = (data * np.float32(0.5) + acc.astype(np.float32)).astype(dtype)
    np.testing.assert_array_equal(result.outputs, expected)
