"""What AWS's older-generation reference kernels (pooling, resizing, select-and-scatter, flash
attention backward) needed from the older API, each in a small kernel of our own against NumPy:
index tiles that gather rows, true division of integer tiles, dense ``nl.mgrid`` components,
tiles of unequal shape broadcast against each other, a mask that stops a slice running past a
tensor's end, and PSUM results passed straight to the Tensor engine."""

import numpy as np
import pytest

import openneuron.nki.legacy.nki as nki
from openneuron.nki.errors import KernelRuleError
from openneuron.nki.legacy.nki import isa as nisa
from openneuron.nki.legacy.nki import language as nl

rng = np.random.default_rng(23)


def test_an_index_tile_gathers_rows_and_a_mask_cuts_the_last_tile():
    @nki.jit
    def gather_rows(table, rows):
        count, width = rows.shape[0], table.shape[1]
        out = nl.ndarray((count, width), dtype=table.dtype, buffer=nl.shared_hbm)
        ip, jf = nl.arange(128)[:, None], nl.arange(width)[None, :]
        for t in nl.affine_range((count + 127) // 128):
            inside = t * 128 + ip < count
            index = nl.load(rows[t * 128 + ip, nl.arange(1)[None, :]], mask=inside)
            values = nl.load(table[index, jf], mask=inside)
            nl.store(out[t * 128 + ip, jf], value=values, mask=inside)
        return out

    table = rng.standard_normal((300, 24), dtype=np.float32)
    rows = rng.integers(0, 300, (200, 1)).astype(np.int32)
    got = nki.simulate_kernel(gather_rows, table, rows)
    np.testing.assert_array_equal(got, table[rows[:, 0]])


def test_an_index_tile_outside_the_table_is_refused():
    @nki.jit
    def gather_rows(table, rows):
        out = nl.ndarray((128, table.shape[1]), dtype=table.dtype, buffer=nl.shared_hbm)
        index = nl.load(rows)
        nl.store(out, value=nl.load(table[index, nl.arange(table.shape[1])[None, :]]))
        return out

    rows = np.full((128, 1), 40, np.int32)
    with pytest.raises(KernelRuleError, match="out-of-bounds"):
        nki.simulate_kernel(gather_rows, np.zeros((40, 8), np.float32), rows)


def test_integer_tiles_divide_truly_and_floor_rounds_down():
    @nki.jit
    def rows_and_columns(width_tile):
        out = nl.ndarray((128, 2), dtype=nl.int32, buffer=nl.shared_hbm)
        position = nisa.iota(nl.arange(128)[:, None] * 7 + 3, dtype=nl.int32)
        row = nl.floor(position / 38, dtype=nl.int32)  # a float quotient, floored
        column = nl.mod(position, 38, dtype=nl.int32)
        result = nl.ndarray((nl.par_dim(128), 2), dtype=nl.int32, buffer=nl.sbuf)
        result[:, 0:1] = row
        result[:, 1:2] = column
        nl.store(out, value=result)
        return out

    got = nki.simulate_kernel(rows_and_columns, np.zeros((1, 1), np.float32))
    position = np.arange(128) * 7 + 3
    np.testing.assert_array_equal(got[:, 0], position // 38)
    np.testing.assert_array_equal(got[:, 1], position % 38)


def test_mgrid_components_span_the_whole_grid_and_tiles_broadcast():
    @nki.jit
    def first_maximum_in_windows(x):
        # x: [128, 4, 3, 3] windows; out: which of the 9 positions holds each window's maximum.
        out = nl.ndarray((128, 4, 3, 3), dtype=nl.uint8, buffer=nl.shared_hbm)
        window = nl.mgrid[0:128, 0:4, 0:3, 0:3]
        values = nl.load(x)
        largest = nl.max(values, axis=[2, 3], keepdims=True)  # [128, 4, 1, 1]
        is_largest = nl.equal(largest, values, dtype=nl.int8)  # broadcast to [128, 4, 3, 3]
        position = nisa.iota(3 * window.y + window.z, dtype=nl.uint32)  # [128, 4, 3, 3]
        candidates = nl.where(is_largest, position, 9, dtype=nl.uint32)
        first = nl.min(candidates, axis=[2, 3], dtype=nl.uint32, keepdims=True)
        nl.store(out, value=nl.equal(first, position, dtype=nl.uint8))
        return out

    x = rng.integers(0, 3, (128, 4, 3, 3)).astype(np.float32)  # ties are common
    got = nki.simulate_kernel(first_maximum_in_windows, x)
    flat = x.reshape(128, 4, 9)
    expected = np.zeros_like(flat, dtype=np.uint8)
    np.put_along_axis(expected, flat.argmax(axis=2)[..., None], 1, axis=2)
    np.testing.assert_array_equal(got, expected.reshape(128, 4, 3, 3))


def test_a_mask_stops_a_slice_that_runs_past_the_end():
    @nki.jit
    def doubled(x):
        rows = x.shape[0]
        out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
        ip = nl.arange(128)[:, None]
        for t in nl.affine_range((rows + 127) // 128):
            tile = nl.zeros((nl.par_dim(128), x.shape[1]), dtype=x.dtype, buffer=nl.sbuf)
            start = t * 128
            inside = start + ip < rows
            nisa.dma_copy(dst=tile, src=x[start : start + 128, :], mask=inside)
            nl.store(out[start : start + 128, :], value=tile * 2.0, mask=inside)
        return out

    x = rng.standard_normal((288, 6), dtype=np.float32)  # the last tile has 32 rows
    np.testing.assert_array_equal(nki.simulate_kernel(doubled, x), x * 2)


def test_a_transpose_in_psum_feeds_a_matmul():
    @nki.jit
    def product(a, b):
        out = nl.ndarray((a.shape[0], b.shape[1]), dtype=nl.float32, buffer=nl.shared_hbm)
        a_t = nisa.nc_transpose(nl.load(a))  # [K, M] in PSUM: staged to SBUF for the matmul
        nl.store(out, value=nl.copy(nisa.nc_matmul(a_t, nl.load(b))))
        return out

    a = rng.standard_normal((32, 64), dtype=np.float32)  # [M, K]
    b = rng.standard_normal((64, 48), dtype=np.float32)  # [K, N]
    np.testing.assert_allclose(nki.simulate_kernel(product, a, b), a @ b, rtol=1e-4, atol=1e-4)


def test_a_one_partition_tile_spreads_over_the_other_operands_partitions():
    @nki.jit
    def shifted(x, shift):
        out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
        scalar = nl.load(shift)  # [1, 1] in SBUF, as flash attention's sink term
        plane = nl.add(nl.zeros((nl.par_dim(x.shape[0]), 1), dtype=x.dtype), scalar)
        nl.store(out, value=nl.multiply(nl.load(x), plane))
        return out

    x = rng.standard_normal((128, 1), dtype=np.float32)
    got = nki.simulate_kernel(shifted, x, np.array([[2.5]], np.float32))
    np.testing.assert_array_equal(got, x * np.float32(2.5))


def test_tensor_partition_reduce_returns_a_one_partition_tile():
    @nki.jit
    def column_sums(x):
        out = nl.ndarray((1, x.shape[1]), dtype=x.dtype, buffer=nl.shared_hbm)
        nl.store(out, value=nisa.tensor_partition_reduce(np.add, nl.load(x)))
        return out

    x = rng.standard_normal((64, 8), dtype=np.float32)
    got = nki.simulate_kernel(column_sums, x)
    np.testing.assert_allclose(got[0], x.sum(axis=0), rtol=1e-5, atol=1e-5)
