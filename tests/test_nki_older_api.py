"""The older generation of the NKI API (``neuronxcc.nki``), each feature AWS's public kernels
lean on checked in a small kernel of our own: index grids, static masks on boundary tiles,
tile-returning ``nisa`` calls, block dimensions, and the odd helpers (``spmd_dim``,
``shared_constant``, ``static_cast``, ``floor``, ``broadcast_to``, ``load_transpose2d``)."""

import numpy as np
import pytest

import openneuron.nki as current_nki
import openneuron.nki.legacy.nki as nki
from openneuron.nki.errors import KernelRuleError, KernelTraceError
from openneuron.nki.legacy.nki import isa as nisa
from openneuron.nki.legacy.nki import language as nl

rng = np.random.default_rng(7)


def test_older_names_answer_their_own_generation():
    import neuronxcc.nki.isa as older_isa
    import neuronxcc.nki.language as older_nl
    from neuronxcc import nki as older

    assert older is nki and older_nl is nl and older_isa is nisa
    assert older.language.arange is nl.arange
    assert not hasattr(current_nki.language, "arange")  # the current API has no index grids
    import neuronxcc.nki.compiler as ncc

    assert ncc.sbuf.mod_alloc(base_addr=0) is nl.sbuf
    assert ncc.skip_middle_end_transformations(len) is len


def test_index_grid_tiles_with_program_ids():
    @nki.jit
    def add_tiles(a, b):
        out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
        rows = nl.program_id(0) * 64 + nl.arange(64)[:, None]
        columns = nl.program_id(1) * 32 + nl.arange(32)[None, :]
        nl.store(out[rows, columns], value=nl.load(a[rows, columns]) + nl.load(b[rows, columns]))
        return out

    a, b = rng.random((128, 96), np.float32), rng.random((128, 96), np.float32)
    got = nki.simulate_kernel(add_tiles[nl.spmd_dim(2, nl.nc(1)), 3], a, b)
    np.testing.assert_array_equal(got, a + b)


