"""nisa.nonzero_with_count (GpSimd's stream compaction), nki.isa.constants and
nl.shared_identity_matrix against NumPy, on both executors, with their rules."""

import numpy as np
import pytest

import openneuron.nki as nki
from openneuron.nki import isa as nisa
from openneuron.nki import language as nl
from openneuron.nki.errors import KernelRuleError
from openneuron.nki.kernel import CompiledLaunch, Kernel


@nki.jit
def nonzero_kernel(x, before):
    rows, cols = x.shape
    out = nl.ndarray((rows, cols + 1), dtype=nl.int32, buffer=nl.shared_hbm)
    result = nl.load(before)
    nisa.nonzero_with_count(dst=result, src=nl.load(x), index_offset=1000, padding_val=-7)
    nl.store(out, result)
    return out


def run(kernel, arrays, reference):
    compiled = CompiledLaunch(Kernel(kernel.func), arrays, {}, "trn2")
    result, _ = compiled.run(arrays, reference=reference)
    return result.outputs


@pytest.mark.parametrize("reference", [False, True])
def test_nonzero_with_count_compacts_each_gpsimd_core_partition(reference):
    rng = np.random.default_rng(5)
    x = np.where(rng.random((128, 96)) < 0.25, rng.standard_normal((128, 96)), 0.0)
    x = x.astype(np.float32)
    x[16, :] = 0.0  # a core's partition with nothing to report
    x[32, :] = 1.0  # and one that is all nonzero
    x[48, 3] = np.nan  # NaN counts as nonzero
    before = rng.integers(-50, 50, (128, 97)).astype(np.int32)
    out = run(nonzero_kernel, (x, before), reference)
    for p in range(128):
        if p % 16:
            np.testing.assert_array_equal(out[p], before[p])  # other partitions untouched
            continue
        hits = np.flatnonzero((x[p] != 0) | np.isnan(x[p]))
        expected = np.full(97, -7, np.int32)
        expected[: hits.size] = hits + 1000
        expected[96] = hits.size
        np.testing.assert_array_equal(out[p], expected)
    assert out[16, 96] == 0 and out[32, 96] == 96


def test_nonzero_with_count_needs_room_for_the_count():
    @nki.jit
    def no_room(x):
        out = nl.ndarray(x.shape, dtype=nl.int32, buffer=nl.shared_hbm)
        result = nl.ndarray(x.shape, dtype=nl.int32, buffer=nl.sbuf)
        nisa.nonzero_with_count(dst=result, src=nl.load(x))
        nl.store(out, result)
        return out

    with pytest.raises(KernelRuleError, match="shape-mismatch.*indices and count"):
        nki.simulate(no_room)(np.ones((128, 8), np.float32))


def test_shared_identity_matrix_and_isa_constants():
    from openneuron.nki.isa import constants

    assert constants.dge_mode.hwdge == nisa.dge_mode.hwdge
    assert constants.engine.gpsimd == nisa.engine.gpsimd

    @nki.jit
    def identities():
        a = nl.ndarray((64, 64), dtype=nl.float32, buffer=nl.shared_hbm)
        b = nl.ndarray((128, 128), dtype=nl.bfloat16, buffer=nl.shared_hbm)
        first = nl.shared_identity_matrix(64, dtype=nl.float32)
        assert nl.shared_identity_matrix(64, dtype=nl.float32) is first  # shared, not rebuilt
        nl.store(a, first)
        nl.store(b, nl.shared_identity_matrix(n=128, dtype=nl.bfloat16))
        return a, b

    a, b = nki.simulate(identities)()
    np.testing.assert_array_equal(a, np.eye(64, dtype=np.float32))
    np.testing.assert_array_equal(np.asarray(b, np.float32), np.eye(128, dtype=np.float32))


def partly_written_kernel(store_rows, shuffle):
    """nonzero_with_count over a tile whose partitions from 32 on were never written: the cores
    reading them leave their destination partitions never written, as a shuffle does with what
    it moves; storing only the defined rows works, storing the others is reported."""

    @nki.jit
    def kernel(x):
        out = nl.ndarray((store_rows, 33), dtype=nl.int32, buffer=nl.shared_hbm)
        src = nl.ndarray((128, 32), dtype=nl.float32, buffer=nl.sbuf)
        nisa.dma_copy(dst=src[0:32, :], src=x)
        result = nl.ndarray((128, 33), dtype=nl.int32, buffer=nl.sbuf)
        nisa.memset(dst=result, value=0)
        nisa.nonzero_with_count(dst=result, src=src)
        if shuffle:  # partition 16 of each quadrant to its partition 0
            nisa.nc_stream_shuffle(dst=result, src=result, shuffle_mask=[16] + [255] * 31)
        nl.store(out, result[0:store_rows, :])
        return out

    return kernel


@pytest.mark.parametrize("shuffle", [False, True])
def test_never_written_partitions_stay_never_written_through_nonzero_and_shuffle(shuffle):
    x = np.eye(32, dtype=np.float32)
    out = nki.simulate(partly_written_kernel(32, shuffle))(x)
    first = 16 if shuffle else 0  # the shuffle moved partition 16's result to partition 0
    assert list(out[0, :2]) == [first, -1] and out[0, 32] == 1
    with pytest.raises(KernelRuleError, match="uninitialized-read"):
        nki.simulate(partly_written_kernel(64, shuffle))(x)
