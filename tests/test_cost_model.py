"""The projected trn2/trn3 cost of eager ATen ops (openneuron.profiler.cost_model) on shapes
whose cost follows by hand from the published instruction costs."""

import pytest

from openneuron.profiler.cost_model import matmul_cost, op_cost

PE_GHZ, VECTOR_GHZ, SCALAR_GHZ = 2.4, 0.96, 1.2
DMA_FIXED_US = 1.3


def test_matmul_runs_on_the_tensor_engine_in_tiles():
    # [512, 1024] @ [1024, 1024]: 4 x 8 x 2 tiles of max(min(64, 128), 512) cycles.
    bf16 = op_cost("aten::mm", [[512, 1024], [1024, 1024]], ["c10::BFloat16"] * 2)
    assert bf16.engines_us["tensor"] == pytest.approx(4 * 8 * 2 * 512 / PE_GHZ / 1e3)
    assert bf16.bound == "dma"  # 4 MiB over DMA takes longer than 64 bf16 tiles
    fp32 = op_cost("aten::mm", [[512, 1024], [1024, 1024]], ["float"] * 2)
    assert fp32.engines_us["tensor"] == pytest.approx(4 * bf16.engines_us["tensor"])
    assert fp32.bound == "tensor"  # four passes per tile: now the array is the limit
    assert fp32.total_us == pytest.approx(fp32.engines_us["tensor"] + DMA_FIXED_US)
    # Batched and linear forms reach the same tiles.
    bmm = op_cost("aten::bmm", [[3, 512, 1024], [3, 1024, 1024]], ["c10::BFloat16"] * 2)
    assert bmm.engines_us["tensor"] == pytest.approx(3 * bf16.engines_us["tensor"])
    linear = op_cost("aten::linear", [[2, 256, 1024], [1024, 1024]], ["c10::BFloat16"] * 2)
    assert linear.engines_us["tensor"] == pytest.approx(bf16.engines_us["tensor"])


def test_small_matmuls_pay_the_stationary_floor():
    # N = 16 moving columns: each tile still costs min(64, M) = 64 cycles.
    cost = matmul_cost(1, 128, 128, 16, "bfloat16")
    assert cost.engines_us["tensor"] == pytest.approx(64 / PE_GHZ / 1e3)


def test_elementwise_add_is_vector_work_and_memory_bound_in_fp32():
    n = 1 << 24
    add = op_cost("aten::add.Tensor", [[n], [n]], ["float", "float"])
    per_partition = n // 128
    tiles = per_partition // 2048
    # Two fp32 inputs from SBUF: 2N cycles plus the 60-cycle SBUF access, per 2048-column tile.
    assert add.engines_us["vector"] == pytest.approx(tiles * (2 * 2048 + 60) / VECTOR_GHZ / 1e3)
    assert add.bound == "dma" and add.dma_bytes == 3 * n * 4
    trn3 = op_cost("aten::add.Tensor", [[n], [n]], ["float", "float"], profile="trn3")
    assert trn3.total_us < add.total_us  # faster DMA and Vector clock
    bf16 = op_cost("aten::add.Tensor", [[n], [n]], ["c10::BFloat16"] * 2)
    assert bf16.engines_us["vector"] == pytest.approx(tiles * (2048 + 60) / VECTOR_GHZ / 1e3)


def test_activations_run_on_the_scalar_engine_and_softmax_uses_three_passes():
    exp = op_cost("aten::exp", [[4096, 4096]], ["float"])
    tiles = 4096 * 4096 // 128 // 2048
    assert exp.engines_us["scalar"] == pytest.approx(tiles * (2048 + 60) / SCALAR_GHZ / 1e3)
    assert exp.engines_us["vector"] == 0
    softmax = op_cost("aten::_softmax", [[4096, 4096]], ["float"])
    assert softmax.instructions == 3 * tiles + 2 * tiles  # reduce, exp, scale; load, store
    assert softmax.engines_us["scalar"] == pytest.approx(exp.engines_us["scalar"])
    assert softmax.engines_us["vector"] > 0


def test_two_cores_of_a_logical_core_halve_the_engine_time():
    one = op_cost("aten::mm", [[2048, 2048], [2048, 2048]], ["float"] * 2)
    two = op_cost("aten::mm", [[2048, 2048], [2048, 2048]], ["float"] * 2, cores=2)
    assert two.engines_us["tensor"] == pytest.approx(one.engines_us["tensor"] / 2)
    assert two.total_us == pytest.approx(one.engines_us["tensor"] / 2 + DMA_FIXED_US)


def test_unknown_ops_and_shapeless_calls_have_no_cost():
    assert op_cost("aten::_fft_r2c", [[64, 64]], ["float"]) is None
    assert op_cost("aten::add", [], []) is None


def test_grouped_matmul_costs_one_product_per_expert():
    """An MoE layer's _grouped_mm: 8 experts sharing 2048 tokens cost as 8 products of 256 rows
    (the same Tensor-engine time as one product of 2048 rows, but 8 weights' worth of DMA)."""
    dtypes = ["c10::BFloat16", "c10::BFloat16", "int"]
    grouped = op_cost("aten::_grouped_mm", [[2048, 512], [8, 512, 1024], [8]], dtypes)
    per_expert = matmul_cost(8, 256, 512, 1024, "bfloat16")
    assert grouped.total_us == pytest.approx(per_expert.total_us)
    assert grouped.flops == 2 * 2048 * 512 * 1024
    dense = matmul_cost(1, 2048, 512, 1024, "bfloat16")
    assert grouped.engines_us["tensor"] == pytest.approx(dense.engines_us["tensor"])
    assert grouped.dma_bytes > dense.dma_bytes
    # The weight-gradient form splits the tokens of [M, T] @ [T, N] into the offsets' groups.
    gradient = op_cost("aten::_grouped_mm", [[512, 2048], [2048, 1024], [8]], dtypes)
    assert gradient.total_us == pytest.approx(matmul_cost(8, 512, 256, 1024, "bfloat16").total_us)


def test_scaled_float8_matmuls_run_at_the_fp8_rate():
    """torch._scaled_mm at 2048^3: the Tensor engine at twice its bf16 rate (trn2's FP8 "double
    row"), one byte per operand element; a bf16 mm of the same shape is slower."""
    shapes = [[2048, 2048], [2048, 2048], [], []]
    dtypes = ["c10::Float8_e4m3fn", "c10::Float8_e4m3fn", "float", "float"]
    fp8 = op_cost("aten::_scaled_mm", shapes, dtypes)
    bf16 = matmul_cost(1, 2048, 2048, 2048, "bfloat16")
    assert fp8.engines_us["tensor"] == pytest.approx(bf16.engines_us["tensor"] / 2)
    assert fp8.flops == bf16.flops
    assert fp8.dma_bytes < bf16.dma_bytes
    assert fp8.total_us < bf16.total_us
    # Experts in FP8: the grouped form shares the grouped product's shape rules.
    grouped = op_cost(
        "aten::_scaled_grouped_mm",
        [[2048, 512], [8, 512, 1024], [2048], [8, 1024], [8]],
        ["c10::Float8_e4m3fn", "c10::Float8_e4m3fn", "float", "float", "int"],
    )
    per_expert = matmul_cost(8, 256, 512, 1024, "bfloat16")
    assert grouped.engines_us["tensor"] == pytest.approx(per_expert.engines_us["tensor"] / 2)
