"""Microscaling (MX) on the simulated NeuronCore-v4: quantize_mx and nc_matmul_mx against a
NumPy model of the OCP MX formats written here (groups of 8 partitions x 4 values sharing a
power-of-two scale), and the rules that keep packed data opaque and MX on trn3."""

import ml_dtypes
import numpy as np
import pytest

import openneuron.nki as nki
import openneuron.nki.isa as nisa
import openneuron.nki.language as nl
from openneuron.nki.errors import KernelRuleError

rng = np.random.default_rng(17)
LARGEST = {ml_dtypes.float8_e4m3fn: (448.0, 8), ml_dtypes.float8_e5m2: (57344.0, 15)}
PACKED = {ml_dtypes.float8_e4m3fn: nl.float8_e4m3fn_x4, ml_dtypes.float8_e5m2: nl.float8_e5m2_x4}


def _scale_row(group):
    return (group // 4) * 32 + group % 4


def _quantized(values, value_type):
    """(the quantized values as fp32 [P, F], scales [P // 8, F // 4]) of fp32 `values`."""
    largest, top_exponent = LARGEST[value_type]
    p, f = values.shape
    exponents = (values.view(np.uint32) >> 23) & 0xFF
    group_max = exponents.reshape(p // 8, 8, f // 4, 4).max(axis=(1, 3))
    scales = ((group_max.astype(np.int64) - top_exponent) % 256).astype(np.uint8)
    factor = np.repeat(np.repeat(2.0 ** (scales.astype(np.float64) - 127), 8, 0), 4, 1)
    scaled = np.clip(values / factor, -largest, largest)
    return scaled.astype(value_type).astype(np.float32), scales


def _dequantized(values, scales):
    factor = np.repeat(np.repeat(2.0 ** (scales.astype(np.float64) - 127), 8, 0), 4, 1)
    return values.astype(np.float64) * factor


def _quantize_and_multiply(value_type, k=128, m=64, n=96):
    @nki.jit(platform_target="trn3")
    def kernel(lhs, rhs):  # lhs [K, 4M], rhs [K, 4N], bf16
        out = nl.ndarray((m, n), dtype=nl.float32, buffer=nl.shared_hbm)
        product = nl.ndarray((m, n), dtype=nl.float32, buffer=nl.psum)
        operands = []
        for data in (lhs, rhs):
            tile = nl.ndarray(data.shape, dtype=data.dtype, buffer=nl.sbuf)
            nisa.dma_copy(dst=tile, src=data)
            packed = nl.ndarray((k, data.shape[1] // 4), dtype=PACKED[value_type], buffer=nl.sbuf)
            scales = nl.ndarray((k, data.shape[1] // 4), dtype=nl.uint8, buffer=nl.sbuf)
            nisa.quantize_mx(dst=packed, src=tile, dst_scale=scales)
            operands.append((packed, scales))
        (a, a_scales), (b, b_scales) = operands
        nisa.nc_matmul_mx(product, a, b, a_scales, b_scales)
        result = nl.ndarray((m, n), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_copy(dst=result, src=product)
        nisa.dma_copy(dst=out, src=result)
        return out

    return kernel


@pytest.mark.parametrize("value_type", [ml_dtypes.float8_e4m3fn, ml_dtypes.float8_e5m2])
def test_quantize_then_multiply_matches_the_mx_model(value_type):
    k, m, n = 128, 64, 96
    # Values across many binades, so groups get different scales.
    lhs = rng.standard_normal((k, 4 * m)) * 2.0 ** rng.integers(-6, 6, (k, 4 * m))
    rhs = rng.standard_normal((k, 4 * n)) * 2.0 ** rng.integers(-6, 6, (k, 4 * n))
    lhs, rhs = lhs.astype(ml_dtypes.bfloat16), rhs.astype(ml_dtypes.bfloat16)
    got = nki.simulate(_quantize_and_multiply(value_type, k, m, n))(lhs, rhs)
    a, a_scales = _quantized(lhs.astype(np.float32), value_type)
    b, b_scales = _quantized(rhs.astype(np.float32), value_type)
    a = _dequantized(a, a_scales).reshape(k, m, 4)
    b = _dequantized(b, b_scales).reshape(k, n, 4)
    expected = np.einsum("kiq,kjq->ij", a, b)
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5 * np.abs(expected).max())
    # Quantizing lost precision: the product differs from the unquantized one.
    plain = lhs.astype(np.float64).reshape(k, m, 4)
    unquantized = np.einsum("kiq,kjq->ij", plain, rhs.astype(np.float64).reshape(k, n, 4))
    assert not np.allclose(got, unquantized, rtol=1e-4)


def test_scales_land_in_the_first_four_partitions_of_each_quadrant():
    @nki.jit(platform_target="trn3")
    def kernel(x):
        out = nl.ndarray((128, 2), dtype=nl.uint8, buffer=nl.shared_hbm)
        tile = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=tile, src=x)
        packed = nl.ndarray((128, 2), dtype=nl.float8_e4m3fn_x4, buffer=nl.sbuf)
        scales = nl.ndarray((128, 2), dtype=nl.uint8, buffer=nl.sbuf)
        nisa.memset(scales, 0)
        nisa.quantize_mx(dst=packed, src=tile, dst_scale=scales)
        nisa.dma_copy(dst=out, src=scales)
        return out

    x = np.ones((128, 8), ml_dtypes.bfloat16)
    x[8:16, 4:8] = 4.0  # group row 1, column 1: exponent 129
    got = nki.simulate(kernel)(x)
    rows = [_scale_row(g) for g in range(16)]
    expected = np.zeros((128, 2), np.uint8)
    expected[rows, :] = 127 - 8  # exponent of 1.0, less e4m3's largest exponent
    expected[_scale_row(1), 1] = 129 - 8
    np.testing.assert_array_equal(got, expected)


def test_mx_needs_trn3():
    kernel = _quantize_and_multiply(ml_dtypes.float8_e4m3fn)
    lhs = np.zeros((128, 256), ml_dtypes.bfloat16)
    rhs = np.zeros((128, 384), ml_dtypes.bfloat16)
    with pytest.raises(KernelRuleError, match="NeuronCore-v4"):
        nki.estimate(kernel, lhs, rhs, profile="trn2")


def test_packed_values_are_opaque_to_other_instructions():
    @nki.jit(platform_target="trn3")
    def kernel(x):
        out = nl.ndarray((128, 2), dtype=nl.float32, buffer=nl.shared_hbm)
        packed = nl.ndarray((128, 2), dtype=nl.float8_e4m3fn_x4, buffer=nl.sbuf)
        nisa.dma_copy(dst=packed, src=x.ap(dtype=nl.float8_e4m3fn_x4, pattern=[[2, 128], [1, 2]]))
        wide = nl.ndarray((128, 2), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_scalar(dst=wide, data=packed, op0=nl.multiply, operand0=2.0)
        nisa.dma_copy(dst=out, src=wide)
        return out

    with pytest.raises(KernelRuleError, match="packed MX values"):
        nki.simulate(kernel)(np.zeros((128, 2), np.uint32))


def test_fp4_operands_prepared_on_the_host():
    """Packed fp4 (two values a byte, the low nibble first) viewed as float4_e2m1fn_x4."""
    k, m, n = 32, 16, 24

    @nki.jit(platform_target="trn3")
    def kernel(a_bytes, a_scales, b_bytes, b_scales):
        out = nl.ndarray((m, n), dtype=nl.float32, buffer=nl.shared_hbm)
        tiles = []
        for data, scales, width in ((a_bytes, a_scales, m), (b_bytes, b_scales, n)):
            packed = nl.ndarray((k, width), dtype=nl.float4_e2m1fn_x4, buffer=nl.sbuf)
            view = data.ap(dtype=nl.float4_e2m1fn_x4, pattern=[[width, k], [1, width]])
            nisa.dma_copy(dst=packed, src=view)
            scale_tile = nl.ndarray((k // 8, width), dtype=nl.uint8, buffer=nl.sbuf)
            nisa.dma_copy(dst=scale_tile, src=scales)  # 4 group rows: partitions 0-3
            tiles.append((packed, scale_tile))
        product = nl.ndarray((m, n), dtype=nl.float32, buffer=nl.psum)
        nisa.nc_matmul_mx(product, tiles[0][0], tiles[1][0], tiles[0][1], tiles[1][1])
        result = nl.ndarray((m, n), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_copy(dst=result, src=product)
        nisa.dma_copy(dst=out, src=result)
        return out

    def packed_fp4(rows, values_per_row):
        values = rng.integers(-6, 7, (rows, values_per_row)).astype(ml_dtypes.float4_e2m1fn)
        nibbles = values.view(np.uint8) & 0xF
        return values.astype(np.float64), (nibbles[:, 0::2] | (nibbles[:, 1::2] << 4))

    a, a_bytes = packed_fp4(k, 4 * m)
    b, b_bytes = packed_fp4(k, 4 * n)
    a_scales = rng.integers(120, 132, (k // 8, m)).astype(np.uint8)
    b_scales = rng.integers(120, 132, (k // 8, n)).astype(np.uint8)
    got = nki.simulate(kernel)(a_bytes, a_scales, b_bytes, b_scales)
    a = _dequantized(a.astype(np.float32), a_scales).reshape(k, m, 4)
    b = _dequantized(b.astype(np.float32), b_scales).reshape(k, n, 4)
    np.testing.assert_allclose(got, np.einsum("kiq,kjq->ij", a, b), rtol=1e-6)
