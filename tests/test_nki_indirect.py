"""Run-time offsets in access patterns (``.ap(scalar_offset=...)`` / ``.ap(vector_offset=...)``
with ``indirect_dim``) on dma_copy: gathers and scatters against NumPy fancy indexing on both
executors, out-of-bounds values (error and ``oob_mode.skip``) and misuse."""

import numpy as np
import pytest

import openneuron.nki as nki
from openneuron.nki import isa as nisa
from openneuron.nki import language as nl
from openneuron.nki.errors import KernelRuleError, KernelTraceError
from openneuron.nki.kernel import CompiledLaunch, Kernel


@nki.jit
def gather_rows(table, indices):
    """out[i, :] = table[indices[i], :] (vector_offset on dim 0 of the table)."""
    rows, cols = indices.shape[0], table.shape[1]
    out = nl.ndarray((rows, cols), dtype=table.dtype, buffer=nl.shared_hbm)
    index = nl.ndarray((rows, 1), dtype=nl.int32, buffer=nl.sbuf)
    nisa.dma_copy(dst=index, src=indices.reshape((rows, 1)))
    tile = nl.ndarray((rows, cols), dtype=table.dtype, buffer=nl.sbuf)
    nisa.dma_copy(
        dst=tile,
        src=table.ap([[cols, rows], [1, cols]], offset=0, vector_offset=index, indirect_dim=0),
    )
    nisa.dma_copy(dst=out, src=tile)
    return out


@nki.jit
def pick_one_per_row(logits, targets):
    """out[i] = logits[i, targets[i]] (scalar_offset on dim 1, one DMA per row)."""
    rows, vocab = logits.shape
    out = nl.ndarray((rows, 1), dtype=logits.dtype, buffer=nl.shared_hbm)
    index = nl.ndarray((rows, 1), dtype=nl.int32, buffer=nl.sbuf)
    nisa.dma_copy(dst=index, src=targets.reshape((rows, 1)))
    picked = nl.ndarray((rows, 1), dtype=logits.dtype, buffer=nl.sbuf)
    for r in range(rows):
        nisa.dma_copy(
            dst=picked[r : r + 1, :],
            src=logits.ap(
                [[vocab, 1], [1, 1]],
                offset=r * vocab,
                scalar_offset=index.ap([[1, 1], [1, 1]], offset=r),
                indirect_dim=1,
            ),
        )
    nisa.dma_copy(dst=out, src=picked)
    return out


def scatter_rows(skip):
    @nki.jit
    def kernel(source, indices, base):
        rows, cols = source.shape
        out = nl.ndarray(base.shape, dtype=base.dtype, buffer=nl.shared_hbm)
        nisa.dma_copy(dst=out, src=base)
        index = nl.ndarray((rows, 1), dtype=nl.uint32, buffer=nl.sbuf)
        nisa.dma_copy(dst=index, src=indices.reshape((rows, 1)))
        tile = nl.ndarray((rows, cols), dtype=source.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=tile, src=source)
        nisa.dma_copy(
            dst=out.ap([[cols, rows], [1, cols]], vector_offset=index, indirect_dim=0),
            src=tile,
            oob_mode=nisa.oob_mode.skip if skip else nisa.oob_mode.error,
        )
        return out

    return kernel


def run(kernel, args, reference):
    compiled = CompiledLaunch(Kernel(kernel.func), args, {}, "trn2")
    result, _ = compiled.run(args, reference=reference)
    return result


@pytest.mark.parametrize("reference", [False, True])
def test_vector_offset_gathers_rows_like_numpy(reference):
    rng = np.random.default_rng(0)
    table = rng.standard_normal((50, 24)).astype(np.float32)
    indices = rng.integers(0, 50, 96).astype(np.int32)
    indices[:3] = [0, 49, 49]  # both ends, and a repeat
    got = run(gather_rows, (table, indices), reference).outputs
    np.testing.assert_array_equal(got, table[indices])