def test_mgrid_strides_reorder_a_tile():
    @nki.jit
    def swap_halves(x):  # [P, 2 * H] -> [P, H, 2] read as the transposed pairs
        out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
        p, i, j = nl.mgrid[0 : x.shape[0], 0 : x.shape[1] // 2, 0:2]
        tile = nl.load(x[p, j * (x.shape[1] // 2) + i])
        nl.store(out[p, i * 2 + j], value=tile)
        return out

    x = rng.random((8, 6), np.float32)
    expected = x.reshape(8, 2, 3).transpose(0, 2, 1).reshape(8, 6)
    np.testing.assert_array_equal(nki.simulate_kernel(swap_halves, x), expected)


def test_masked_boundary_tile_computes_only_its_rows():
    @nki.jit
    def scaled_rows(x):
        out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
        ix, iy = nl.arange(128)[:, None], nl.arange(x.shape[1])[None, :]
        for t in nl.affine_range((x.shape[0] + 127) // 128):
            inside = t * 128 + ix < x.shape[0]
            tile = nl.load(x[t * 128 + ix, iy], mask=inside)
            row_sum = nl.sum(nl.exp(tile), axis=[1])  # unmasked: its valid rows only
            nl.store(out[t * 128 + ix, iy], value=tile / row_sum, mask=inside)
        return out

    x = rng.random((200, 16), np.float32)
    expected = x / np.exp(x).sum(axis=1, keepdims=True)
    np.testing.assert_allclose(nki.simulate_kernel(scaled_rows, x), expected, rtol=2e-6)


def test_unmasked_overhang_is_refused():
    @nki.jit
    def overhang(x):
        out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
        ix, iy = nl.arange(128)[:, None], nl.arange(x.shape[1])[None, :]
        nl.store(out[ix, iy], value=nl.load(x[ix, iy]))
        return out

    with pytest.raises(KernelRuleError, match="out-of-bounds"):
        nki.simulate_kernel(overhang, np.zeros((100, 4), np.float32))


def test_tile_returning_isa_calls_and_matmul_accumulation():
    @nki.jit
    def chain(a_t, b, c):
        out = nl.ndarray((a_t.shape[1], b.shape[1]), dtype=nl.float32, buffer=nl.shared_hbm)
        acc = nl.zeros((a_t.shape[1], b.shape[1]), dtype=nl.float32, buffer=nl.psum)
        for k in nl.affine_range(a_t.shape[0] // 32):
            rows = k * 32 + nl.arange(32)[:, None]
            acc += nisa.nc_matmul(
                nl.load(a_t[rows, nl.arange(a_t.shape[1])[None, :]]),
                nl.load(b[rows, nl.arange(b.shape[1])[None, :]]),
            )
        moved = nisa.tensor_copy(acc)
        shifted = nisa.tensor_scalar(moved, np.add, 1.0, op1=np.multiply, operand1=2.0)
        gated = nisa.activation(op=nl.exp, data=shifted, scale=-0.01)
        both = nisa.tensor_tensor(gated, nl.load(c), op=nl.multiply)
        nl.store(out, value=nisa.reciprocal(both))
        return out

    a_t, b = rng.random((64, 16), np.float32), rng.random((64, 8), np.float32)
    c = rng.random((16, 8), np.float32) + 0.5
    expected = 1.0 / (np.exp(-0.01 * ((a_t.T @ b + 1.0) * 2.0)) * c)
    np.testing.assert_allclose(nki.simulate_kernel(chain, a_t, b, c), expected, rtol=1e-5)


def test_transposes_iota_and_affine_select():
    @nki.jit
    def lower_triangle(x):
        out = nl.ndarray(x.shape, dtype=nl.float32, buffer=nl.shared_hbm)
        tile = nl.load(x)
        flipped = nisa.nc_transpose(tile)  # PSUM
        back = nisa.nc_transpose(nisa.tensor_copy(flipped))
        i_p, i_f = nl.mgrid[0 : x.shape[0], 0 : x.shape[1]]
        kept = nisa.affine_select(i_p - i_f >= 0, nisa.tensor_copy(back), -1.0)
        positions = nisa.iota(i_p * 100 + i_f, dtype=nl.float32)
        nl.store(out, value=nl.add(kept, nl.multiply(positions, 0.0)))
        return out

    x = rng.random((16, 16), np.float32)
    expected = np.where(np.tril(np.ones((16, 16), bool)), x, -1.0)
    np.testing.assert_array_equal(nki.simulate_kernel(lower_triangle, x), expected)


def test_block_dimensions_index_whole_blocks():
    @nki.jit
    def stacked(x):
        blocks, width = x.shape[0] // 32, x.shape[1]
        out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
        held = nl.zeros((blocks, nl.par_dim(32), width), dtype=x.dtype)
        for i in nl.affine_range(blocks):
            held[i, :, :] += nl.load(x[i * 32 : (i + 1) * 32, :])
        for i in nl.affine_range(blocks):
            nl.store(out[i * 32 : (i + 1) * 32, :], value=held[i])
        return out

    x = rng.random((96, 8), np.float32)
    np.testing.assert_array_equal(nki.simulate_kernel(stacked, x), x)

    @nki.jit
    def sliced_blocks(x):
        held = nl.zeros((2, nl.par_dim(32), 8), dtype=x.dtype)
        held[0:2, :, :]

    with pytest.raises(KernelTraceError, match="integers only"):
        nki.simulate_kernel(sliced_blocks, x)


def test_helpers_of_the_older_generation():
    @nki.jit
    def helpers(x, row):
        out = nl.ndarray((x.shape[1], x.shape[0]), dtype=nl.float32, buffer=nl.shared_hbm)
        identity = nl.load(nl.shared_constant(np.identity(x.shape[1], np.int8), dtype=nl.float32))
        flipped = nl.load_transpose2d(x)  # [F, P]
        spread = nl.load(row).broadcast_to((x.shape[1], row.shape[1]))
        floored = nl.floor(nl.add(flipped, spread), dtype=nl.float32)
        nl.store(out, value=nl.matmul(identity, nl.static_cast(floored, nl.float32)))
        return out

    x = (rng.random((8, 4), np.float32) - 0.5) * 10
    row = (rng.random((1, 8), np.float32) - 0.5) * 10
    assert nl.static_cast(np.ones(2), nl.bfloat16).dtype.name == "bfloat16"  # on the host
    assert nl.fp32.min == np.finfo(np.float32).min and nl.finfo(nl.float16).max == 65504.0
    np.testing.assert_array_equal(nki.simulate_kernel(helpers, x, row), np.floor(x.T + row))


def test_benchmark_baremetal_and_profile_entry_points():
    def double(x):
        out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
        nl.store(out, value=nl.multiply(nl.load(x), 2.0))
        return out

    x = rng.random((4, 4), np.float32)
    np.testing.assert_array_equal(nki.baremetal(double)(x), 2 * x)
    benchmarked = nki.benchmark(warmup=2, iters=3)(double)
    np.testing.assert_array_equal(benchmarked(x), 2 * x)
    assert benchmarked.benchmark_result.nc_latency.get_latency_percentile(99) > 0
    profiled = nki.profile(working_directory="unused", save_neff_name="unused.neff")(double)
    np.testing.assert_array_equal(profiled(x), 2 * x)


def test_matmul_assigned_into_psum_blocks_writes_there():
    @nki.jit
    def products(a_t, b):
        blocks = b.shape[1] // 64
        out = nl.ndarray((a_t.shape[1], b.shape[1]), dtype=nl.float32, buffer=nl.shared_hbm)
        held = nl.ndarray((blocks, nl.par_dim(a_t.shape[1]), 64), dtype=nl.float32, buffer=nl.psum)
        left = nl.load(a_t)
        for j in nl.affine_range(blocks):
            held[j, :, :] = nisa.nc_matmul(left, nl.load(b[:, j * 64 : (j + 1) * 64]))
        for j in nl.affine_range(blocks):
            nl.store(out[:, j * 64 : (j + 1) * 64], value=held[j])
        return out

    a_t, b = rng.random((32, 16), np.float32), rng.random((32, 256), np.float32)
    result = current_nki.kernel.launch(products, (a_t, b), {})
    np.testing.assert_allclose(result.outputs, a_t.T @ b, rtol=1e-5)
    copies = [op for op, _, f in result.traces[0].instructions if f["src0"] is not None
              and f["src0"].memory == 2 and f["dst"].memory == 2]  # fmt: skip
    assert not copies  # the matmuls wrote the blocks themselves: no PSUM-to-PSUM copy


def test_a_mask_false_on_loop_indices_leaves_the_matmul_out():
    @nki.jit
    def first_chunks(a_t, b):
        out = nl.ndarray((a_t.shape[1], b.shape[1]), dtype=nl.float32, buffer=nl.shared_hbm)
        acc = nl.zeros((a_t.shape[1], b.shape[1]), dtype=nl.float32, buffer=nl.psum)
        for k in nl.affine_range(4):
            rows = k * 16 + nl.arange(16)[:, None]
            acc += nisa.nc_matmul(
                nl.load(a_t[rows, nl.arange(a_t.shape[1])[None, :]]),
                nl.load(b[rows, nl.arange(b.shape[1])[None, :]]),
                mask=(k * 16 < 32),  # a plain bool: the last two chunks are left out
            )
        nl.store(out, value=nl.copy(acc))
        return out

    a_t, b = rng.random((64, 8), np.float32), rng.random((64, 8), np.float32)
    expected = a_t[:32].T @ b[:32]
    np.testing.assert_allclose(nki.simulate_kernel(first_chunks, a_t, b), expected, rtol=1e-5)


def test_loop_reduce_folds_each_iteration_into_the_assigned_tile():
    @nki.jit
    def running_max(x):
        out = nl.ndarray((32, x.shape[1]), dtype=nl.float32, buffer=nl.shared_hbm)
        best = nl.full((32, x.shape[1]), -1e30, dtype=nl.float32)
        for k in nl.affine_range(x.shape[0] // 32):
            chunk = nl.load(x[k * 32 : (k + 1) * 32, :])
            best[...] = nl.loop_reduce(chunk, op=np.maximum, loop_indices=(k,))
        nl.store(out, value=best)
        return out

    x = rng.standard_normal((128, 8)).astype(np.float32)
    expected = x.reshape(4, 32, 8).max(axis=0)
    np.testing.assert_array_equal(nki.simulate_kernel(running_max, x), expected)


def test_affine_select_of_a_matmul_result_in_psum():
    @nki.jit
    def causal_scores(q_t, k_t):
        out = nl.ndarray((q_t.shape[1], k_t.shape[1]), dtype=nl.float32, buffer=nl.shared_hbm)
        scores = nisa.nc_matmul(nl.load(q_t), nl.load(k_t))  # PSUM
        i_q, i_k = nl.mgrid[0 : q_t.shape[1], 0 : k_t.shape[1]]
        nl.store(out, value=nisa.affine_select(i_q >= i_k, scores, -9984.0))
        return out

    q_t, k_t = rng.random((16, 32), np.float32), rng.random((16, 32), np.float32)
    expected = np.where(np.tril(np.ones((32, 32), bool)), q_t.T @ k_t, -9984.0)
    np.testing.assert_allclose(nki.simulate_kernel(causal_scores, q_t, k_t), expected, rtol=1e-5)
