"""API names and behaviours the NKI Library's kernels and its test harness need, each found by
running that suite on the simulator and written here as a small check of its own:
``nki.isa.constants`` / ``nki.collectives`` / ``nki.compiler`` / ``nki.language.dtypes`` as
importable modules, ``nisa.dma_engine``, ``nisa.nc_version`` members with a ``.name``, and
``nl.shared_constant`` from an array or a ``.npy`` file."""

import importlib
import subprocess
import sys

import numpy as np
import pytest

import openneuron.nki as nki
from openneuron.nki import isa as nisa
from openneuron.nki import language as nl
from openneuron.nki.errors import KernelTraceError

SUBMODULES = {
    "nki.isa.constants": ["oob_mode", "dge_mode", "dma_engine", "nc_version", "engine"],
    "nki.collectives": ["ReplicaGroup", "all_gather", "all_reduce", "rank_id"],
    "nki.compiler": ["skip_middle_end_transformations"],
    "nki.language.dtypes": ["bfloat16", "float32"],
}


def test_current_api_submodules_import_by_their_names():
    # A fresh interpreter: the names must resolve through the alias, not an earlier import.
    code = (
        "import importlib, openneuron\n"
        f"for module, names in {SUBMODULES!r}.items():\n"
        "    m = importlib.import_module(module)\n"
        "    print(module, [n for n in names if not hasattr(m, n)])\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.stdout.splitlines() == [f"{m} []" for m in SUBMODULES], out.stderr


def test_from_import_of_isa_constants_gives_the_isa_enums():
    import openneuron  # noqa: F401

    constants = importlib.import_module("nki.isa.constants")
    assert constants.oob_mode is nisa.oob_mode
    assert constants.dma_engine.gpsimd_dma != constants.dma_engine.dma


def test_nc_version_members_have_names_and_compare_as_numbers():
    assert nisa.nc_version.gen3.name == "gen3"
    assert nisa.nc_version.gen4 == 4
    assert nisa.nc_version.gen3 < nisa.nc_version.gen4


def test_a_collective_called_in_a_kernel_is_a_named_unsupported_error():
    import openneuron  # noqa: F401

    collectives = importlib.import_module("nki.collectives")

    @nki.jit
    def kernel(x):
        collectives.all_reduce(x)
        return x

    with pytest.raises(KernelTraceError, match=r"\[unsupported\].*all_reduce"):
        nki.simulate(kernel)(np.ones((4, 4), np.float32))
    assert collectives.ReplicaGroup([[0, 1], [2, 3]]).groups == [[0, 1], [2, 3]]


def _copy_constant(constant_source):
    @nki.jit
    def kernel(x):
        out = nl.ndarray(x.shape, dtype=nl.float32, buffer=nl.shared_hbm)
        table = nl.shared_constant(constant_source)
        tile = nl.ndarray(x.shape, dtype=nl.float32, buffer=nl.sbuf)
        nisa.dma_copy(dst=tile, src=table)
        loaded = nl.load(x)
        nisa.tensor_tensor(dst=tile, data1=tile, data2=loaded, op=nl.add)
        nl.store(out, tile)
        return out

    return kernel


def test_shared_constant_from_an_array_and_from_a_npy_file(tmp_path):
    table = np.arange(24, dtype=np.float32).reshape(4, 6)
    x = np.full((4, 6), 0.5, np.float32)
    np.testing.assert_array_equal(nki.simulate(_copy_constant(table))(x), table + 0.5)
    path = tmp_path / "table.npy"
    np.save(path, table * 2)
    np.testing.assert_array_equal(nki.simulate(_copy_constant(str(path)))(x), table * 2 + 0.5)


def test_shared_constant_from_a_missing_file_names_the_file(tmp_path):
    missing = str(tmp_path / "absent.npy")
    with pytest.raises(KernelTraceError, match="absent.npy"):
        nki.simulate(_copy_constant(missing))(np.ones((4, 6), np.float32))


def test_a_tensors_buffer_compares_equal_to_its_memory():
    seen = {}

    @nki.jit
    def kernel(x):
        tile = nl.ndarray((4, 4), dtype=nl.float32, buffer=nl.sbuf)
        part = nl.ndarray((4, 4), dtype=nl.float32, buffer=nl.psum)
        seen["sbuf"] = (tile.buffer == nl.sbuf, tile.buffer == nl.psum, nl.sbuf == tile.buffer)
        seen["psum"] = part.buffer == nl.psum
        seen["hbm"] = x.buffer in (nl.hbm, nl.shared_hbm, nl.private_hbm), x.buffer == nl.sbuf
        seen["itself"] = tile.buffer == tile.buffer, tile.buffer == part.buffer
        nisa.dma_copy(dst=tile, src=x)
        out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
        nl.store(out, tile)
        return out

    nki.simulate(kernel)(np.ones((4, 4), np.float32))
    assert seen == {
        "sbuf": (True, False, True),
        "psum": True,
        "hbm": (True, False),
        "itself": (True, False),
    }


def test_the_dtype_class_names_every_element_type():
    # `import nki.dtype as nt` gives the class; kernels' tests read nt.float8_e4m3 from it.
    assert nki.dtype.float8_e4m3 is nl.float8_e4m3
    assert nki.dtype.bfloat16 is nl.bfloat16
    assert isinstance(nl.float32, nki.dtype)
    assert np.zeros(2, dtype=nki.dtype.float8_e4m3).dtype.itemsize == 1


def test_double_row_matmul_contracts_both_rows_of_each_partition():
    @nki.jit
    def kernel(stationary, moving):
        k, _, m = stationary.shape
        n = moving.shape[2]
        st = nl.ndarray((k, 2, m), dtype=nl.float32, buffer=nl.sbuf)
        mv = nl.ndarray((k, 2, n), dtype=nl.float32, buffer=nl.sbuf)
        nisa.dma_copy(dst=st, src=stationary)
        nisa.dma_copy(dst=mv, src=moving)
        acc = nl.ndarray((m, n), dtype=nl.float32, buffer=nl.psum)
        nisa.nc_matmul(acc, st, mv, perf_mode=nisa.matmul_perf_mode.double_row)
        result = nl.ndarray((m, n), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_copy(dst=result, src=acc)
        out = nl.ndarray((m, n), dtype=nl.float32, buffer=nl.shared_hbm)
        nl.store(out, result)
        return out

    rng = np.random.default_rng(3)
    stationary = rng.integers(-3, 4, (16, 2, 8)).astype(np.float32)
    moving = rng.integers(-3, 4, (16, 2, 12)).astype(np.float32)
    expected = np.einsum("krm,krn->mn", stationary, moving)
    np.testing.assert_array_equal(nki.simulate(kernel)(stationary, moving), expected)


def test_an_nki_object_subclass_is_a_dataclass_without_the_decorator():
    class Sizes(nl.NKIObject):
        rows: int
        cols: int = 4

    class Wider(Sizes):
        depth: int = 2

    assert (Sizes(rows=3).rows, Sizes(rows=3).cols) == (3, 4)
    assert Wider(rows=1, depth=5) == Wider(1, 4, 5)
    # A field listed without a default may be left out and set later, as the library's MoE
    # CTE kernels do (DimensionSizes(T=.., I_TP=..), then derive_all_dims sets the rest).
    partial = Sizes(cols=1)
    with pytest.raises(AttributeError):
        _ = partial.rows
    partial.rows = 7
    assert (partial.rows, partial.cols) == (7, 1)


def test_nki_object_subclass_decorated_as_a_frozen_dataclass_constructs():
    # The top-k kernels' hardware constants: @dataclass(frozen=True) over an NKIObject subclass.
    import dataclasses

    @dataclasses.dataclass(frozen=True, eq=True)
    class Constants(nl.NKIObject):
        lanes: int = 8
        index_dtype: type = nl.uint32

    constants = Constants()
    assert constants.lanes == 8 and hash(constants) == hash(Constants())
    with pytest.raises(dataclasses.FrozenInstanceError):
        constants.lanes = 4

    class Mutable(nl.NKIObject):
        size: int

    sizes = Mutable(size=3)
    sizes.size = 5
    assert sizes.size == 5


def test_dtypes_print_as_aws_dtypes_do():
    # The library compares str(dtype): its allocator sizes fp8 tiles by "float8_e4m3", and
    # attention checks str(mm_out_dtype) == str(nl.float32) with a NumPy dtype passed in.
    assert str(nl.float8_e4m3) == "float8_e4m3" and str(nl.bfloat16) == "bfloat16"
    assert str(nl.float32) == str(np.dtype(np.float32)) and str(nl.int32) == "int32"
    assert repr(nl.bfloat16) == "nl.bfloat16"


def test_dtypes_stay_one_object_through_copy_and_pickle():
    # The library's attention TKG tests deep-copy parameter sets holding nl.bfloat16 and
    # then look the copy up with `dtype in (nl.bfloat16, ...)`.
    import copy
    import pickle

    from openneuron.nki import language as nl_module

    for dtype in (nl_module.bfloat16, nl_module.float8_e4m3, nl_module.float32):
        for twin in (
            copy.copy(dtype),
            copy.deepcopy([dtype])[0],
            pickle.loads(pickle.dumps(dtype)),
        ):
            assert twin is dtype
            assert twin in (nl_module.tfloat32, dtype)
