"""The projected trn2/trn3 time of an eager ATen op, from the NeuronCore simulator's own
instruction costs (``csrc/sim/cost_model.h``): matmuls as 128 x 128 x 512 tiles on the Tensor
engine, elementwise math on the Vector engine, activations and transcendentals on the Scalar
engine, reductions, softmax and norms as their instruction passes over rows of 128 partitions,
and HBM traffic on the 16 DMA engines. The op takes as long as its busiest engine plus one DMA
latency. Ops it does not know return None (the profiler then falls back to its roofline)."""

from collections.abc import Sequence
from dataclasses import dataclass
from math import prod
from typing import Any

from openneuron.nki import trace as tr

# Profiler dtype strings -> simulator dtype names.
_DTYPES = {
    "float": "float32",
    "float32": "float32",
    "c10::BFloat16": "bfloat16",
    "bfloat16": "bfloat16",
    "c10::Half": "float16",
    "half": "float16",
    "float16": "float16",
    "int": "int32",
    "int32": "int32",
    "bool": "uint8",
    "unsigned char": "uint8",
    "signed char": "int8",
    "c10::Float8_e4m3fn": "float8_e4m3",
    "float8_e4m3fn": "float8_e4m3",
    "c10::Float8_e5m2": "float8_e5m2",
    "float8_e5m2": "float8_e5m2",
    "c10::Float8_e8m0fnu": "float8_e8m0",
    "float8_e8m0fnu": "float8_e8m0",
    "c10::Float4_e2m1fn_x2": "float4_e2m1_x2",
    "float4_e2m1fn_x2": "float4_e2m1_x2",
}
_BYTES = {"float32": 4, "bfloat16": 2, "float16": 2, "int32": 4, "uint8": 1, "int8": 1}
_BYTES.update({"float8_e4m3": 1, "float8_e5m2": 1})

# Dense FP8 TFLOPS per core: the Tensor engine's "double row" FP8 mode acts as a 256 x 128 array
# on trn2 (158 TFLOPS against 79 for bf16). trn3 publishes its MX rate (315, a 512 x 128 array)
# but not a plain FP8 one; tensor-wise and row-wise FP8 is priced there at trn2's double rate.
FP8_TFLOPS = {"trn2": 158.0, "trn3": 158.0}
# MX products (float8_e8m0 block scales, MXFP8 or MXFP4): trn3's MX mode (a 512 x 128 array);
# trn2 has none, so they are priced at its FP8 double-row rate there.
MX_TFLOPS = {"trn2": 158.0, "trn3": 315.0}
SCALED_MATMULS = {"_scaled_mm", "_scaled_grouped_mm"}

MATMULS = {"mm", "addmm", "bmm", "baddbmm", "matmul", "linear"}
# Scalar engine: one input through the activation table.
ACTIVATIONS = {
    "exp", "log", "tanh", "sigmoid", "relu", "gelu", "silu", "sqrt", "rsqrt", "reciprocal",
    "sin", "cos", "erf", "abs", "neg", "softplus", "mish", "hardtanh", "elu", "leaky_relu",
    "square", "exp2", "log1p", "expm1",
}  # fmt: skip
# Vector engine: two inputs elementwise (one input and a scalar when only one tensor is given).
BINARY = {
    "add", "sub", "mul", "div", "maximum", "minimum", "pow", "eq", "ne", "lt", "le", "gt", "ge",
    "threshold_backward", "gelu_backward", "silu_backward", "sigmoid_backward", "tanh_backward",
    "masked_fill", "fill", "zero", "clamp", "lerp", "addcmul", "addcdiv", "where", "bitwise_and",
    "logical_and", "logical_or", "rsub", "remainder", "fmod",
}  # fmt: skip
REDUCTIONS = {"sum", "mean", "amax", "amin", "max", "min", "argmax", "argmin", "prod", "norm"}
COPIES = {"copy", "clone", "contiguous", "_to_copy", "cat", "stack", "index_select", "gather"}


@dataclass(frozen=True)
class OpCost:
    """One op on one profile: the total, the time of each engine (µs), the busiest engine."""

    total_us: float
    engines_us: dict
    bound: str
    flops: float
    dma_bytes: int
    instructions: int


