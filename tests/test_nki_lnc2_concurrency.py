"""The programs of a multi-core launch (``kernel[2]``, LNC=2) run at once on shared HBM: their
HBM accesses interleave in the order of their schedules, and ``nisa.core_barrier`` makes each
wait for the other, so one core reads what the other wrote before the barrier."""

import numpy as np
import pytest

import openneuron.nki as nki
from openneuron.nki import isa as nisa
from openneuron.nki import language as nl
from openneuron.nki.errors import KernelRuleError, KernelTraceError


@nki.jit
def clear_then_fill_own_rows(x):
    """Each program clears the whole output, then writes its own half: the clears come first
    on both cores, so neither erases the other's rows."""
    rows, cols = x.shape
    half = rows // 2
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    zeros = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.sbuf)
    nisa.memset(zeros, 0)
    nisa.dma_copy(dst=out, src=zeros)
    pid = nl.program_id(0)
    tile = nl.load(x[pid * half : (pid + 1) * half, :])
    scaled = nl.multiply(tile, 3.0)
    nl.store(out[pid * half : (pid + 1) * half, :], scaled)
    return out


@nki.jit
def swap_halves_through_hbm(x):
    """Each program doubles its half into a shared scratch tensor, waits at the barrier, then
    copies the other program's half to its own rows of the output."""
    rows, cols = x.shape
    half = rows // 2
    scratch = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    pid = nl.program_id(0)
    other = 1 - pid
    nl.store(
        scratch[pid * half : (pid + 1) * half, :],
        nl.multiply(nl.load(x[pid * half : (pid + 1) * half, :]), 2.0),
    )
    nisa.core_barrier(scratch, (0, 1))
    nl.store(
        out[pid * half : (pid + 1) * half, :],
        nl.load(scratch[other * half : (other + 1) * half, :]),
    )
    return out


@nki.jit
def barrier_on_one_core_only(x):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    nl.store(out, nl.load(x))
    if nl.program_id(0) == 0:
        nisa.core_barrier(out, (0, 1))
    return out


@pytest.mark.parametrize("reference", [False, True])
def test_a_later_clear_on_one_core_keeps_the_other_cores_rows(reference):
    x = np.arange(64 * 32, dtype=np.float32).reshape(64, 32)
    out = nki.kernel.launch(clear_then_fill_own_rows[2], (x,), {}, reference=reference).outputs
    np.testing.assert_array_equal(out, 3 * x)


@pytest.mark.parametrize("reference", [False, True])
def test_core_barrier_lets_each_core_read_the_others_rows(reference):
    x = np.arange(64 * 16, dtype=np.float32).reshape(64, 16)
    out = nki.kernel.launch(swap_halves_through_hbm[2], (x,), {}, reference=reference).outputs
    np.testing.assert_array_equal(out, 2 * np.concatenate([x[32:], x[:32]]))


def test_one_program_launch_needs_no_barrier_partner():
    x = np.arange(64 * 16, dtype=np.float32).reshape(64, 16)
    np.testing.assert_array_equal(nki.simulate(barrier_on_one_core_only)(x), x)


def test_unmatched_barriers_are_refused_and_the_launch_stays_usable():
    x = np.ones((8, 4), np.float32)
    with pytest.raises(KernelRuleError, match="different numbers of core_barrier"):
        nki.simulate(barrier_on_one_core_only[2])(x)
    out = nki.simulate(swap_halves_through_hbm[2])(np.ones((64, 4), np.float32))
    np.testing.assert_array_equal(out, 2 * np.ones((64, 4), np.float32))


def test_latency_is_the_slower_core():
    x = np.ones((64, 32), np.float32)
    result = nki.kernel.launch(swap_halves_through_hbm[2], (x,), {})
    assert len(result.cores) == 2
    assert result.latency_ns == max(c["timing"]["total_ns"] for c in result.cores) > 0


@nki.jit
def exchange_partial_sums(x):
    """Each core sums its half of the columns and swaps the partial sums with the other core
    through nisa.sendrecv; only the first 8 of the 16 columns of the exchanged tile are
    written (the rest is never written and never used)."""
    rows, cols = x.shape
    half = cols // 2
    pid = nl.program_id(0)
    out = nl.ndarray((2, rows, 1), dtype=x.dtype, buffer=nl.shared_hbm)
    mine = nl.ndarray((rows, half), dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=mine, src=x[:, nl.ds(pid * half, half)])
    partial = nl.ndarray((rows, 16), dtype=x.dtype, buffer=nl.sbuf)
    nisa.tensor_reduce(dst=partial[:, 0:1], op=nl.add, data=mine, axis=1)
    theirs = nl.ndarray((rows, 16), dtype=x.dtype, buffer=nl.sbuf)
    nisa.sendrecv(src=partial, dst=theirs, send_to_rank=1 - pid, recv_from_rank=1 - pid)
    total = nl.ndarray((rows, 1), dtype=x.dtype, buffer=nl.sbuf)
    nisa.tensor_tensor(dst=total, data1=partial[:, 0:1], data2=theirs[:, 0:1], op=nl.add)
    nisa.dma_copy(dst=out[pid], src=total)
    return out


def test_sendrecv_swaps_tiles_between_the_cores():
    x = np.random.default_rng(3).standard_normal((64, 32), dtype=np.float32)
    out = nki.simulate(exchange_partial_sums[2])(x)
    expected = x[:, :16].sum(axis=1) + x[:, 16:].sum(axis=1)
    np.testing.assert_allclose(out[0, :, 0], expected, rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(out[0], out[1])


def test_sendrecv_names_a_rank_the_launch_does_not_have():
    @nki.jit
    def to_nowhere(x):
        out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
        tile = nl.load(x)
        received = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.sbuf)
        nisa.sendrecv(src=tile, dst=received, send_to_rank=2, recv_from_rank=2)
        nl.store(out, received)
        return out

    with pytest.raises(KernelTraceError, match="send_to_rank=2"):
        nki.simulate(to_nowhere[2])(np.zeros((8, 8), np.float32))
