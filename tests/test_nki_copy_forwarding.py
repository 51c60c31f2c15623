"""Tile assignment without its copy, and dead PSUM zero-fills dropped (copy_forwarding.py): each
kernel runs with and without the rewrite, and the outputs must agree bit for bit while the
instruction count falls where the rewrite applies and stays where it must not."""

import numpy as np
import pytest

import openneuron.nki.kernel as kernel_module
import openneuron.nki.legacy.nki as nki
from openneuron.nki import copy_forwarding
from openneuron.nki import trace as tr
from openneuron.nki.legacy.nki import isa as nisa
from openneuron.nki.legacy.nki import language as nl

rng = np.random.default_rng(11)


def _run(make_kernel, *arrays, forwarding=True, monkeypatch=None):
    """(outputs, opcode counts) of a freshly made kernel, with or without the rewrite."""
    if not forwarding:
        monkeypatch.setattr(kernel_module, "forward_copies", lambda trace: None)
    result = nki.estimate(make_kernel(), *arrays, execute=True)
    if not forwarding:
        monkeypatch.undo()
    counts = {}
    for opcode, _, _ in result.traces[0].instructions:
        counts[opcode] = counts.get(opcode, 0) + 1
    outputs = result.outputs if isinstance(result.outputs, tuple) else (result.outputs,)
    return [np.asarray(o) for o in outputs], counts


def _compare(make_kernel, arrays, monkeypatch):
    forwarded, after = _run(make_kernel, *arrays)
    plain, before = _run(make_kernel, *arrays, forwarding=False, monkeypatch=monkeypatch)
    for got, expected in zip(forwarded, plain, strict=True):
        assert got.dtype == expected.dtype
        np.testing.assert_array_equal(got.view(np.uint8), expected.view(np.uint8))
    return forwarded, before, after


def _exp_into_slices():
    @nki.jit
    def kernel(x):
        out = nl.ndarray((128, 256), dtype=x.dtype, buffer=nl.shared_hbm)
        tile = nl.ndarray((nl.par_dim(128), 256), dtype=x.dtype, buffer=nl.sbuf)
        data = nl.load(x)
        tile[:, 0:128] = nl.exp(data[:, 0:128])
        tile[:, 128:256] = nisa.activation(np.tanh, data=data[:, 128:256])
        nl.store(out, value=tile)
        return out

    return kernel


def test_an_assigned_result_is_written_in_place(monkeypatch):
    x = rng.standard_normal((128, 256), dtype=np.float32)
    (out,), before, after = _compare(_exp_into_slices, [x], monkeypatch)
    assert before[tr.TENSOR_COPY] == 2 and after.get(tr.TENSOR_COPY, 0) == 0
    np.testing.assert_allclose(out[:, :128], np.exp(x[:, :128]), rtol=2e-6)
    np.testing.assert_allclose(out[:, 128:], np.tanh(x[:, 128:]), rtol=2e-6, atol=1e-7)


def _reused_result():
    @nki.jit
    def kernel(x):
        out = nl.ndarray((2, 128, 64), dtype=x.dtype, buffer=nl.shared_hbm)
        tile = nl.ndarray((nl.par_dim(128), 64), dtype=x.dtype, buffer=nl.sbuf)
        value = nl.exp(nl.load(x))
        tile[...] = value
        nl.store(out[0], value=tile)
        nl.store(out[1], value=value + 1.0)  # read again: the copy must stay
        return out

    return kernel


def test_a_result_read_again_keeps_its_copy(monkeypatch):
    x = rng.standard_normal((128, 64), dtype=np.float32)
    (out,), before, after = _compare(_reused_result, [x], monkeypatch)
    assert before[tr.TENSOR_COPY] == after[tr.TENSOR_COPY] == 1
    np.testing.assert_allclose(out[1], out[0] + 1.0, rtol=1e-6)


def _shift_in_place():
    @nki.jit
    def kernel(x):
        out = nl.ndarray((128, 64), dtype=x.dtype, buffer=nl.shared_hbm)
        tile = nl.load(x)
        # Reads the tile it is assigned into: writing it in place would read shifted values.
        tile[:, 1:64] = nl.add(tile[:, 0:63], 1.0)
        nl.store(out, value=tile)
        return out

    return kernel


def test_a_result_computed_from_its_own_destination_keeps_its_copy(monkeypatch):
    x = rng.standard_normal((128, 64), dtype=np.float32)
    (out,), before, after = _compare(_shift_in_place, [x], monkeypatch)
    assert before[tr.TENSOR_COPY] == after[tr.TENSOR_COPY] == 1
    np.testing.assert_array_equal(out[:, 1:], x[:, :63] + np.float32(1.0))


def _narrow_then_wide():
    @nki.jit
    def kernel(x):
        out = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.shared_hbm)
        wide = nl.ndarray((nl.par_dim(128), 64), dtype=nl.float32, buffer=nl.sbuf)
        # exp rounded to bf16, then widened: written straight to fp32 it would keep its bits.
        wide[...] = nl.exp(nl.load(x), dtype=nl.bfloat16)
        nl.store(out, value=wide)
        return out

    return kernel


def test_a_narrower_result_keeps_its_rounding(monkeypatch):
    x = rng.standard_normal((128, 64), dtype=np.float32)
    (out,), before, after = _compare(_narrow_then_wide, [x], monkeypatch)
    assert before[tr.TENSOR_COPY] == after[tr.TENSOR_COPY] == 1
    assert np.all(out.view(np.uint32) & 0xFFFF == 0)  # bf16 values


def test_the_differential_check_catches_a_wrong_rewrite(monkeypatch):
    """With the dtype rule switched off, the bf16 result is written to fp32 unrounded and the
    comparison above fails: the check can tell a wrong rewrite."""
    monkeypatch.setattr(copy_forwarding, "_rounds_alike", lambda *args: True)
    x = rng.standard_normal((128, 64), dtype=np.float32)
    (wrong,), _ = _run(_narrow_then_wide, x)
    (right,), _ = _run(_narrow_then_wide, x, forwarding=False, monkeypatch=monkeypatch)
    assert not np.array_equal(wrong, right)


def _zeros_then_matmuls(partial):
    @nki.jit
    def kernel(a, b):
        out = nl.ndarray((128, 128), dtype=nl.float32, buffer=nl.shared_hbm)
        acc = nl.zeros((nl.par_dim(128), 128), dtype=nl.float32, buffer=nl.psum)
        for k in nl.affine_range(2):
            lhs = nl.load(a[k * 128 : (k + 1) * 128, :])
            rhs = nl.load(b[k * 128 : (k + 1) * 128, :])
            if partial:  # only half the tile is overwritten: the zeros stay needed
                acc[:, 0:64] += nisa.nc_matmul(lhs, rhs[:, 0:64])
            else:
                acc += nisa.nc_matmul(lhs, rhs)
        nl.store(out, value=nl.copy(acc))
        return out

    return lambda: kernel


@pytest.mark.parametrize("partial", [False, True])
def test_a_zero_fill_the_first_matmul_overwrites_is_dropped(partial, monkeypatch):
    a = rng.standard_normal((256, 128), dtype=np.float32)
    b = rng.standard_normal((256, 128), dtype=np.float32)
    (out,), before, after = _compare(_zeros_then_matmuls(partial), [a, b], monkeypatch)
    assert before[tr.MEMSET] == 1
    assert after.get(tr.MEMSET, 0) == (1 if partial else 0)
    expected = a.T.astype(np.float64) @ b.astype(np.float64)
    if partial:
        expected[:, 64:] = 0
    np.testing.assert_allclose(out, expected, rtol=1e-4, atol=1e-3)
