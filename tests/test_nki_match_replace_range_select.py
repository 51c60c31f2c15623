"""nisa.nc_match_replace8 (the top-k masking step) and nisa.range_select (the attention
masking step) against NumPy models of their documented semantics, on both executors."""

import numpy as np
import pytest

import openneuron.nki as nki
from openneuron.nki import isa as nisa
from openneuron.nki import language as nl
from openneuron.nki.errors import KernelRuleError


@nki.jit
def match_replace_kernel(x, vals):
    rows, cols = x.shape
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    where = nl.ndarray((rows, 8), dtype=nl.uint32, buffer=nl.shared_hbm)
    data = nl.load(x)
    found = nl.ndarray((rows, 8), dtype=nl.uint32, buffer=nl.sbuf)
    nisa.nc_match_replace8(dst=data, data=data, vals=nl.load(vals), imm=-1000.0, dst_idx=found)
    nl.store(out, data)
    nl.store(where, found)
    return out, where


def match_replace_model(x, vals, imm):
    """Values taken last to first, each replacing the first element equal to it that no
    earlier value replaced; the index of each match, all ones for none."""
    out = x.copy()
    where = np.full(vals.shape, np.iinfo(np.uint32).max, np.uint32)
    for p in range(x.shape[0]):
        taken = np.zeros(x.shape[1], bool)
        for v in range(7, -1, -1):
            hits = np.flatnonzero((x[p] == vals[p, v]) & ~taken)
            if hits.size:
                taken[hits[0]] = True
                where[p, v] = hits[0]
        out[p, taken] = imm
    return out, where


@pytest.mark.parametrize("reference", [False, True])
def test_match_replace8_replaces_first_matches_and_pairs_duplicates(reference):
    rng = np.random.default_rng(5)
    x = rng.integers(-20, 20, size=(16, 64)).astype(np.float32)  # many duplicates
    vals = -np.sort(-x, axis=1)[:, :8].copy()  # the top 8, duplicates included
    vals[3, 5] = 999.0  # absent: all ones, nothing replaced for it
    x[0, :11] = [1, 2, 3, 4, 8, 8, 8, 8, 8, 8, 8]
    x[0, 11:] = -50
    vals[0] = [3, 8, 8, 8, 8, 8, 8, 8]
    result = nki.kernel.launch(match_replace_kernel, (x, vals), {}, reference=reference)
    out, where = result.outputs
    expected_out, expected_where = match_replace_model(x, vals, -1000.0)
    np.testing.assert_array_equal(out, expected_out)
    np.testing.assert_array_equal(where, expected_where)
    # Duplicates pair with successive matches, the first match in the highest slot.
    assert list(where[0]) == [2, 10, 9, 8, 7, 6, 5, 4]


def test_match_replace8_top_k_by_rounds_sorts_a_row():
    @nki.jit
    def top16(x):
        rows, cols = x.shape
        out = nl.ndarray((rows, 16), dtype=x.dtype, buffer=nl.shared_hbm)
        data = nl.load(x)
        best = nl.ndarray((rows, 16), dtype=x.dtype, buffer=nl.sbuf)
        for r in range(2):
            nisa.max8(dst=best[:, r * 8 : r * 8 + 8], src=data)
            nisa.nc_match_replace8(
                dst=data, data=data, vals=best[:, r * 8 : r * 8 + 8], imm=float("-inf")
            )
        nl.store(out, best)
        return out

    x = np.random.default_rng(1).standard_normal((8, 100)).astype(np.float32)
    np.testing.assert_array_equal(nki.simulate(top16)(x), -np.sort(-x, axis=1)[:, :16])


def test_match_replace8_rules():
    @nki.jit
    def bad(x):
        out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
        data = nl.load(x)
        nisa.nc_match_replace8(dst=data, data=data, vals=data[:, 0:4], imm=0.0)
        nl.store(out, data)
        return out

    with pytest.raises(KernelRuleError, match="vals holds 8 values per partition"):
        nki.simulate(bad)(np.zeros((4, 32), np.float32))


@nki.jit
def range_select_kernel(x, low, high):
    rows, cols = x.shape
    out = nl.ndarray(x.shape, dtype=nl.float32, buffer=nl.shared_hbm)
    top = nl.ndarray((rows, 1), dtype=nl.float32, buffer=nl.shared_hbm)
    data = nl.load(x)
    kept = nl.ndarray(x.shape, dtype=nl.float32, buffer=nl.sbuf)
    best = nl.ndarray((rows, 1), dtype=nl.float32, buffer=nl.sbuf)
    nisa.range_select(
        dst=kept,
        on_true_tile=data,
        comp_op0=nl.greater_equal,
        comp_op1=nl.less,
        bound0=nl.load(low),
        bound1=nl.load(high),
        reduce_cmd=nisa.reduce_cmd.reset_reduce,
        reduce_res=best,
        reduce_op=nl.maximum,
        range_start=100,
        on_false_value=-5000.0,
    )
    nl.store(out, kept)
    nl.store(top, best)
    return out, top


@pytest.mark.parametrize("reference", [False, True])
def test_range_select_keeps_positions_between_the_bounds(reference):
    rng = np.random.default_rng(2)
    x = rng.standard_normal((32, 48)).astype(np.float32)
    low = rng.integers(90, 130, size=(32, 1)).astype(np.float32)
    high = low + rng.integers(0, 30, size=(32, 1)).astype(np.float32)
    result = nki.kernel.launch(range_select_kernel, (x, low, high), {}, reference=reference)
    out, top = result.outputs
    position = np.arange(48, dtype=np.float32)[None, :] + 100
    keep = (position >= low) & (position < high)
    expected = np.where(keep, x, np.float32(-5000.0))
    np.testing.assert_array_equal(out, expected)
    np.testing.assert_array_equal(top, expected.max(axis=1, keepdims=True))


def test_range_select_refuses_accumulating_reduce_commands():
    @nki.jit
    def accumulate(x, low, high):
        out = nl.ndarray(x.shape, dtype=nl.float32, buffer=nl.shared_hbm)
        kept = nl.ndarray(x.shape, dtype=nl.float32, buffer=nl.sbuf)
        best = nl.ndarray((x.shape[0], 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.range_select(
            dst=kept,
            on_true_tile=nl.load(x),
            comp_op0=nl.greater_equal,
            comp_op1=nl.less,
            bound0=nl.load(low),
            bound1=nl.load(high),
            reduce_cmd=nisa.reduce_cmd.reduce,
            reduce_res=best,
        )
        nl.store(out, kept)
        return out

    x, bound = np.zeros((4, 8), np.float32), np.zeros((4, 1), np.float32)
    with pytest.raises(KernelRuleError, match="reduce_cmd"):
        nki.simulate(accumulate)(x, bound, bound)
