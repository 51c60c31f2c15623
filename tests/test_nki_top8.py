"""nisa.max8 and nisa.nc_find_index8 (the Vector engine's top-8 pair) against NumPy, on both
executors, with duplicates, values that are absent, both index dtypes, and their rules."""

import numpy as np
import pytest

import openneuron.nki as nki
from openneuron.nki import isa as nisa
from openneuron.nki import language as nl
from openneuron.nki.errors import KernelRuleError
from openneuron.nki.kernel import CompiledLaunch, Kernel


def top8_kernel(index_dtype):
    @nki.jit
    def kernel(x, probes):
        rows, cols = x.shape
        values = nl.ndarray((rows, 8), dtype=nl.float32, buffer=nl.shared_hbm)
        found = nl.ndarray((rows, 8), dtype=index_dtype, buffer=nl.shared_hbm)
        missing = nl.ndarray((rows, 8), dtype=index_dtype, buffer=nl.shared_hbm)
        data = nl.load(x)
        top = nl.ndarray((rows, 8), dtype=nl.float32, buffer=nl.sbuf)
        nisa.max8(dst=top, src=data)
        where = nl.ndarray((rows, 8), dtype=index_dtype, buffer=nl.sbuf)
        nisa.nc_find_index8(dst=where, data=data, vals=top)
        absent = nl.ndarray((rows, 8), dtype=index_dtype, buffer=nl.sbuf)
        nisa.nc_find_index8(dst=absent, data=data, vals=nl.load(probes))
        nl.store(values, top)
        nl.store(found, where)
        nl.store(missing, absent)
        return values, found, missing

    return kernel


def first_index(row, value):
    hits = np.flatnonzero(row == value)
    return hits[0] if hits.size else None


@pytest.mark.parametrize("index_dtype", [nl.uint32, nl.uint16])
@pytest.mark.parametrize("reference", [False, True])
def test_max8_and_find_index8_match_numpy(index_dtype, reference):
    rng = np.random.default_rng(3)
    x = rng.standard_normal((16, 300)).astype(np.float32)
    x[0, [5, 77, 200]] = 9.0  # the maximum three times: kept thrice, found at its first place
    x[1, :] = np.round(x[1, :])  # many ties
    # Probes: half present (their first place counts), half absent (all ones).
    probes = np.full((16, 8), 1234.5, np.float32)
    probes[:, :4] = x[:, [3, 3, 10, 299]]
    kernel = top8_kernel(index_dtype)
    compiled = CompiledLaunch(Kernel(kernel.func), (x, probes), {}, "trn2")
    result, _ = compiled.run((x, probes), reference=reference)
    values, found, missing = result.outputs
    expected = -np.sort(-x, axis=1)[:, :8]
    np.testing.assert_array_equal(values, expected)
    sentinel = np.iinfo(index_dtype.numpy).max
    for p in range(16):
        assert [found[p, v] for v in range(8)] == [first_index(x[p], e) for e in expected[p]]
        for v in range(8):
            want = first_index(x[p], probes[p, v])
            assert missing[p, v] == (sentinel if want is None else want)
    assert found.dtype == index_dtype.numpy and list(values[0, :3]) == [9.0] * 3
    assert list(found[0, :3]) == [5, 5, 5]


def test_max8_over_several_free_axes_and_nan():
    @nki.jit
    def kernel(x):
        out = nl.ndarray((4, 8), dtype=nl.float32, buffer=nl.shared_hbm)
        top = nl.ndarray((4, 8), dtype=nl.float32, buffer=nl.sbuf)
        nisa.max8(dst=top, src=nl.load(x))  # [4, 3, 5]: 15 elements per partition
        nl.store(out, top)
        return out

    x = np.arange(60, dtype=np.float32).reshape(4, 3, 5)
    x[2, 1, 1] = np.nan
    got = nki.simulate(kernel)(x)
    flat = x.reshape(4, 15)
    np.testing.assert_array_equal(got[[0, 1, 3]], -np.sort(-flat[[0, 1, 3]], axis=1)[:, :8])
    assert np.isnan(got[2, 0]) and list(got[2, 1:]) == list(
        -np.sort(-flat[2][~np.isnan(flat[2])])[:7]
    )


def test_top8_rules():
    def too_few(x):
        out = nl.ndarray((128, 8), dtype=nl.float32, buffer=nl.shared_hbm)
        top = nl.ndarray((128, 8), dtype=nl.float32, buffer=nl.sbuf)
        nisa.max8(dst=top, src=nl.load(x[:, 0:4]))  # 4 < 8 elements
        nl.store(out, top)
        return out

    def float_indices(x):
        out = nl.ndarray((128, 8), dtype=nl.float32, buffer=nl.shared_hbm)
        data = nl.load(x)
        top = nl.ndarray((128, 8), dtype=nl.float32, buffer=nl.sbuf)
        nisa.max8(dst=top, src=data)
        where = nl.ndarray((128, 8), dtype=nl.float32, buffer=nl.sbuf)
        nisa.nc_find_index8(dst=where, data=data, vals=top)
        nl.store(out, where)
        return out

    x = np.ones((128, 64), np.float32)
    with pytest.raises(KernelRuleError, match=r"\[shape-mismatch\].*8 to 16384"):
        nki.simulate(nki.jit(too_few))(x)
    with pytest.raises(KernelRuleError, match=r"\[dtype\].*uint16 or uint32"):
        nki.simulate(nki.jit(float_indices))(x)
