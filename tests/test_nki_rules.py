"""Every NeuronCore rule a kernel can break raises KernelRuleError naming the rule and the
kernel's line; the process stays usable afterwards."""

import inspect

import numpy as np
import pytest

import openneuron.nki as nki
from openneuron.nki import isa as nisa
from openneuron.nki import language as nl
from openneuron.nki.errors import KernelRuleError


def line_after(marker: str, func) -> int:
    """The line number of the line after the one with `marker` in func's source."""
    lines, first = inspect.getsourcelines(func)
    for offset, text in enumerate(lines):
        if marker in text:
            return first + offset + 1
    raise AssertionError(marker)


def expect(rule, kernel, *arrays):
    with pytest.raises(KernelRuleError) as raised:
        nki.simulate(kernel)(*arrays)
    assert raised.value.rule == rule, str(raised.value)
    assert raised.value.line == line_after("# violation:", kernel), str(raised.value)
    assert f"[{rule}]" in str(raised.value)
    return raised.value


X = np.ones((128, 64), np.float32)


def test_partition_limit():
    def kernel(x):
        t = nl.ndarray((256, 4), dtype=nl.float32, buffer=nl.sbuf)
        # violation:
        nisa.memset(t, 0.0)

    expect("partition-limit", kernel, X)


def test_partition_alignment():
    def kernel(x):
        t = nl.ndarray((128, 4), dtype=nl.float32, buffer=nl.sbuf)
        # violation:
        nisa.memset(dst=t[16:80, :], value=0.0)

    expect("partition-alignment", kernel, X)


def test_matmul_limits_and_placement():
    def too_wide(x):
        a = nl.ndarray((128, 128), dtype=nl.bfloat16, buffer=nl.sbuf)
        b = nl.ndarray((128, 1024), dtype=nl.bfloat16, buffer=nl.sbuf)
        out = nl.ndarray((128, 1024), dtype=nl.float32, buffer=nl.psum)
        # violation:
        nisa.nc_matmul(dst=out, stationary=a, moving=b)

    expect("matmul-limits", too_wide, X)

    def into_sbuf(x):
        a = nl.load(x)
        out = nl.ndarray((64, 64), dtype=nl.float32, buffer=nl.sbuf)
        # violation:
        nisa.nc_matmul(dst=out, stationary=a, moving=a)

    expect("matmul-placement", into_sbuf, X)


def test_psum_rules():
    def both_in_psum(x):
        p = nl.zeros((128, 64), dtype=nl.float32, buffer=nl.psum)
        q = nl.zeros((128, 64), dtype=nl.float32, buffer=nl.psum)
        r = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.sbuf)
        # violation:
        nisa.tensor_tensor(dst=r, data1=p, data2=q, op=nl.add)

    expect("psum-both-inputs", both_in_psum, X)

    def dma_from_psum(x):
        out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
        p = nl.zeros((128, 64), dtype=nl.float32, buffer=nl.psum)
        # violation:
        nisa.dma_copy(dst=out, src=p)
        return out

    expect("psum-access", dma_from_psum, X)

    def nine_banks(x):
        tiles = [nl.zeros((128, 512), dtype=nl.float32, buffer=nl.psum) for _ in range(8)]
        # violation:
        tiles.append(nl.zeros((128, 512), dtype=nl.float32, buffer=nl.psum))
        total = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.sbuf)
        for t in tiles:
            nisa.tensor_copy(dst=total, src=t)

    expect("psum-capacity", nine_banks, X)


def test_sbuf_capacity_names_what_is_live():
    def kernel(x):
        a = nl.zeros((128, 40 * 1024), dtype=nl.float32, buffer=nl.sbuf)  # 160 KiB
        # violation:
        b = nl.zeros((128, 20 * 1024), dtype=nl.float32, buffer=nl.sbuf)  # 80 KiB more
        nisa.tensor_tensor(dst=a[:, 0:64], data1=a[:, 0:64], data2=b[:, 0:64], op=nl.add)

    error = expect("sbuf-capacity", kernel, X)
    assert "229376" in str(error)  # trn2's 224 KiB per partition


def test_engines_cannot_compute_on_hbm():
    def kernel(x):
        t = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.sbuf)
        # violation:
        nisa.activation(dst=t, op=nl.exp, data=x)

    expect("hbm-access", kernel, X)


def test_dtype_rules():
    def mixed(x):
        a = nl.load(x)
        b = nl.load(x, dtype=nl.bfloat16)
        out = nl.ndarray((64, 64), dtype=nl.float32, buffer=nl.psum)
        # violation:
        nisa.nc_matmul(dst=out, stationary=a, moving=b)

    expect("dtype", mixed, X)


def test_reading_never_written_memory():
    def kernel(x):
        out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
        t = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.sbuf)
        nisa.dma_copy(dst=t[:, 0:32], src=x[:, 0:32])
        # violation:
        nisa.dma_copy(dst=out, src=t)
        return out

    error = expect("uninitialized-read", kernel, X)
    assert "never written" in str(error)


def test_trace_time_errors_name_the_line():
    def kernel(x):
        # violation:
        nl.load(x[nl.ds(0, 300), :])

    expect("out-of-bounds", kernel, X)


def test_returning_an_on_chip_tile_is_an_error():
    def kernel(x):
        return nl.load(x)

    with pytest.raises(KernelRuleError, match="returns HBM tensors"):
        nki.simulate(kernel)(X)


def test_process_stays_usable_after_a_violation():
    def bad(x):
        nisa.memset(nl.ndarray((256, 4), dtype=nl.float32, buffer=nl.sbuf), 0.0)

    def good(x):
        out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
        nl.store(out, nl.multiply(nl.load(x), 2.0))
        return out

    with pytest.raises(KernelRuleError):
        nki.simulate(bad)(X)
    np.testing.assert_array_equal(nki.simulate(good)(X), 2 * X)


def test_unknown_keyword_arguments_are_errors_naming_call_and_line():
    def isa_call(x):
        t = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=x)
        # violation:
        nisa.tensor_scalar(dst=t, data=t, op0=nl.multiply, operand0=2.0, oprand1=3.0)
        return t

    error = expect("unknown-argument", isa_call, X)
    assert "nisa.tensor_scalar" in str(error) and "oprand1" in str(error)

    def language_call(x):
        t = nl.load(x)
        # violation:
        u = nl.exp(t, dtyp=nl.bfloat16)
        out = nl.ndarray(x.shape, dtype=nl.float32, buffer=nl.shared_hbm)
        nl.store(out, u)
        return out

    assert "dtyp" in str(expect("unknown-argument", language_call, X))

    def view_call(x):
        t = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.sbuf)
        # violation:
        t.ap([[64, 128], [1, 64]], offst=0)
        return t

    assert "offst" in str(expect("unknown-argument", view_call, X))

    # The API's neutral spellings still work: mask=None is accepted and changes nothing.
    def neutral(x):
        t = nl.load(x, mask=None)
        out = nl.ndarray(x.shape, dtype=nl.float32, buffer=nl.shared_hbm)
        nl.store(out, nl.exp(t, mask=None), mask=None)
        return out

    assert np.allclose(nki.simulate(neutral)(X), np.exp(X))
    with pytest.raises(TypeError, match="repeats"):
        nki.benchmark(neutral, repeats=3)
