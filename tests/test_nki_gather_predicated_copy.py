"""nisa.nc_n_gather (a gather inside each partition; the rotational top-k's index step) and
nisa.tensor_copy_predicated (a masked overwrite; attention TKG and the MoE CTE kernels) against
NumPy models of their documented semantics, on both executors."""

import numpy as np
import pytest

import openneuron.nki as nki
from openneuron.nki import isa as nisa
from openneuron.nki import language as nl
from openneuron.nki.errors import KernelRuleError


@nki.jit
def gather_kernel(data, indices):
    out = nl.ndarray(indices.shape, dtype=data.dtype, buffer=nl.shared_hbm)
    picked = nl.ndarray(indices.shape, dtype=data.dtype, buffer=nl.sbuf)
    nisa.nc_n_gather(dst=picked, data=nl.load(data), indices=nl.load(indices))
    nl.store(out, picked)
    return out


@pytest.mark.parametrize("reference", [False, True])
@pytest.mark.parametrize("dtype", [np.float32, np.int32])
def test_n_gather_reads_each_partition_at_its_flattened_indices(reference, dtype):
    rng = np.random.default_rng(11)
    # [P, 4, 6]: the two free axes count as one of 24 elements per partition.
    if dtype is np.int32:  # values fp32 cannot hold: the bits must move unchanged
        data = rng.integers(-(2**31), 2**31 - 1, size=(64, 4, 6), dtype=np.int64).astype(dtype)
    else:
        data = rng.standard_normal((64, 4, 6)).astype(dtype)
    indices = rng.integers(0, 24, size=(64, 2, 5)).astype(np.uint32)
    out = nki.kernel.launch(gather_kernel, (data, indices), {}, reference=reference).outputs
    flat = indices.reshape(64, -1).astype(np.int64)
    expected = np.take_along_axis(data.reshape(64, -1), flat, axis=1).reshape(indices.shape)
    np.testing.assert_array_equal(out, expected)


def test_n_gather_index_past_the_partition_is_out_of_bounds():
    data = np.arange(32, dtype=np.float32).reshape(4, 8)
    indices = np.zeros((4, 3), np.uint32)
    indices[2, 1] = 8
    with pytest.raises(KernelRuleError, match="out-of-bounds"):
        nki.simulate(gather_kernel)(data, indices)


def test_n_gather_takes_uint32_indices_only():
    with pytest.raises(KernelRuleError, match="indices are uint32"):
        nki.simulate(gather_kernel)(np.zeros((4, 8), np.float32), np.zeros((4, 3), np.int32))


@nki.jit
def predicated_kernel(base, src, predicate):
    out = nl.ndarray(base.shape, dtype=base.dtype, buffer=nl.shared_hbm)
    kept = nl.load(base)
    nisa.tensor_copy_predicated(dst=kept, src=nl.load(src), predicate=nl.load(predicate))
    nl.store(out, kept)
    return out


@nki.jit
def predicated_scalar_kernel(base, predicate):
    out = nl.ndarray(base.shape, dtype=base.dtype, buffer=nl.shared_hbm)
    kept = nl.load(base)
    nisa.tensor_copy_predicated(
        dst=kept, src=-30000.0, predicate=nl.load(predicate), reverse_pred=True
    )
    nl.store(out, kept)
    return out


@pytest.mark.parametrize("reference", [False, True])
@pytest.mark.parametrize("predicate_dtype", [np.uint8, np.uint16, np.uint32])
def test_copy_predicated_overwrites_only_selected_elements(reference, predicate_dtype):
    rng = np.random.default_rng(12)
    base = rng.standard_normal((128, 40)).astype(np.float32)
    src = rng.standard_normal((128, 40)).astype(np.float32)
    predicate = (rng.integers(0, 3, size=(128, 40)) * 7).astype(predicate_dtype)  # 0, 7, 14
    out = nki.kernel.launch(
        predicated_kernel, (base, src, predicate), {}, reference=reference
    ).outputs
    np.testing.assert_array_equal(out, np.where(predicate != 0, src, base))


@pytest.mark.parametrize("reference", [False, True])
def test_copy_predicated_scalar_with_reversed_predicate(reference):
    rng = np.random.default_rng(13)
    base = rng.standard_normal((16, 24)).astype(np.float32)
    predicate = rng.integers(0, 2, size=(16, 24)).astype(np.uint8)
    out = nki.kernel.launch(
        predicated_scalar_kernel, (base, predicate), {}, reference=reference
    ).outputs
    np.testing.assert_array_equal(out, np.where(predicate == 0, np.float32(-30000.0), base))


def test_copy_predicated_rules():
    x = np.zeros((8, 16), np.float32)
    with pytest.raises(KernelRuleError, match="predicate is uint8, uint16 or uint32"):
        nki.simulate(predicated_kernel)(x, x, x)
    with pytest.raises(KernelRuleError, match="share a dtype"):
        nki.simulate(predicated_kernel)(x, x.astype(np.int32), np.zeros((8, 16), np.uint8))
