"""The NKI front end: `import nki` aliasing, launches over program ids, views and access
patterns, instruction semantics against NumPy, latency estimates and traces."""

import importlib.machinery
import json

import numpy as np
import pytest
import torch

import openneuron.nki as nki
from openneuron.nki import isa as nisa
from openneuron.nki import language as nl

REAL_NKI = importlib.machinery.PathFinder.find_spec("nki") is not None


@pytest.mark.skipif(REAL_NKI, reason="AWS's nki package is installed and takes the name")
def test_import_nki_gives_openneuron_nki():
    import nki as alias
    import nki.isa as alias_isa
    import nki.language as alias_nl

    assert alias is nki and alias_nl is nl and alias_isa is nisa
    assert nki.__name__ == "openneuron.nki"


def test_launch_over_program_ids_shares_hbm():
    @nki.jit
    def scale_halves(x):
        out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
        rows = x.shape[0] // nl.num_programs(0)
        start = nl.program_id(0) * rows
        tile = nl.load(x[start : start + rows, :])
        nl.store(out[start : start + rows, :], nl.multiply(tile, float(nl.program_id(0) + 1)))
        return out

    x = np.random.rand(256, 32).astype(np.float32)
    result = nki.kernel.launch(scale_halves[2], (x,), {})
    np.testing.assert_allclose(result.outputs[:128], x[:128])
    np.testing.assert_allclose(result.outputs[128:], 2 * x[128:])
    assert len(result.cores) == 2
    assert result.latency_ns == max(c["timing"]["total_ns"] for c in result.cores)


def test_views_slices_ds_reshape_and_access_patterns():
    @nki.jit
    def kernel(x, v):
        out = nl.ndarray((4, 128, 16), dtype=nl.float32, buffer=nl.shared_hbm)
        for i in nl.affine_range(4):
            tile = nl.load(x[nl.ds(i * 128, 128), :].reshape(128, 16))
            row = nl.ndarray((128, 16), dtype=nl.float32, buffer=nl.sbuf)
            nisa.dma_copy(dst=row, src=v.ap(pattern=[[0, 128], [1, 16]]))  # broadcast rows
            nl.store(out[i], nl.add(tile, row))
        return out

    x = np.random.rand(512, 16).astype(np.float32)
    v = np.random.rand(16).astype(np.float32)
    np.testing.assert_allclose(nki.simulate(kernel)(x, v), (x + v).reshape(4, 128, 16))


def test_on_chip_access_patterns_address_partitions_by_pitch():
    @nki.jit
    def kernel(x):
        out = nl.ndarray((64, 8), dtype=x.dtype, buffer=nl.shared_hbm)
        tile = nl.load(x)  # [128, 16]: a partition pitch of 16 elements
        # partitions 64..127 (offset 64 * 16), every other element
        view = tile.ap(pattern=[[16, 64], [2, 8]], offset=64 * 16)
        nl.store(out, nl.copy(view))
        return out

    x = np.random.rand(128, 16).astype(np.float32)
    np.testing.assert_array_equal(nki.simulate(kernel)(x), x[64:, ::2])


def test_dma_transpose_and_tensor_engine_transpose():
    @nki.jit
    def kernel(x):
        out = nl.ndarray((x.shape[1], x.shape[0]), dtype=x.dtype, buffer=nl.shared_hbm)
        flipped = nl.ndarray((x.shape[1], x.shape[0]), dtype=x.dtype, buffer=nl.sbuf)
        nisa.dma_transpose(dst=flipped, src=x)
        twice = nl.copy(nl.transpose(flipped))  # back to x's layout, via PSUM
        nl.store(out, nl.copy(nl.transpose(twice)))
        return out

    x = np.random.rand(96, 40).astype(np.float32)
    np.testing.assert_array_equal(nki.simulate(kernel)(x), x.T)