def _base(name: str) -> str:
    base = name.split("::")[-1].split(".")[0]
    return base.rstrip("_") if base.endswith("_") and not base.startswith("_") else base


def _tensors(shapes: Sequence[Any], dtypes: Sequence[str]):
    found = []
    for i, shape in enumerate(shapes):
        if isinstance(shape, (list, tuple)) and shape and all(isinstance(s, int) for s in shape):
            found.append((list(shape), _DTYPES.get(dtypes[i] if i < len(dtypes) else "", None)))
    return found


def _result(raw: dict) -> OpCost:
    return OpCost(
        total_us=raw["total_ns"] / 1e3,
        engines_us={name: ns / 1e3 for name, ns in raw["engines"].items()},
        bound=raw["bound"],
        flops=raw["flops"],
        dma_bytes=raw["dma_bytes"],
        instructions=raw["instructions"],
    )


def matmul_cost(batch: int, m: int, k: int, n: int, dtype="float32", profile="trn2") -> OpCost:
    """batch x [m, k] @ [k, n] in `dtype` ("float32", "bfloat16", ...)."""
    from openneuron import _C

    return _result(_C._sim_matmul_cost(profile, batch, m, k, n, dtype))


def rows_cost(rows, cols, passes, dtype="float32", bytes_in=0, bytes_out=0, profile="trn2"):
    """An op of instruction `passes` [(opcode, inputs), ...] over [rows, cols]."""
    from openneuron import _C

    return _result(_C._sim_rows_cost(profile, rows, cols, passes, dtype, bytes_in, bytes_out))


