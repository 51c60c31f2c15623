"""What an op would take on a NeuronCore. Ops the simulator's cost model knows (matmuls,
elementwise math, activations, reductions, softmax, norms, copies: ``cost_model.py``) get its
per-engine projection; any other op gets a roofline: the larger of its arithmetic time at the
tensor engine's published peak and its memory time at the published HBM bandwidth. Both have a
fixed launch floor, and every report says which applies (``METHOD``)."""

from collections.abc import Sequence
from dataclasses import dataclass
from math import prod
from typing import Any

LNC = 2  # physical NeuronCores per logical core (the device's default on trn2 and trn3)
LAUNCH_FLOOR_US = 2.0  # an assumed fixed cost per queued device op
VECTOR_FRACTION = 1 / 16  # assumed: non-matmul ops reach this fraction of the bf16 tensor peak
METHOD = (
    "the NeuronCore simulator's cost model (instruction costs per engine, DMA) for matmul, "
    "elementwise, activation, reduction, softmax, norm and copy ops; a roofline from the "
    "published peaks for other ops (non-matmul ops at "
    f"1/{round(1 / VECTOR_FRACTION)} of the bf16 peak); a {LAUNCH_FLOOR_US:g} us launch floor"
)
HOST_LINK_GB_PER_S = 64.0  # an assumed host <-> device link (PCIe Gen5 x16) for H2D/D2H copies

_DTYPE_BYTES = {
    "float": 4,
    "float32": 4,
    "c10::BFloat16": 2,
    "bfloat16": 2,
    "c10::Half": 2,
    "half": 2,
    "float16": 2,
    "double": 8,
    "float64": 8,
    "long int": 8,
    "int64": 8,
    "int": 4,
    "int32": 4,
    "bool": 1,
    "unsigned char": 1,
    "signed char": 1,
    "short int": 2,
}


@dataclass(frozen=True)
class Projection:
    flops: float
    bytes: float
    trn2_us: float
    trn3_us: float
    bound: str  # "compute", "memory" or "launch" (on trn2)
    engine: str = ""  # the busiest engine on trn2 (cost-model ops), else ""


_profiles_cache: dict[str, dict[str, float]] = {}


def profiles() -> dict[str, dict[str, float]]:
    """The trn2/trn3 constants the runtime's device profiles define (one source for all)."""
    if not _profiles_cache:
        from openneuron import _C

        for entry in _C._device_profiles():
            _profiles_cache[entry["name"]] = dict(entry)
    return _profiles_cache


def _numel(shape: Sequence[Any]) -> int:
    return int(prod(int(s) for s in shape)) if shape else 1


def _is_shape(value: Any) -> bool:
    return isinstance(value, (list, tuple)) and all(isinstance(s, int) for s in value)


def estimate_work(
    name: str, shapes: Sequence[Any], dtypes: Sequence[str]
) -> tuple[float, float, bool]:
    """(flops, bytes moved, uses the tensor engine) of one op from its input shapes; bytes are
    the inputs read plus an output the size of the largest input (matmuls: their real output)."""
    tensors = [
        (list(s), dtypes[i] if i < len(dtypes) else "float")
        for i, s in enumerate(shapes)
        if _is_shape(s) and len(s) > 0
    ]
    sizes = [_numel(s) * _DTYPE_BYTES.get(d, 4) for s, d in tensors]
    largest = max(sizes, default=0)
    base = name.split("::")[-1].split(".")[0]
    mats = [s for s, _ in tensors if len(s) >= 2]
    elem = _DTYPE_BYTES.get(tensors[0][1], 4) if tensors else 4
    if base in ("mm", "addmm", "bmm", "baddbmm", "matmul", "linear") and len(mats) >= 2:
        a, b = (mats[-2], mats[-1]) if base in ("addmm", "baddbmm") else (mats[0], mats[1])
        if base == "linear":
            b = [b[-1], b[0]]
        m, k, n = a[-2], a[-1], b[-1]
        batch = _numel(a[:-2])
        return 2.0 * batch * m * k * n, sum(sizes) + batch * m * n * elem, True
    if "convolution" in base and len(mats) >= 2:
        x, w = mats[0], mats[1]
        if base == "convolution_backward" and len(mats) >= 3:
            x, w = mats[1], mats[2]
        spatial = _numel(x[2:]) if len(x) > 2 else 1
        flops = 2.0 * x[0] * w[0] * spatial * _numel(w[1:])
        return flops * (2 if "backward" in base else 1), sum(sizes) + largest, True
    if "attention" in base and len(mats) >= 3:
        q, k = mats[0], mats[1]
        flops = 4.0 * _numel(q[:-1]) * k[-2] * q[-1]
        return flops * (2.5 if "backward" in base else 1), sum(sizes) + largest, True
    numel = max((_numel(s) for s, _ in tensors), default=0)
    return float(numel), float(sum(sizes) + largest), False


def project(
    name: str,
    shapes: Sequence[Any] = (),
    dtypes: Sequence[str] = (),
    copy_bytes: int = 0,
    copy_kind: str = "",
) -> Projection:
    """The projected trn2/trn3 time of one device op (or of a copy of ``copy_bytes``)."""
    if copy_kind:
        over_host = copy_kind in ("HtoD", "DtoH")
        times = {}
        for profile, spec in profiles().items():
            bandwidth = HOST_LINK_GB_PER_S if over_host else spec["hbm_gb_per_s"]
            moved = copy_bytes if over_host else 2 * copy_bytes
            times[profile] = max(moved / (bandwidth * 1e3), LAUNCH_FLOOR_US)
        bound = "memory" if times["trn2"] > LAUNCH_FLOOR_US else "launch"
        return Projection(0.0, float(copy_bytes), times["trn2"], times["trn3"], bound)
    modelled = _cost_model_projection(name, shapes, dtypes)
    if modelled is not None:
        return modelled
    flops, moved, tensor_engine = estimate_work(name, shapes, dtypes)
    low_precision = any(d in ("c10::BFloat16", "c10::Half") for d in dtypes)
    times, bounds = {}, {}
    for profile, spec in profiles().items():
        peak = (
            spec["peak_bf16_tflops"]
            if (low_precision or not tensor_engine)
            else spec["peak_fp32_tflops"]
        )
        if not tensor_engine:
            peak = spec["peak_bf16_tflops"] * VECTOR_FRACTION
        compute_us = flops / (peak * 1e6)
        memory_us = moved / (spec["hbm_gb_per_s"] * 1e3)
        time = max(compute_us, memory_us, LAUNCH_FLOOR_US)
        times[profile] = time
        bounds[profile] = (
            "launch"
            if time == LAUNCH_FLOOR_US
            else "compute"
            if compute_us >= memory_us
            else "memory"
        )
    return Projection(flops, moved, times["trn2"], times["trn3"], bounds["trn2"])


def _cost_model_projection(name: str, shapes: Sequence[Any], dtypes: Sequence[str]):
    from openneuron.profiler.cost_model import op_cost

    costs = {p: op_cost(name, shapes, dtypes, profile=p, cores=LNC) for p in ("trn2", "trn3")}
    if costs["trn2"] is None:
        return None
    trn2 = costs["trn2"]
    times = {p: max(c.total_us, LAUNCH_FLOOR_US) for p, c in costs.items()}
    if times["trn2"] == LAUNCH_FLOOR_US:
        bound = "launch"
    else:
        bound = "memory" if trn2.bound == "dma" else "compute"
    return Projection(
        trn2.flops, float(trn2.dma_bytes), times["trn2"], times["trn3"], bound, trn2.bound
    )