@pytest.mark.parametrize(
    "name, reference",
    [
        ("exp", np.exp),
        ("tanh", np.tanh),
        ("sigmoid", lambda x: 1 / (1 + np.exp(-x))),
        ("relu", lambda x: np.maximum(x, 0)),
        ("silu", lambda x: x / (1 + np.exp(-x))),
        ("gelu", lambda x: torch.nn.functional.gelu(torch.tensor(x)).numpy()),
        (
            "gelu_apprx_tanh",
            lambda x: torch.nn.functional.gelu(torch.tensor(x), approximate="tanh").numpy(),
        ),
        ("square", np.square),
        ("abs", np.abs),
        ("sin", np.sin),
        ("negative", np.negative),
        ("softplus", lambda x: np.log1p(np.exp(x))),
        ("erf", lambda x: torch.erf(torch.tensor(x)).numpy()),
    ],
)
def test_activation_table(name, reference):
    @nki.jit
    def kernel(x):
        out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
        nl.store(out, getattr(nl, name)(nl.load(x)))
        return out

    x = np.random.default_rng(0).uniform(-3, 3, (64, 40)).astype(np.float32)
    np.testing.assert_allclose(nki.simulate(kernel)(x), reference(x), rtol=2e-6, atol=2e-6)


def test_gpsimd_and_vector_instructions_against_numpy():
    @nki.jit
    def kernel(x):
        iota_out = nl.ndarray((32, 16), dtype=nl.int32, buffer=nl.shared_hbm)
        scan_out = nl.ndarray((32, 16), dtype=nl.float32, buffer=nl.shared_hbm)
        mask_out = nl.ndarray((32, 16), dtype=nl.float32, buffer=nl.shared_hbm)
        col_out = nl.ndarray((1, 16), dtype=nl.float32, buffer=nl.shared_hbm)
        where_out = nl.ndarray((32, 16), dtype=nl.float32, buffer=nl.shared_hbm)
        tile = nl.load(x)
        ids = nl.ndarray((32, 16), dtype=nl.int32, buffer=nl.sbuf)
        nisa.iota(dst=ids, pattern=[[3, 16]], offset=5, channel_multiplier=100)
        nl.store(iota_out, ids)
        ones = nl.ones((32, 16), dtype=nl.float32)
        sums = nl.ndarray((32, 16), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_tensor_scan(
            dst=sums, data0=ones, data1=tile, initial=0.0, op0=nl.multiply, op1=nl.add
        )
        nl.store(scan_out, sums)
        masked = nl.ndarray((32, 16), dtype=nl.float32, buffer=nl.sbuf)
        nisa.affine_select(
            dst=masked,
            pattern=[[-1, 16]],
            channel_multiplier=1,
            on_true_tile=tile,
            on_false_value=-9.0,
            cmp_op=nl.greater_equal,
        )
        nl.store(mask_out, masked)
        nl.store(col_out, nl.max(tile, axis=0))
        nl.store(where_out, nl.where(nl.greater(tile, 0.5), tile, 0.0))
        return iota_out, scan_out, mask_out, col_out, where_out

    x = np.random.default_rng(1).random((32, 16)).astype(np.float32)
    ids, scan, masked, columns, where = nki.simulate(kernel)(x)
    p, f = np.meshgrid(np.arange(32), np.arange(16), indexing="ij")
    np.testing.assert_array_equal(ids, 5 + 100 * p + 3 * f)
    np.testing.assert_allclose(scan, np.cumsum(x, axis=1), rtol=1e-6)
    np.testing.assert_array_equal(masked, np.where(p >= f, x, -9.0))
    np.testing.assert_array_equal(columns, x.max(axis=0, keepdims=True))
    np.testing.assert_array_equal(where, np.where(x > 0.5, x, 0.0))


def test_reductions_over_free_axes():
    @nki.jit
    def kernel(x):
        outs = [nl.ndarray((64, 1), dtype=nl.float32, buffer=nl.shared_hbm) for _ in range(3)]
        tile = nl.load(x)
        nl.store(outs[0], nl.sum(tile, axis=1))
        nl.store(outs[1], nl.mean(tile, axis=1))
        nl.store(outs[2], nl.min(tile, axis=1))
        return outs

    x = np.random.default_rng(2).random((64, 50)).astype(np.float32)
    total, mean, minimum = nki.simulate(kernel)(x)
    np.testing.assert_allclose(total[:, 0], x.sum(1), rtol=1e-5)
    np.testing.assert_allclose(mean[:, 0], x.mean(1), rtol=1e-5)
    np.testing.assert_array_equal(minimum[:, 0], x.min(1))


def test_estimate_reports_latency_utilization_and_a_perfetto_trace(tmp_path):
    from examples.nki.matmul import matmul

    a = np.random.rand(256, 256).astype(np.float32)
    b = np.random.rand(256, 512).astype(np.float32)
    path = tmp_path / "trace.json"
    result = nki.estimate(matmul, a, b, trace_path=str(path))
    assert result.latency_ns > 0
    assert set(result.utilization()) == {"tensor", "vector", "scalar", "gpsimd", "dma"}
    assert 0 < result.utilization()["tensor"] <= 1
    events = json.loads(path.read_text())["traceEvents"]
    slices = [e for e in events if e["ph"] == "X"]
    assert len(slices) == result.instructions
    assert {e["name"] for e in slices} >= {"nc_matmul", "dma_copy", "nc_transpose"}
    # trn3's faster DMA makes a load-bound kernel faster.
    trn3 = nki.estimate(matmul, a, b, profile="trn3")
    assert trn3.latency_ns < result.latency_ns


def test_benchmark_api_records_latency():
    from examples.nki.softmax import softmax

    bench = nki.benchmark(softmax)
    x = np.random.rand(128, 256).astype(np.float32)
    out = bench(x)
    assert out.shape == x.shape
    assert bench.benchmark_result.nc_latency.get_latency_percentile(50) > 0


def test_in_place_output_argument_is_written_back():
    @nki.jit
    def kernel(x, out):
        nl.store(out, nl.exp(nl.load(x)))

    x = np.random.rand(16, 8).astype(np.float32)
    out = np.zeros_like(x)
    nki.simulate(kernel)(x, out)
    np.testing.assert_allclose(out, np.exp(x), rtol=1e-6)


def test_an_installed_nki_package_keeps_its_name(tmp_path, run_python):
    """With another `nki` on sys.path, `import nki` gives that one; openneuron.nki stays."""
    package = tmp_path / "nki"
    package.mkdir()
    (package / "__init__.py").write_text("ORIGIN = 'installed'\n")
    result = run_python(
        f"""
        import sys
        sys.path.insert(0, {str(tmp_path)!r})
        import torch, nki, openneuron.nki
        print(getattr(nki, "ORIGIN", "alias"), openneuron.nki.__name__)
        """
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["installed", "openneuron.nki"]


def test_cost_model_keeps_the_tutorial_optimised_matmul_within_15_percent():
    """A regression guard on the timing model (deterministic, not a wall-clock timing): the
    fully optimised tutorial kernel on [4096, 8192] @ [8192, 8192] fp32 against the published
    28.30 ms on trn2 (a calibration guard on our rewrite, not a fidelity figure;
    bench/nki/matmul_rewrite_timing.py times all four)."""
    from bench.nki.matmul_kernels import matmul_optimized

    lhs_t, rhs = np.empty((8192, 4096), np.float32), np.empty((8192, 8192), np.float32)
    result = nki.estimate(matmul_optimized, lhs_t, rhs, profile="trn2")
    assert abs(result.latency_ms / 28.30 - 1) < 0.15
    assert result.utilization()["tensor"] > 0.945  # published ≈ 99.5 % active


def test_matmul_transpose_mode_transposes_the_stationary_operand():
    # The NKI Library's idiom: stationary [128, 1] data, moving the identity, dst [1, 128].
    @nki.jit
    def kernel(x):
        out = nl.ndarray((1, 128), dtype=nl.float32, buffer=nl.shared_hbm)
        identity = nl.ndarray((128, 128), dtype=nl.float32, buffer=nl.sbuf)
        nisa.memset(dst=identity, value=1.0)
        nisa.affine_select(
            dst=identity,
            pattern=[[1, 128]],
            channel_multiplier=-1,
            cmp_op=nl.equal,
            on_true_tile=identity,
            on_false_value=0.0,
        )
        flipped = nl.ndarray((1, 128), dtype=nl.float32, buffer=nl.psum)
        nisa.nc_matmul(dst=flipped, stationary=nl.load(x), moving=identity, is_transpose=True)
        nl.store(out, nl.copy(flipped))
        return out

    x = np.random.default_rng(0).standard_normal((128, 1)).astype(np.float32)
    np.testing.assert_array_equal(nki.simulate(kernel)(x), x.T)