@pytest.mark.parametrize("reference", [False, True])
def test_scalar_offset_picks_targets_like_numpy(reference):
    rng = np.random.default_rng(1)
    logits = rng.standard_normal((6, 300)).astype(np.float32)
    targets = np.array([0, 299, 17, 17, 150, 3], np.int32)
    got = run(pick_one_per_row, (logits, targets), reference).outputs
    np.testing.assert_array_equal(got[:, 0], logits[np.arange(6), targets])


@pytest.mark.parametrize("reference", [False, True])
def test_vector_offset_scatters_and_skip_leaves_rows_out(reference):
    rng = np.random.default_rng(2)
    source = rng.standard_normal((4, 8)).astype(np.float32)
    base = np.zeros((10, 8), np.float32)
    indices = np.array([7, 10, 2, 4000000000], np.uint32)  # two past the end
    got = run(scatter_rows(True), (source, indices, base), reference).outputs
    expected = base.copy()
    expected[[7, 2]] = source[[0, 2]]
    np.testing.assert_array_equal(got, expected)


@pytest.mark.parametrize("reference", [False, True])
def test_offset_out_of_bounds_names_value_and_line(reference):
    source = np.ones((4, 8), np.float32)
    indices = np.array([1, 2, 10, 3], np.uint32)
    with pytest.raises(KernelRuleError, match=r"\[out-of-bounds\].*offset 10 \(row 2\).*\[0, 10\)"):
        run(scatter_rows(False), (source, indices, np.zeros((10, 8), np.float32)), reference)
    # The process stays usable: the same kernel runs with good indices afterwards.
    indices[2] = 9
    got = run(scatter_rows(False), (source, indices, np.zeros((10, 8), np.float32)), reference)
    np.testing.assert_array_equal(got.outputs[[1, 2, 9, 3]], source)


def test_misuse_is_rejected():
    @nki.jit
    def on_compute(table, indices):
        index = nl.ndarray((4, 1), dtype=nl.int32, buffer=nl.sbuf)
        nisa.dma_copy(dst=index, src=indices.reshape((4, 1)))
        view = table.ap([[8, 4], [1, 8]], vector_offset=index, indirect_dim=0)
        tile = nl.ndarray((4, 8), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_copy(dst=tile, src=view)
        return tile

    @nki.jit
    def float_index(table, indices):
        out = nl.ndarray((4, 8), dtype=nl.float32, buffer=nl.shared_hbm)
        index = nl.ndarray((4, 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.dma_copy(dst=index, src=indices.reshape((4, 1)))
        tile = nl.ndarray((4, 8), dtype=nl.float32, buffer=nl.sbuf)
        nisa.dma_copy(dst=tile, src=table.ap([[8, 4], [1, 8]], vector_offset=index, indirect_dim=0))
        nisa.dma_copy(dst=out, src=tile)
        return out

    table = np.ones((6, 8), np.float32)
    with pytest.raises(KernelTraceError, match=r"\[unsupported\].*operand of dma_copy only"):
        nki.simulate(on_compute)(table, np.zeros(4, np.int32))
    with pytest.raises(KernelRuleError, match=r"\[dtype\].*run-time offsets are integers"):
        nki.simulate(float_index)(table, np.zeros(4, np.float32))


def test_a_scalar_offset_without_indirect_dim_indexes_the_first_dimension():
    """As the NKI Library's MoE kernels read one expert id from a [blocks, 1] table."""

    @nki.jit
    def pick_row(table, which):
        out = nl.ndarray((1, table.shape[1]), dtype=table.dtype, buffer=nl.shared_hbm)
        index = nl.ndarray((1, 1), dtype=nl.int32, buffer=nl.sbuf)
        nisa.dma_copy(dst=index, src=which)
        row = nl.ndarray((1, table.shape[1]), dtype=table.dtype, buffer=nl.sbuf)
        view = table.ap([[table.shape[1], 1], [1, table.shape[1]]], scalar_offset=index)
        nisa.dma_copy(dst=row, src=view)
        nisa.dma_copy(dst=out, src=row)
        return out

    table = np.arange(24, dtype=np.int32).reshape(6, 4)
    got = nki.simulate(pick_row)(table, np.array([[4]], np.int32))
    np.testing.assert_array_equal(got, table[4:5])
