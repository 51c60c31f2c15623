"""Pieces AWS's NKI Library kernels rely on, each against NumPy: nisa.nc_stream_shuffle,
dma_transpose from SBUF with axes, core_barrier, nl.abs as an ALU operator, nl.copy as an
activation, nl.ndarray(address=), NKIObject dataclasses and the neuronxcc.nki name."""

from dataclasses import dataclass

import numpy as np
import pytest

import openneuron.nki as nki
from openneuron.nki import isa as nisa
from openneuron.nki import language as nl
from openneuron.nki.errors import KernelRuleError, KernelTraceError
from openneuron.nki.kernel import CompiledLaunch, Kernel

MASK = [(i * 5 + 2) % 32 for i in range(32)]
MASK[3] = 255  # keeps what dst held


@nki.jit
def shuffle(x, before):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    src = nl.load(x)
    dst = nl.load(before)
    nisa.nc_stream_shuffle(dst=dst, src=src, shuffle_mask=MASK)
    broadcast = nl.ndarray((32, x.shape[1]), dtype=x.dtype, buffer=nl.sbuf)
    nisa.nc_stream_shuffle(dst=broadcast, src=src[0:1, :], shuffle_mask=[0] * 32)
    nl.store(out, dst)
    copies = nl.ndarray((32, x.shape[1]), dtype=x.dtype, buffer=nl.shared_hbm)
    nl.store(copies, broadcast)
    return out, copies


@pytest.mark.parametrize("reference", [False, True])
def test_stream_shuffle_matches_numpy(reference):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((64, 7)).astype(np.float32)
    before = rng.standard_normal((64, 7)).astype(np.float32)
    compiled = CompiledLaunch(Kernel(shuffle.func), (x, before), {}, "trn2")
    result, _ = compiled.run((x, before), reference=reference)
    got, copies = result.outputs
    expected = before.copy()
    for d in range(64):
        if MASK[d % 32] != 255:
            expected[d] = x[d // 32 * 32 + MASK[d % 32]]
    np.testing.assert_array_equal(got, expected)
    np.testing.assert_array_equal(copies, np.broadcast_to(x[0], (32, 7)))


def test_stream_shuffle_rejects_a_bad_mask():
    @nki.jit
    def kernel(x):
        t = nl.load(x)
        nisa.nc_stream_shuffle(dst=t, src=t, shuffle_mask=[40] * 32)
        return t

    with pytest.raises(KernelTraceError, match=r"\[bad-operand\].*shuffle_mask"):
        nki.simulate(kernel)(np.ones((32, 4), np.float32))


@pytest.mark.parametrize("reference", [False, True])
def test_dma_transpose_from_sbuf_with_axes(reference):
    @nki.jit
    def kernel(x):
        p, a, b, c = x.shape
        out = nl.ndarray((c, a, b, p), dtype=x.dtype, buffer=nl.shared_hbm)
        src = nl.ndarray((p, a, b, c), dtype=x.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=src, src=x)
        dst = nl.ndarray((c, a, b, p), dtype=x.dtype, buffer=nl.sbuf)
        nisa.dma_transpose(dst=dst, src=src, axes=(3, 1, 2, 0))
        nisa.dma_copy(dst=out, src=dst)
        return out

    x = np.random.default_rng(1).standard_normal((24, 1, 3, 40)).astype(np.float32)
    compiled = CompiledLaunch(Kernel(kernel.func), (x,), {}, "trn2")
    result, _ = compiled.run((x,), reference=reference)
    np.testing.assert_array_equal(result.outputs, np.transpose(x, (3, 1, 2, 0)))


def test_core_barrier_in_one_and_two_program_launches():
    @nki.jit
    def kernel(x):
        out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
        nl.store(out, nl.load(x))
        nisa.core_barrier(out, (0, 1))
        return out

    x = np.arange(8, dtype=np.float32).reshape(2, 4)
    np.testing.assert_array_equal(nki.simulate(kernel)(x), x)
    np.testing.assert_array_equal(nki.simulate(kernel[2])(x), x)


def test_abs_as_alu_operator_copy_as_activation_and_address():
    @nki.jit
    def kernel(x):
        out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
        t = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.sbuf, address=(0, 1024))
        nisa.dma_copy(dst=t, src=x)
        a = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.sbuf)
        nisa.tensor_scalar(dst=a, data=t, op0=nl.abs, operand0=0.0)
        c = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.sbuf)
        nisa.activation(dst=c, op=nl.copy, data=a, scale=0.5)
        nl.store(out, c)
        return out

    x = np.random.default_rng(2).standard_normal((16, 9)).astype(np.float32)
    np.testing.assert_array_equal(nki.simulate(kernel)(x), np.abs(x) * 0.5)


def test_nki_object_dataclass_takes_plain_attributes_and_neuronxcc_name():
    @dataclass
    class Params(nl.NKIObject):
        index = None
        size = 4

        def twice(self):
            return 2 * self.size

    params = Params(index=3, size=5)
    assert (params.index, params.size, params.twice()) == (3, 5, 10)
    assert Params().size == 4

    import neuronxcc.nki.typing as nt

    assert issubclass(nt.mutable_tensor, nt.tensor)


def test_shuffle_of_wrong_dtype_is_a_rule_error():
    @nki.jit
    def kernel(x):
        out = nl.ndarray(x.shape, dtype=nl.bfloat16, buffer=nl.shared_hbm)
        u = nl.ndarray(x.shape, dtype=nl.bfloat16, buffer=nl.sbuf)
        nisa.nc_stream_shuffle(dst=u, src=nl.load(x), shuffle_mask=list(range(32)))
        nl.store(out, u)
        return out

    with pytest.raises(KernelRuleError, match=r"\[dtype\]"):
        nki.simulate(kernel)(np.ones((32, 4), np.float32))