def _grouped_matmul_cost(shapes, dtype, profile):
    """torch._grouped_mm as a batch of one product per group, each group taking an equal share
    of the grouped dimension (the offsets' values are not in the profile, only their count)."""
    mats = [s for s in shapes if len(s) >= 2]
    if len(mats) < 2:
        return None
    a, b = mats[0], mats[1]
    if len(a) == 3 and len(b) == 3:
        return matmul_cost(a[0], a[1], a[2], b[2], dtype, profile)
    if len(a) == 2 and len(b) == 3:  # tokens [T, K] by experts [G, K, N]
        return matmul_cost(b[0], -(-a[0] // b[0]), a[1], b[2], dtype, profile)
    if len(a) == 3 and len(b) == 2:  # experts [G, M, K] by tokens [K, T]
        return matmul_cost(a[0], a[1], a[2], -(-b[1] // a[0]), dtype, profile)
    offsets = [s for s in shapes if len(s) == 1]
    groups = offsets[0][0] if offsets else 1  # [M, T] by [T, N], T split into groups
    return matmul_cost(groups, a[0], -(-a[1] // groups), b[1], dtype, profile)


def _at_float8_rate(cost: OpCost, profile: str, rates=FP8_TFLOPS) -> OpCost:
    """cost, a product costed as 8-bit bf16-rate matmul instructions, with its Tensor-engine
    time at the FP8 rate, or the MX rate given `rates=MX_TFLOPS` (DMA and PSUM evacuation
    unchanged)."""
    from openneuron import _C

    speedup = rates[profile] / _C._sim_profile(profile)["peak_bf16_tflops"]
    engines = dict(cost.engines_us)
    engines["tensor"] = engines["tensor"] / speedup
    latency = cost.total_us - max(cost.engines_us.values())
    bound = max(engines, key=engines.get)
    return OpCost(
        total_us=engines[bound] + latency,
        engines_us=engines,
        bound=bound,
        flops=cost.flops,
        dma_bytes=cost.dma_bytes,
        instructions=cost.instructions,
    )


def _scaled_matmul_cost(base, tensors, profile):
    """torch._scaled_mm / _scaled_grouped_mm: float8 operands at the FP8 rate; the scales are
    applied while the accumulator is evacuated, so they add no pass of their own."""
    mats = [s for s, _ in tensors if len(s) >= 2][:2]
    if len(mats) < 2:
        return None
    dtype = next((d for _, d in tensors if d in ("float8_e4m3", "float8_e5m2")), "float8_e4m3")
    mx = any(d == "float8_e8m0" for _, d in tensors)
    if base == "_scaled_mm":
        a, b = mats
        # Packed fp4 holds two elements per byte: K counts elements (its DMA is costed at one
        # byte per element, twice what fp4 moves).
        k = a[1] * 2 if tensors[0][1] == "float4_e2m1_x2" else a[1]
        cost = matmul_cost(1, a[0], k, b[1], dtype, profile)
    else:
        offsets = [s for s, d in tensors if len(s) == 1 and d == "int32"]
        cost = _grouped_matmul_cost(mats + offsets, dtype, profile)
    if cost is None:
        return None
    return _at_float8_rate(cost, profile, MX_TFLOPS if mx else FP8_TFLOPS)


def op_cost(name: str, shapes: Sequence[Any], dtypes: Sequence[str], profile="trn2", cores=1):
    """The projected cost of ATen op `name` on input `shapes` / `dtypes` (as the profiler
    records them) on `cores` physical NeuronCores sharing the work (a logical core at LNC=2
    has two), or None for an op the model does not know."""
    cost = _one_core_cost(name, shapes, dtypes, profile)
    if cost is None or cores == 1:
        return cost
    busiest = max(cost.engines_us.values())
    return OpCost(
        total_us=busiest / cores + (cost.total_us - busiest),  # the DMA latency stays
        engines_us={e: t / cores for e, t in cost.engines_us.items()},
        bound=cost.bound,
        flops=cost.flops,
        dma_bytes=cost.dma_bytes,
        instructions=cost.instructions,
    )


def _one_core_cost(name, shapes, dtypes, profile):
    base = _base(name)
    tensors = _tensors(shapes, dtypes)
    if not tensors:
        return None
    dtype = next((d for _, d in tensors if d is not None), "float32")
    if dtype not in ("float32", "bfloat16", "float16"):
        dtype = "float32" if base in MATMULS else dtype
    size = _BYTES.get(dtype, 4)
    if base in MATMULS:
        mats = [s for s, _ in tensors if len(s) >= 2]
        if len(mats) < 2:
            return None
        a, b = (mats[-2], mats[-1]) if base in ("addmm", "baddbmm") else (mats[0], mats[1])
        if base == "linear":
            b = [b[-1], b[0]]
        batch = prod(a[:-2]) if base != "linear" else 1
        m = a[-2] if base != "linear" else prod(a[:-1])
        return matmul_cost(batch, m, a[-1], b[-1], dtype, profile)
    if base == "_grouped_mm":
        return _grouped_matmul_cost([s for s, _ in tensors], dtype, profile)
    if base in SCALED_MATMULS:
        return _scaled_matmul_cost(base, tensors, profile)
    numels = [prod(s) for s, _ in tensors]
    largest, shape = max(zip(numels, (s for s, _ in tensors), strict=True))
    bytes_in = sum(numels) * size
    cols = shape[-1]
    rows = max(largest // max(cols, 1), 1)
    if base in ACTIVATIONS:
        passes = [(tr.ACTIVATION, 1)]
    elif base in BINARY:
        passes = [(tr.SELECT if base == "where" else tr.TENSOR_TENSOR, 2)]
        if len(tensors) == 1:
            passes = [(tr.TENSOR_SCALAR, 1)]
    elif base in REDUCTIONS:
        return rows_cost(rows, cols, [(tr.TENSOR_REDUCE, 1)], dtype, bytes_in, rows * size, profile)
    elif base in ("softmax", "_softmax", "log_softmax", "_log_softmax"):
        passes = [(tr.TENSOR_REDUCE, 1), (tr.ACTIVATION, 1), (tr.TENSOR_SCALAR, 1)]
    elif base in ("layer_norm", "native_layer_norm"):
        passes = [(tr.BN_STATS, 1), (tr.TENSOR_SCALAR, 1), (tr.TENSOR_TENSOR, 2)]
        passes += [(tr.TENSOR_TENSOR, 2)]
    elif base in ("rms_norm", "_fused_rms_norm"):
        passes = [(tr.ACTIVATION, 1), (tr.TENSOR_SCALAR, 1), (tr.TENSOR_TENSOR, 2)]
    elif base in COPIES:
        passes = []
    else:
        return None
    if base in ACTIVATIONS or base in BINARY or base in COPIES:
        # Elementwise: the elements spread over every partition, whatever their shape.
        rows, cols = min(largest, 128), -(-largest // 128)
    return rows_cost(rows, cols, passes, dtype, bytes_in, largest * size, profile)
