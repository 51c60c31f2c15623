"""Differential conformance checks: PyTorch's OpInfo and ModuleInfo databases, neuron vs CPU.

One call checks one (op, dtype) or (module, dtype) pair over every sample the database
generates for the CPU, and classifies the pair:

- "native":   every check passed and nothing fell back to the host during the neuron runs;
- "fallback": every check passed, but some op ran on the host fallback;
- "fail":     the CPU ran a sample and neuron gave a different result or raised;
- "skip":     no sample ran on the CPU (no samples, or the CPU itself raised), with the reason.

Checks per sample: forward values/dtype/shape, gradients of differentiable floating-point
samples (backward on neuron vs backward on CPU), the out= variant, the in-place variant, and
the forward of a non-contiguous copy of the sample. Inputs keep their strides when copied to
the device, so non-contiguous CPU samples stay non-contiguous on neuron.

Tolerances: torch.testing.assert_close's defaults for the result dtype, raised (never lowered)
to the OpInfo's own toleranceOverride / precisionOverride for that dtype where it declares one.

Dtypes CUDA has and the CPU lacks (CUDA-only pairs, DESIGN.md decision 17) are checked too:
their CPU reference runs at the nearest wider dtype the CPU has and is rounded once to the
dtypes the op returns (WidenedReference), and CUDA's OpInfo decorators apply to them as well.
"""

from __future__ import annotations

import copy
import dataclasses
import time
import warnings
from collections import Counter
from collections.abc import Callable, Iterable
from typing import Any

import torch
from torch.testing._comparison import default_tolerances
from torch.testing._internal.common_device_type import precisionOverride, toleranceOverride
from torch.testing._internal.common_utils import noncontiguous_like
from torch.testing._internal.opinfo.core import DecorateInfo, OpInfo

import openneuron

from .arbiter import ARBITRATED_DTYPES, DTYPE_LIMIT_OPS, closer_than_cpu
from .arbiter import RULE as ARBITER_RULE
from .known import signature
from .layouts import RULE as LAYOUT_RULE
from .layouts import matches_a_cpu_layout
from .strides import FakeRun, stride_mismatch

DEVICE = "neuron"

# Tests of PyTorch's own suite whose OpInfo decorators describe a device-vs-CPU comparison.
_RELEVANT_TESTS = {
    None,
    "test_compare_cpu",
    "test_noncontiguous_samples",
    "test_variant_consistency_eager",
    "test_out",
}
# TestModule's tests that compare a module's results (with CPU, with a reference function,
# between memory layouts): their tolerance overrides state how exactly PyTorch expects a
# module's values to agree, as _RELEVANT_TESTS' do for ops.
_RELEVANT_MODULE_TESTS = {
    None,
    "test_cpu_gpu_parity",
    "test_forward",
    "test_non_contiguous_tensors",
}
# A skip of one of these tests whose reason says the values are undefined means the values
# cannot be compared between two implementations at all (random or uninitialized outputs).
_INCOMPARABLE_WORDS = (
    "non-deterministic", "nondeterministic", "not comparable", "undefined", "random",
    "uninitialized",
)  # fmt: skip

# Ops whose outputs are random or uninitialized but whose OpInfo does not say so; only
# shape, dtype and device are compared for them.
VALUES_NOT_COMPARABLE = {
    "bernoulli": "random output",
    "normal": "random output",
    "normal.number_mean": "random output",
    "randn": "random output",
    "randn_like": "random output",
    "rand_like": "random output",
    "randint": "random output",
    "randint_like": "random output",
    "uniform": "random output",
    "multinomial": "random output",
    "nn.functional.dropout": "random output",
    "nn.functional.dropout2d": "random output",
    "nn.functional.dropout3d": "random output",
    "nn.functional.alpha_dropout": "random output",
    "nn.functional.rrelu": "random output",
    "empty": "uninitialized output",
    "empty_like": "uninitialized output",
    "new_empty": "uninitialized output",
    "new_empty_strided": "uninitialized output",
    "empty_strided": "uninitialized output",
    "empty_permuted": "uninitialized output",
}

# Ops whose samples name the CPU as the result's device (e.g. x.to("cpu")): a result on the
# CPU is right for them.
DEVICE_CHANGING_OPS = {"to": "samples move tensors to an explicitly named device"}

# Ops whose non-input tensor arguments PyTorch requires on the CPU on every device.
HOST_ARGUMENT_OPS = {"tensor_split": "tensor_indices_or_sections must be a CPU tensor"}

# Ops whose CPU kernel at 16 bits is no reference at all: the CPU result of these is taken
# at float32 (16-bit tensors widened, results rounded once to the dtype), as the device
# computes them. Each entry says what is wrong with the CPU's own 16-bit kernel.
CPU_REFERENCE_AT_FLOAT32 = {
    "nn.functional.grid_sample": (
        "PyTorch's CPU grid_sampler_2d computes element offsets in the 16-bit type (exact only "
        "below 2048 for float16, 256 for bfloat16): on the 345x456 reference inputs it samples "
        "the wrong elements and its backward writes outside its tensors (heap corruption, abort)"
    ),
}
_NARROW_FLOATS = (torch.float16, torch.bfloat16)

# Modules with random forward passes in training mode: they are checked in eval mode.
RANDOM_IN_TRAINING = ("Dropout", "AlphaDropout", "FeatureAlphaDropout", "RReLU")

# Whose OpInfo decorators (tolerances, skips) apply: the CPU's for a dtype the CPU has; for a
# dtype only CUDA has, CUDA's too (the CPU's suite never runs it, so only CUDA's declare any).
CPU_DEVICES = ("cpu",)
CUDA_ONLY_DEVICES = ("cpu", "cuda")
# PyTorch's own test of complex32 against the op at complex64 rounded down: exactly the
# comparison of a CUDA-only complex32 pair, so its tolerance overrides apply to those.
_COMPLEX_HALF_TESTS = _RELEVANT_TESTS | {"test_complex_half_reference_testing"}

# CUDA-only dtypes (DESIGN.md decision 17): the CPU reference runs at the first of these the
# CPU accepts for the sample, and rounds its results once, as the host fallback does. A dtype
# that is already wide tries itself first (the OpInfo may list it for CUDA only although the
# CPU runs it, e.g. batch_norm.without_cudnn).
_WIDE_INTEGER = (torch.int64, torch.float64)
WIDER_DTYPES = {
    torch.float16: (torch.float32, torch.float64),
    torch.bfloat16: (torch.float32, torch.float64),
    torch.float32: (torch.float32, torch.float64),
    torch.float64: (torch.float64,),
    torch.complex32: (torch.complex64, torch.complex128),
    torch.complex64: (torch.complex64, torch.complex128),
    torch.complex128: (torch.complex128,),
    torch.bool: _WIDE_INTEGER,
    torch.uint8: _WIDE_INTEGER,
    torch.int8: _WIDE_INTEGER,
    torch.int16: _WIDE_INTEGER,
    torch.int32: _WIDE_INTEGER,
    torch.int64: _WIDE_INTEGER,
    torch.uint16: _WIDE_INTEGER,
    torch.uint32: _WIDE_INTEGER,
}


def op_full_name(op: OpInfo) -> str:
    """The OpInfo's name with its variant, e.g. "max.reduction_with_dim"."""
    return f"{op.name}.{op.variant_test_name}" if op.variant_test_name else op.name


def dtype_name(dtype: torch.dtype) -> str:
    return str(dtype).removeprefix("torch.")


def op_dtypes(op: OpInfo) -> list[torch.dtype]:
    """Every dtype the sweep checks op at: the CPU's and CUDA's (neuron must accept both)."""
    both = set(op.supported_dtypes("cpu")) | set(op.supported_dtypes("cuda"))
    return sorted(both, key=str)


def is_cuda_only(op: OpInfo, dtype: torch.dtype) -> bool:
    """Whether the OpInfo lists dtype for CUDA and not for the CPU (metadata: no GPU needed)."""
    return dtype not in op.supported_dtypes("cpu") and dtype in op.supported_dtypes("cuda")


def cuda_only_dtypes(op: OpInfo) -> list[torch.dtype]:
    return [d for d in op_dtypes(op) if is_cuda_only(op, d)]


@dataclasses.dataclass
class Result:
    """The outcome for one (op or module, dtype) pair."""

    kind: str  # "op" or "module"
    name: str
    dtype: str
    status: str  # native / fallback / fail / skip
    reason: str = ""  # first failure, or why skipped
    samples: int = 0  # samples the CPU ran
    checks: int = 0  # comparisons made (forward, grad, out=, in-place, non-contiguous)
    value_samples: int = 0  # samples whose values were compared (not only dtype/shape/device)
    stride_checks: int = 0  # forward / gradient outputs whose strides met the meta kernel's
    # Values that missed the CPU's beyond tolerance and passed by a rule, per rule; and the
    # first such value.
    decided_by: dict[str, int] = dataclasses.field(default_factory=dict)
    arbitrated: str = ""
    failures: list[str] = dataclasses.field(default_factory=list)  # up to a few, one line each
    # Every failure's signature (which sample, which check, what kind): known.signature.
    signatures: list[str] = dataclasses.field(default_factory=list)
    fallback_ops: dict[str, int] = dataclasses.field(default_factory=dict)
    seconds: float = 0.0
    # A dtype CUDA has and the CPU lacks: the CPU reference ran at widened_to (one or more
    # dtypes, comma-separated) and was rounded to the dtypes the op returns.
    cuda_only: bool = False
    widened_to: str = ""
    # Host-fallback runs on neuron that computed at a wider dtype: {aten op: {dtype: wider}}.
    widened_ops: dict[str, dict[str, str]] = dataclasses.field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


class CheckFailure(AssertionError):
    """A neuron result that differs from the CPU's (or neuron raised where the CPU did not)."""


# ----------------------------------------------------------------------------- tolerances


def _active_decorators(
    decorators: Iterable[Any], dtype: torch.dtype, cls_names, tests=_RELEVANT_TESTS,
    devices=CPU_DEVICES,
) -> list[Any]:  # fmt: skip
    active = []
    for info in decorators or ():
        if not isinstance(info, DecorateInfo):
            active.append((None, info))  # bare decorators apply to every test
            continue
        if info.cls_name not in cls_names or info.test_name not in tests:
            continue
        if info.device_type is not None and info.device_type not in devices:
            continue
        if info.dtypes is not None and dtype not in info.dtypes:
            continue
        if callable(info.active_if) or not info.active_if:
            continue
        active.extend((info.test_name, d) for d in info.decorators)
    return active


def tolerances(
    decorators, dtype: torch.dtype, cls_names=(None, "TestCommon"), tests=_RELEVANT_TESTS,
    devices=CPU_DEVICES,
) -> tuple[float, float]:  # fmt: skip
    """(rtol, atol): assert_close's defaults for dtype, raised to the OpInfo's (or
    ModuleInfo's) overrides for the tests that compare results on devices."""
    rtol, atol = default_tolerances(dtype)
    for _test, decorator in _active_decorators(decorators, dtype, cls_names, tests, devices):
        if isinstance(decorator, toleranceOverride) and dtype in decorator.d:
            atol = max(atol, decorator.d[dtype].atol)
            rtol = max(rtol, decorator.d[dtype].rtol)
        elif isinstance(decorator, precisionOverride) and dtype in decorator.d:
            atol = max(atol, decorator.d[dtype])
    return rtol, atol


def skipped_by_opinfo(
    op: OpInfo, dtype: torch.dtype, test_name: str, devices=CPU_DEVICES
) -> str | None:
    """The OpInfo's reason for skipping PyTorch's test_name at dtype on devices, or None."""
    for test, decorator in _active_decorators(
        op.decorators, dtype, (None, "TestCommon"), devices=devices
    ):
        if test == test_name and getattr(decorator, "__qualname__", "").startswith("skip."):
            return getattr(decorator(lambda: None), "__unittest_skip_why__", "") or "no reason"
    return None


def incomparable_reason(op: OpInfo, dtype: torch.dtype, devices=CPU_DEVICES) -> str | None:
    """Why this op's values cannot be compared with the CPU's, or None if they can."""
    name = op_full_name(op)
    if name in VALUES_NOT_COMPARABLE:
        return VALUES_NOT_COMPARABLE[name]
    for _test, decorator in _active_decorators(
        op.decorators, dtype, (None, "TestCommon"), devices=devices
    ):
        if not getattr(decorator, "__qualname__", "").startswith("skip."):
            continue
        why = getattr(decorator(lambda: None), "__unittest_skip_why__", "")
        # Only a reason saying the values are undefined turns value checks off; a skip of
        # test_compare_cpu for anything else (a CUDA issue, a slow sample) keeps them on.
        if any(w in why.lower() for w in _INCOMPARABLE_WORDS):
            return f"OpInfo: {why}"
    return None


def _all_tensors(sample) -> list[torch.Tensor]:
    return [
        t
        for t in _flatten([sample.input, list(sample.args), list(sample.kwargs.values())])
        if isinstance(t, torch.Tensor)
    ]


_INT_RANGES = {
    "byte": (0, 255), "char": (-128, 127), "short": (-(2**15), 2**15 - 1),
    "int": (-(2**31), 2**31 - 1), "long": (-(2**63), 2**63 - 1024),
}  # fmt: skip


def values_defined_for(reason: str, sample, op_name: str | None = None) -> bool:
    """Whether a sample's values are defined although the OpInfo calls the op's values
    undefined for some inputs only: its reason names which (PyTorch's own words), and a sample
    outside them is compared. Random and uninitialized outputs are never compared."""
    why = reason.lower()
    if "when dropout_p > 0" in why:
        return not sample.kwargs.get("dropout_p", 0.0)
    if "when sorted=false" in why:
        return sample.kwargs.get("sorted", True) is not False
    if "downcasting signed type" in why:
        x = sample.input
        low, high = _INT_RANGES.get(op_name or "", (None, None))
        if low is None or not isinstance(x, torch.Tensor) or x.is_complex():
            return False
        v = x.detach().to(torch.float64)
        return bool(v.isfinite().all() and (v >= low).all() and (v <= high).all())
    if "some inputs produce undefined outputs" in why:  # shifts by < 0 or >= the bit width
        tensors = _all_tensors(sample)
        if len(tensors) < 1:
            return False
        bits = 8 * tensors[0].element_size()
        shifts = sample.args[0] if sample.args else sample.kwargs.get("other")
        shift = torch.as_tensor(shifts).to(torch.float64)
        return bool((shift >= 0).all() and (shift < bits).all())
    return False


# ----------------------------------------------------------------------------- moving samples


def to_device(t: torch.Tensor, device: str = DEVICE) -> torch.Tensor:
    """A copy of t on device with the same sizes, strides and storage offset, and the same
    storage contents around it (ops such as as_strided read storage outside the view)."""
    if t.layout != torch.strided or t.is_contiguous() and t.storage_offset() == 0:
        return t.detach().to(device, copy=True)
    storage_elements = t.untyped_storage().nbytes() // t.element_size()
    flat = t.detach().as_strided((storage_elements,), (1,), 0)
    return flat.to(device, copy=True).as_strided(t.size(), t.stride(), t.storage_offset())


def _map_tensors(value: Any, fn: Callable[[torch.Tensor], Any], memo: dict[int, Any]) -> Any:
    if isinstance(value, torch.Tensor):
        if id(value) not in memo:
            memo[id(value)] = fn(value)
        return memo[id(value)]
    if isinstance(value, list):
        return [_map_tensors(v, fn, memo) for v in value]
    if isinstance(value, tuple):
        return tuple(_map_tensors(v, fn, memo) for v in value)
    if isinstance(value, dict):
        return {k: _map_tensors(v, fn, memo) for k, v in value.items()}
    return value


def _device_kwargs(kwargs: dict[str, Any], device: str) -> dict[str, Any]:
    """Factory-style kwargs (device="cpu") point at the target device."""
    kwargs = dict(kwargs)
    if "device" in kwargs and kwargs["device"] is not None:
        kwargs["device"] = device
    return kwargs


class Call:
    """One sample's (input, args, kwargs) with fresh leaf tensors on one device (only the
    input when host_arguments: the other tensors stay on the CPU)."""

    def __init__(
        self, sample, device: str, *, grad: bool, noncontiguous=False, host_arguments=False,
        contiguous=False,
    ):  # fmt: skip
        memo: dict[int, Any] = {}

        def leaf(t: torch.Tensor) -> torch.Tensor:
            base = noncontiguous_like(t.detach()) if noncontiguous else t.detach()
            if contiguous and base.layout == torch.strided:
                base = base.contiguous()
            moved = base if device == "cpu" else to_device(base, device)
            if device == "cpu" and moved is t:
                moved = t.detach()
            wants_grad = grad and t.requires_grad and (t.is_floating_point() or t.is_complex())
            return moved.detach().requires_grad_(wants_grad)

        self.input = _map_tensors(sample.input, leaf, memo)
        if host_arguments and device != "cpu":
            self.args, self.kwargs = sample.args, dict(sample.kwargs)
        else:
            self.args = _map_tensors(sample.args, leaf, memo)
            self.kwargs = _device_kwargs(_map_tensors(sample.kwargs, leaf, memo), device)
        self.leaves = [t for t in memo.values() if t.requires_grad]
        # False for a factory call without a device argument: nothing here runs on neuron.
        self.uses_device = device == "cpu" or bool(memo) or "device" in self.kwargs

    def run(self, fn, **extra):
        return fn(self.input, *self.args, **self.kwargs, **extra)


def _clone_input(value: Any) -> Any:
    return _map_tensors(value, lambda t: to_device(t, "cpu"), {})


# ----------------------------------------------------------------------------- comparing


def _flatten(value: Any) -> list[Any]:
    if isinstance(value, (list, tuple)) and not isinstance(value, torch.Size):
        return [leaf for v in value for leaf in _flatten(v)]
    return [value]


def compare(
    actual: Any, expected: Any, *, rtol: float, atol: float, values: bool, what: str,
    check_device: bool = True,
):  # fmt: skip
    """Raises CheckFailure unless actual (neuron) matches expected (CPU)."""
    got, want = _flatten(actual), _flatten(expected)
    if len(got) != len(want):
        raise CheckFailure(f"{what}: {len(got)} outputs, CPU gave {len(want)}")
    for i, (a, e) in enumerate(zip(got, want, strict=True)):
        where = f"{what}[{i}]" if len(want) > 1 else what
        if isinstance(e, torch.Tensor):
            if not isinstance(a, torch.Tensor):
                raise CheckFailure(f"{where}: got {type(a).__name__}, CPU gave a tensor")
            if check_device and a.device.type != DEVICE and e.device.type == "cpu":
                raise CheckFailure(f"{where}: result on {a.device}, expected on {DEVICE}")
            if a.dtype != e.dtype or a.shape != e.shape:
                raise CheckFailure(
                    f"{where}: {a.dtype}{list(a.shape)}, CPU gave {e.dtype}{list(e.shape)}"
                )
            if not values or e.layout != torch.strided:
                continue
            actual_cpu = a.detach().cpu()
            # Identical values pass any tolerance: one pass over memory instead of isclose's
            # several full-size temporaries (NaNs are never equal, so they still go below).
            if _identical(actual_cpu, e.detach()):
                continue
            # The result's own dtype sets the floor (e.g. cov of int8 gives float32).
            dtype_rtol, dtype_atol = default_tolerances(e.dtype)
            try:
                torch.testing.assert_close(
                    actual_cpu,
                    e.detach(),
                    rtol=max(rtol, dtype_rtol),
                    atol=max(atol, dtype_atol),
                    equal_nan=True,
                    check_device=False,
                    check_stride=False,
                )
            except AssertionError as err:
                raise CheckFailure(f"{where}: {_first_lines(str(err), 4)}") from None
        elif values and not _same_plain_value(a, e):
            raise CheckFailure(f"{where}: got {a!r}, CPU gave {e!r}")


def _identical(a: torch.Tensor, e: torch.Tensor) -> bool:
    try:
        return torch.equal(a, e)
    except (NotImplementedError, RuntimeError):  # e.g. no equal kernel for complex32
        return False


def _same_plain_value(a: Any, e: Any) -> bool:
    if isinstance(a, float) and isinstance(e, float) and a != a and e != e:
        return True
    if isinstance(a, torch.Tensor):
        return False
    try:
        return bool(a == e)
    except Exception:
        return False


def _first_lines(text: str, n: int) -> str:
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    return " | ".join(lines[:n])


def _describe(err: BaseException) -> str:
    return f"{type(err).__name__}: {_first_lines(str(err), 2)}"[:400]


def _tensor_outputs(value: Any) -> list[torch.Tensor]:
    return [
        t
        for t in _flatten(value)
        if isinstance(t, torch.Tensor)
        and t.requires_grad
        and (t.is_floating_point() or t.is_complex())
    ]


def _cotangent(t: torch.Tensor, seed: int) -> torch.Tensor:
    generator = torch.Generator().manual_seed(seed)
    return torch.randn(t.shape, dtype=t.dtype, generator=generator)


def _gradients(outputs: Any, leaves: list[torch.Tensor], cotangents: list[torch.Tensor], device):
    outs = _tensor_outputs(outputs)
    grads_out = [c.to(o.device) for c, o in zip(cotangents, outs, strict=True)]
    return torch.autograd.grad(outs, leaves, grads_out, allow_unused=True)


def _empty_like_outputs(value: Any, device: str) -> Any:
    if isinstance(value, torch.Tensor):
        return torch.empty(0, dtype=value.dtype, device=device)
    if isinstance(value, (list, tuple)):
        return type(value)(_empty_like_outputs(v, device) for v in value)
    raise TypeError("not a tensor output")


# ----------------------------------------------------------------------------- the checker


def spread(items: list, limit: int | None) -> list:
    """At most limit items, evenly spaced over the list (all of them for None or 0)."""
    if not limit or len(items) <= limit:
        return items
    return [items[(i * len(items)) // limit] for i in range(limit)]


class _Tracker:
    """Runs neuron work under op tracking and accumulates the ops that fell back, and those
    the fallback ran at a wider dtype than their inputs'."""

    def __init__(self):
        self.fallbacks: Counter[str] = Counter()
        self.widened: dict[str, dict[str, str]] = {}

    def __call__(self, fn, *args, **kwargs):
        openneuron.clear_op_tracking()
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                return fn(*args, **kwargs)
        finally:
            torch.neuron.synchronize()
            self.fallbacks.update(openneuron.get_fallback_ops())
            for aten_op, dtypes in _widened_ops().items():
                self.widened.setdefault(aten_op, {}).update(dtypes)


def _widened_ops() -> dict[str, dict[str, str]]:
    # A build without fallback widening has nothing to report.
    get = getattr(openneuron, "get_widened_ops", None)
    return get() if get is not None else {}


STRIDES_AS_CPU = "strides as CPU's (the meta kernel differs from CPU's kernel)"


def _check_strides(actual, fake, cpu, what: str, result: Result) -> None:
    """Raises CheckFailure if neuron's output strides differ from the meta kernel's. Where
    PyTorch's own CPU kernel differs from its meta kernel in the same way (some elementwise
    ops with broadcast operands), neuron matching the CPU is accepted and counted."""
    mismatch = stride_mismatch(actual, fake, what)
    if mismatch is None:
        return
    if stride_mismatch(actual, cpu, what) is None and stride_mismatch(cpu, fake, what) is not None:
        result.decided_by[STRIDES_AS_CPU] = result.decided_by.get(STRIDES_AS_CPU, 0) + 1
        return
    raise CheckFailure(mismatch)


def _keep(store: list, value: Any) -> Any:
    """value, also appended to store (the op's raw output before output_process_fn_grad)."""
    store.append(value)
    return value


def _quiet(fn, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fn(*args, **kwargs)


def _host_args(op: OpInfo) -> bool:
    return op_full_name(op) in HOST_ARGUMENT_OPS


def _wants_grad(op: OpInfo, dtype: torch.dtype, device_type: str = "cpu") -> bool:
    return (
        op.supports_autograd
        and dtype.is_floating_point
        and dtype in op.supported_backward_dtypes(device_type)
    )


SPECIAL_SAMPLES = 8  # at most this many samples with non-finite values added to a spread


def _has_nonfinite(sample) -> bool:
    return any(
        (t.is_floating_point() or t.is_complex()) and t.numel() and not bool(t.isfinite().all())
        for t in _all_tensors(sample)
        if t.layout == torch.strided
    )


class _Float32Reference:
    """op run at float32 on the CPU for a 16-bit dtype: 16-bit tensor arguments widened (the
    casts are differentiable, so gradients come back in the dtype too), 16-bit results of
    float32 computations rounded once."""

    def __init__(self, op: OpInfo, dtype: torch.dtype):
        self.op, self.dtype = op, dtype

    def __call__(self, *args, **kwargs):
        def widen(t: torch.Tensor) -> torch.Tensor:
            return t.to(torch.float32) if t.dtype == self.dtype else t

        def narrow(t: torch.Tensor) -> torch.Tensor:
            return t.to(self.dtype) if t.dtype == torch.float32 else t

        memo: dict[int, Any] = {}
        out = self.op(*_map_tensors(args, widen, memo), **_map_tensors(kwargs, widen, memo))
        return _map_tensors(out, narrow, {})


_COMPLEX_OF = {
    torch.float16: torch.complex32,
    torch.float32: torch.complex64,
    torch.float64: torch.complex128,
}
_REAL_OF = {c: r for r, c in _COMPLEX_OF.items()}


def _counterpart(dtype: torch.dtype) -> torch.dtype | None:
    """The complex dtype of a real one and the real dtype of a complex one (FFTs, abs, ...)."""
    return _COMPLEX_OF.get(dtype) or _REAL_OF.get(dtype)


class WidenedReference:
    """fn (an op, or its in-place variant) on the CPU for a dtype CUDA has and the CPU lacks:
    every tensor argument of that dtype widened to the first of WIDER_DTYPES[dtype] the CPU
    runs the call at (differentiable casts, so gradients come back in the dtype), and every
    result rounded once to the dtype the op returns for the original arguments (the meta
    kernel's; without one, the widened dtype maps back to dtype). out= tensors receive the
    rounded results; an in-place call writes its rounded result back into its input. This is
    the host fallback's widening (DESIGN.md decision 17), done independently in Python."""

    def __init__(self, fn, dtype: torch.dtype, *, inplace: bool = False):
        self.fn, self.dtype, self.inplace = fn, dtype, inplace
        self.widened_to: set[str] = set()  # the dtypes the calls ran at
        self.inplace_reference: WidenedReference | None = None  # made by the in-place check

    def __call__(self, *args, **kwargs):
        out = kwargs.pop("out", None)
        result_dtypes = _meta_result(self.fn, args, kwargs, refuse=self.inplace)
        first_error: Exception | None = None
        for wide in WIDER_DTYPES.get(self.dtype, (self.dtype,)):
            try:
                result = self._run_at(wide, args, kwargs, out, result_dtypes)
            except Exception as err:  # the CPU lacks this one too: try the next
                first_error = first_error or err
                continue
            self.widened_to.add(dtype_name(wide))
            return result
        assert first_error is not None
        raise first_error

    def _run_at(self, wide, args, kwargs, out, result_dtypes):
        narrow_to_wide = {self.dtype: wide}
        if _counterpart(self.dtype) is not None and _counterpart(wide) is not None:
            narrow_to_wide[_counterpart(self.dtype)] = _counterpart(wide)

        def widen_argument(t: torch.Tensor) -> torch.Tensor:
            return t.to(wide) if t.dtype == self.dtype else t

        memo: dict[int, Any] = {}
        # dtype= arguments naming the dtype widen too (e.g. prod(x, dtype=torch.complex32)).
        wide_args = _replace_dtype(_map_tensors(args, widen_argument, memo), self.dtype, wide)
        wide_kwargs = _replace_dtype(_map_tensors(kwargs, widen_argument, memo), self.dtype, wide)
        if self.inplace:  # the input is args[0]: its widened copy is written, then rounded back
            self.fn(*wide_args, **wide_kwargs)
            args[0].copy_(wide_args[0])
            return args[0]
        if out is not None:
            wide_out = _map_tensors(
                out, lambda t: torch.empty(0, dtype=narrow_to_wide.get(t.dtype, t.dtype)), {}
            )
            self.fn(*wide_args, **wide_kwargs, out=wide_out)
            for target, value in zip(_flatten(out), _flatten(wide_out), strict=True):
                target.resize_(value.shape).copy_(value)
            return out
        wide_to_narrow = {w: n for n, w in narrow_to_wide.items()}
        return _rounded(self.fn(*wide_args, **wide_kwargs), result_dtypes, wide_to_narrow)


def _replace_dtype(value: Any, old: torch.dtype, new: torch.dtype) -> Any:
    if isinstance(value, torch.dtype):
        return new if value == old else value
    if isinstance(value, (list, tuple)) and type(value) in (list, tuple):
        return type(value)(_replace_dtype(v, old, new) for v in value)
    if isinstance(value, dict):
        return {k: _replace_dtype(v, old, new) for k, v in value.items()}
    return value


def _meta_result(fn, args, kwargs, *, refuse: bool) -> Any:
    """fn's result on meta tensors of the original dtypes (their dtypes are what CUDA
    returns), or None where no meta kernel runs it. refuse: an error from the meta kernel
    (e.g. an in-place result its input's dtype cannot hold) is raised, as CUDA would raise it."""
    meta = _map_tensors((args, kwargs), lambda t: t.detach().to("meta"), {})
    try:
        with warnings.catch_warnings(), torch.no_grad():
            warnings.simplefilter("ignore")
            return fn(*meta[0], **meta[1])
    except NotImplementedError:
        return None
    except Exception:
        if refuse:
            raise
        return None


def _rounded(value: Any, meta: Any, wide_to_narrow: dict) -> Any:
    """value's tensors cast once to the dtypes of meta's (the same structure), else by
    wide_to_narrow."""
    if isinstance(value, torch.Tensor):
        if isinstance(meta, torch.Tensor):
            return value.to(meta.dtype)
        return value.to(wide_to_narrow.get(value.dtype, value.dtype))
    if isinstance(value, (list, tuple)):
        metas = meta if isinstance(meta, (list, tuple)) and len(meta) == len(value) else None
        items = [_rounded(v, metas and metas[i], wide_to_narrow) for i, v in enumerate(value)]
        if type(value) in (list, tuple):
            return type(value)(items)
        try:  # torch.return_types take one sequence; namedtuples take fields
            return type(value)(items)
        except TypeError:
            return type(value)(*items)
    return value


def cpu_reference(op: OpInfo, dtype: torch.dtype):
    """What computes the CPU reference for op at dtype: op itself, op widened (a dtype only
    CUDA has: WidenedReference), or (for the ops in CPU_REFERENCE_AT_FLOAT32 at 16 bits) op
    at float32 rounded to dtype."""
    if is_cuda_only(op, dtype):
        return WidenedReference(op, dtype)
    if dtype in _NARROW_FLOATS and op_full_name(op) in CPU_REFERENCE_AT_FLOAT32:
        return _Float32Reference(op, dtype)
    return op


def check_op(op: OpInfo, dtype: torch.dtype, *, max_samples: int | None = None) -> Result:
    """Checks one OpInfo at one dtype over its CPU samples; see the module docstring."""
    started = time.perf_counter()
    name = op_full_name(op)
    cuda_only = is_cuda_only(op, dtype)
    devices = CUDA_ONLY_DEVICES if cuda_only else CPU_DEVICES
    result = Result("op", name, dtype_name(dtype), "skip", cuda_only=cuda_only)
    grad = _wants_grad(op, dtype, "cuda" if cuda_only else "cpu")
    compared_by = _COMPLEX_HALF_TESTS if cuda_only and dtype == torch.complex32 else None
    rtol, atol = tolerances(
        op.decorators, dtype, tests=compared_by or _RELEVANT_TESTS, devices=devices
    )
    incomparable = incomparable_reason(op, dtype, devices)
    # Checks PyTorch's own suite skips for this op (e.g. non-contiguous as_strided views).
    skips = {
        test: why
        for test in ("test_out", "test_noncontiguous_samples")
        if (why := skipped_by_opinfo(op, dtype, test, devices)) is not None
    }
    values = incomparable is None
    reference = cpu_reference(op, dtype)
    track = _Tracker()
    cpu_errors: list[str] = []
    narrowed_samples = None
    try:
        torch.manual_seed(0)
        # PyTorch's test_compare_cpu runs reference_inputs: the samples plus special values
        # (inf, nan, -0.0, extremal and large inputs) where the OpInfo defines them.
        samples = list(_quiet(op.reference_inputs, "cpu", dtype, requires_grad=grad))
    except Exception as err:  # the database cannot make samples for this dtype
        narrowed_samples = _samples_made_wider(op, dtype, grad) if cuda_only else None
        if narrowed_samples is None:
            result.reason = f"sample generation failed: {_describe(err)}"
            result.seconds = time.perf_counter() - started
            return result
        samples, wider = narrowed_samples
        narrowed_samples = (
            f"samples made at {dtype_name(wider)} and rounded to {dtype_name(dtype)} "
            f"(the generator itself computes at {dtype_name(dtype)} on the CPU: {_describe(err)})"
        )
    # Labels use the sample's index in the database's full list, so a failure's signature
    # is the same whatever max_samples picks.
    picked = spread(list(enumerate(samples)), max_samples)
    # Samples with non-finite values are always kept (few, and where kernels go wrong).
    chosen = {i for i, _ in picked}
    special = [(i, x) for i, x in enumerate(samples) if i not in chosen and _has_nonfinite(x)]
    picked = sorted(picked + special[:SPECIAL_SAMPLES], key=lambda item: item[0])

    for index, sample in picked:
        label = f"sample {index}"
        try:
            compared = values or values_defined_for(incomparable or "", sample, op.name)
            result.value_samples += bool(compared)
            ran = _check_sample(
                op, sample, grad, rtol, atol, compared, track, result, skips, reference
            )
        except CheckFailure as err:
            result.failures.append(f"{label}: {err}"[:600])
            ran = True
        if ran is False:
            continue
        if isinstance(ran, str):
            cpu_errors.append(ran)
            continue
        result.samples += 1

    result.fallback_ops = dict(track.fallbacks)
    result.widened_ops = track.widened
    if isinstance(reference, WidenedReference):
        ran_at = reference.widened_to | getattr(reference.inplace_reference, "widened_to", set())
        result.widened_to = ", ".join(sorted(ran_at))
    if result.failures:
        result.status = "fail"
        result.reason = result.failures[0]
        result.signatures = sorted({signature(f) for f in result.failures})
        result.failures = result.failures[:5]
    elif result.samples == 0:
        result.status = "skip"
        result.reason = (
            f"the CPU raised on every sample: {cpu_errors[0]}" if cpu_errors else "no samples"
        )
    else:
        result.status = "fallback" if track.fallbacks else "native"
        notes = [f"values not compared ({incomparable})"] if incomparable else []
        notes += [result.arbitrated] if result.arbitrated else []
        notes += [f"{test} not checked (OpInfo: {why})" for test, why in skips.items()]
        if isinstance(reference, _Float32Reference):
            notes.append(f"CPU reference at float32: {CPU_REFERENCE_AT_FLOAT32[name]}")
        if cuda_only:
            notes.append(f"CUDA-only dtype: CPU reference at {result.widened_to}, rounded once")
        if narrowed_samples:
            notes.append(narrowed_samples)
        result.reason = "; ".join(notes)
    result.seconds = round(time.perf_counter() - started, 3)
    return result


def _samples_made_wider(op: OpInfo, dtype: torch.dtype, grad: bool):
    """(samples, wider dtype) for a CUDA-only dtype whose sample generator itself computes at
    the dtype on the CPU (e.g. tan's divides complex32 tensors): the samples made at the first
    wider dtype, their tensors of that dtype rounded to dtype. None if that fails too."""
    wider = WIDER_DTYPES.get(dtype, (dtype,))[0]
    if wider == dtype:
        return None

    def narrow(value):
        if isinstance(value, torch.dtype):
            return dtype if value == wider else value
        if value.dtype != wider:
            return value
        return value.detach().to(dtype).requires_grad_(value.requires_grad)

    try:
        torch.manual_seed(0)
        made = list(_quiet(op.reference_inputs, "cpu", wider, requires_grad=grad))
    except Exception:
        return None
    return [sample.transform(narrow) for sample in made], wider


def _check_sample(op, sample, grad, rtol, atol, values, track, result, skips, reference=None):
    """Checks one sample. Returns a string (the CPU's error) when the CPU cannot run it.
    reference: what computes the CPU's result (cpu_reference(op, dtype); op by default)."""
    reference = op if reference is None else reference
    # Forward (and gradients) on the CPU first: the reference.
    cpu = Call(sample, "cpu", grad=grad)
    try:
        cpu_raw = _quiet(cpu.run, reference)
        expected = sample.output_process_fn_grad(cpu_raw)
    except Exception as err:
        return _describe(err)
    grad_check = grad and cpu.leaves and _tensor_outputs(expected)
    expected_grads = None
    if grad_check:
        seeds = range(len(_tensor_outputs(expected)))
        cotangents = [
            _cotangent(t, 1000 + s) for t, s in zip(_tensor_outputs(expected), seeds, strict=True)
        ]
        try:
            expected_grads = _quiet(_gradients, expected, cpu.leaves, cotangents, "cpu")
        except Exception:
            grad_check = False  # the CPU cannot differentiate this sample: not a neuron bug
    wide = _Float64Reference(op, sample, grad_check and cotangents)
    layouts = _CpuLayouts(reference, sample, grad_check and cotangents)
    check = _Comparer(
        rtol, atol, values, result,
        check_device=op_full_name(op) not in DEVICE_CHANGING_OPS,
        arbitrate=op.name not in DTYPE_LIMIT_OPS and op_full_name(op) not in DTYPE_LIMIT_OPS,
    )  # fmt: skip

    # Forward on neuron.
    dev = Call(sample, DEVICE, grad=grad, host_arguments=_host_args(op))
    if not dev.uses_device:
        return "the sample has no tensor and no device argument"
    result.checks += 1
    fake = FakeRun(op, dev, cotangents if grad_check else None)
    raw: list[Any] = []
    try:
        actual = track(lambda: sample.output_process_fn_grad(_keep(raw, dev.run(op))))
    except Exception as err:
        raise CheckFailure(f"forward raised {_describe(err)}") from None
    check(actual, expected, wide.forward, "forward", layouts.forward)
    if fake.outputs is not None:
        result.stride_checks += 1
        _check_strides(raw[0], fake.outputs, cpu_raw, "forward strides", result)

    if grad_check:
        result.checks += 1
        try:
            actual_grads = track(_gradients, actual, dev.leaves, cotangents, DEVICE)
        except Exception as err:
            raise CheckFailure(f"backward raised {_describe(err)}") from None
        for i, (a, e) in enumerate(zip(actual_grads, expected_grads, strict=True)):
            if e is None:
                continue
            if a is None:
                raise CheckFailure(f"grad[{i}]: neuron gave no gradient")
            check(
                a, e, lambda i=i: wide.gradients()[i], f"grad[{i}]",
                lambda i=i: [grads[i] for grads in layouts.gradients()],
            )  # fmt: skip
        if fake.grads is not None:
            result.stride_checks += 1
            _check_strides(actual_grads, fake.grads, expected_grads, "grad strides", result)

    with torch.no_grad():
        # out= and in-place forms compute their CPU reference with op itself or widened, so
        # they do not run for CPU_REFERENCE_AT_FLOAT32 (none of whose ops has them).
        full_reference = reference is op or isinstance(reference, WidenedReference)
        if "test_out" not in skips and full_reference:
            _check_out(op, sample, check, wide, track, result, cpu_raw, layouts, reference)
        if full_reference:
            _check_inplace(op, sample, check, wide, track, result, reference)
        if "test_noncontiguous_samples" not in skips:
            _check_noncontiguous(op, sample, check, wide, track, result, reference, layouts)
    return True


class _Comparer:
    """compare() against the CPU's result. A float32/16-bit value that misses it is settled by
    the float64 arbiter (arbiter.py): it passes only if it is at least as close to the op's
    float64 result as the CPU's value, at every element. Ops that depend on the dtype's limits
    are not arbitrated. A value that still misses passes by the CPU layout rule (layouts.py)
    only if every element equals the CPU's own value for the same inputs in some memory layout
    where the CPU's layouts disagree. Each value so decided is counted in result.decided_by."""

    def __init__(self, rtol, atol, values, result, *, check_device=True, arbitrate=True):
        self.rtol, self.atol, self.values = rtol, atol, values
        self.result, self.check_device, self.arbitrate = result, check_device, arbitrate

    def __call__(
        self, actual, expected, exact: Callable[[], Any] | None, what: str,
        layouts: Callable[[], list] | None = None,
    ):  # fmt: skip
        try:
            compare(
                actual, expected, rtol=self.rtol, atol=self.atol, values=self.values, what=what,
                check_device=self.check_device,
            )  # fmt: skip
            return
        except CheckFailure as failure:
            if exact is None and layouts is None:
                raise
            error = failure
        # The dtype, shape and device checks must pass on their own.
        compare(
            actual, expected, rtol=self.rtol, atol=self.atol, values=False, what=what,
            check_device=self.check_device,
        )  # fmt: skip
        if self._closer_to_float64(actual, expected, exact):
            rule, note = ARBITER_RULE, "closer to float64 than the CPU"
        elif self._one_of_cpu_layouts(actual, expected, layouts):
            rule, note = LAYOUT_RULE, "the CPU's value in another layout of the same inputs"
        else:
            raise error
        self.result.decided_by[rule] = self.result.decided_by.get(rule, 0) + 1
        if not self.result.arbitrated:
            self.result.arbitrated = f"{what}: {note} ({rule})"

    def _closer_to_float64(self, actual, expected, exact) -> bool:
        if not self.arbitrate or exact is None or not _arbitrable(expected):
            return False
        try:
            reference = exact()
        except Exception:
            return False
        return reference is not None and closer_than_cpu(
            actual, expected, reference, self.rtol, self.atol
        )

    def _one_of_cpu_layouts(self, actual, expected, layouts) -> bool:
        if layouts is None:
            return False
        try:
            others = layouts()
        except Exception:
            return False
        return matches_a_cpu_layout(actual, [expected, *others], self.rtol, self.atol)


def _arbitrable(value: Any) -> bool:
    return any(
        isinstance(t, torch.Tensor) and t.dtype in ARBITRATED_DTYPES for t in _flatten(value)
    )


class _Float64Reference:
    """The CPU's result (and gradients) of the sample with every floating tensor widened to
    float64 and complex to complex128; computed on first use, kept at float64."""

    def __init__(self, op, sample, cotangents):
        self.op, self.sample, self.cotangents = op, sample, cotangents
        self._forward = self._grads = None
        self._done = False

    def _run(self) -> None:
        if self._done:
            return
        self._done = True
        memo: dict[int, Any] = {}
        widened = _Sample(
            _map_tensors(self.sample.input, _widen, memo),
            _map_tensors(self.sample.args, _widen, memo),
            _map_tensors(self.sample.kwargs, _widen, memo),
        )
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            wide_call = Call(widened, "cpu", grad=bool(self.cotangents))
            out = self.sample.output_process_fn_grad(wide_call.run(self.op))
            self._forward = _detached(out)
            if self.cotangents and wide_call.leaves:
                wide_cot = [c.to(_WIDEST.get(c.dtype, c.dtype)) for c in self.cotangents]
                self._grads = _gradients(out, wide_call.leaves, wide_cot, "cpu")

    def forward(self):
        self._run()
        return self._forward

    def gradients(self):
        self._run()
        return self._grads


class _CpuLayouts:
    """The CPU's results (and gradients) of the sample with every tensor made contiguous, and
    made non-contiguous: the candidates of the CPU layout rule (layouts.py). Computed on first
    use."""

    def __init__(self, reference, sample, cotangents):
        self.reference, self.sample, self.cotangents = reference, sample, cotangents
        self._forwards: list[Any] = []
        self._grads: list[Any] = []
        self._done = False

    def _run(self) -> None:
        if self._done:
            return
        self._done = True
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for layout in ({"contiguous": True}, {"noncontiguous": True}):
                call = Call(self.sample, "cpu", grad=bool(self.cotangents), **layout)
                out = self.sample.output_process_fn_grad(call.run(self.reference))
                self._forwards.append(_detached(out))
                if self.cotangents and call.leaves:
                    self._grads.append(_gradients(out, call.leaves, self.cotangents, "cpu"))

    def forward(self) -> list[Any]:
        self._run()
        return self._forwards

    def gradients(self) -> list[Any]:
        self._run()
        return self._grads


_WIDEST = {
    torch.float16: torch.float64,
    torch.bfloat16: torch.float64,
    torch.float32: torch.float64,
    torch.complex32: torch.complex128,
    torch.complex64: torch.complex128,
}


class _Sample:
    def __init__(self, input, args, kwargs):
        self.input, self.args, self.kwargs = input, args, kwargs


def _widen(t: torch.Tensor) -> torch.Tensor:
    if t.dtype not in _WIDEST:
        return t
    return t.detach().to(_WIDEST[t.dtype]).requires_grad_(t.requires_grad)


def _detached(value: Any) -> Any:
    return _map_tensors(value, lambda t: t.detach(), {})


def _check_out(op, sample, check, wide, track, result, cpu_raw, layouts=None, reference=None):
    """cpu_raw: the CPU's forward output of this sample (its dtypes shape the out= tensors, so
    the forward is not run again). layouts: the CPU layout rule's candidates (the functional
    results in other layouts, which out= must equal too). reference: what computes the CPU's
    out= result (op by default)."""
    if not op.supports_out:
        return
    cpu = Call(sample, "cpu", grad=False)
    try:
        out_cpu = _empty_like_outputs(cpu_raw, "cpu")
        _quiet(cpu.run, reference or op, out=out_cpu)
    except Exception:
        return  # the CPU has no out= form for this sample
    result.checks += 1
    dev = Call(sample, DEVICE, grad=False, host_arguments=_host_args(op))
    try:
        out_dev = _empty_like_outputs(out_cpu, DEVICE)
        track(dev.run, op, out=out_dev)
    except Exception as err:
        raise CheckFailure(f"out= raised {_describe(err)}") from None
    check(out_dev, out_cpu, wide.forward, "out=", layouts and layouts.forward)


def _check_inplace(op, sample, check, wide, track, result, reference=None):
    """reference: the forward's reference (a WidenedReference supplies the widened in-place
    form; otherwise the CPU runs op's own in-place variant)."""
    inplace = op.inplace_variant
    if inplace is None or not isinstance(sample.input, torch.Tensor):
        return
    if torch._debug_has_internal_overlap(sample.input) != 0:
        return  # writing a tensor whose elements share memory has no defined result
    cpu_inplace = inplace
    if isinstance(reference, WidenedReference):
        cpu_inplace = reference.inplace_reference = reference.inplace_reference or (
            WidenedReference(inplace, reference.dtype, inplace=True)
        )
    cpu = Call(sample, "cpu", grad=False)
    cpu.input = _clone_input(cpu.input)
    try:
        _quiet(cpu.run, cpu_inplace)
    except Exception:
        return  # e.g. the result dtype cannot be stored in the input
    result.checks += 1
    dev = Call(sample, DEVICE, grad=False, host_arguments=_host_args(op))
    try:
        returned = track(dev.run, inplace)
    except Exception as err:
        raise CheckFailure(f"in-place raised {_describe(err)}") from None
    check(dev.input, cpu.input, wide.forward, "in-place")
    if returned is not dev.input:
        raise CheckFailure("in-place: did not return its input")


def _check_noncontiguous(op, sample, check, wide, track, result, reference=None, layouts=None):
    cpu = Call(sample, "cpu", grad=False, noncontiguous=True)
    try:
        expected = sample.output_process_fn_grad(_quiet(cpu.run, reference or op))
    except Exception:
        return
    result.checks += 1
    dev = Call(sample, DEVICE, grad=False, noncontiguous=True, host_arguments=_host_args(op))
    try:
        actual = track(lambda: sample.output_process_fn_grad(dev.run(op)))
    except Exception as err:
        raise CheckFailure(f"non-contiguous forward raised {_describe(err)}") from None
    check(actual, expected, wide.forward, "non-contiguous", layouts and layouts.forward)


# ----------------------------------------------------------------------------- modules


def module_dtypes(module_info) -> list[torch.dtype]:
    return list(module_info.supported_dtypes("cpu"))


def check_module(module_info, dtype: torch.dtype, *, max_samples: int | None = None) -> Result:
    """Checks one ModuleInfo at one dtype: the same weights on CPU and neuron, forward
    outputs, input and parameter gradients, and buffers (e.g. running stats) afterwards."""
    started = time.perf_counter()
    result = Result("module", module_info.name, dtype_name(dtype), "skip")
    rtol, atol = tolerances(
        module_info.decorators, dtype, cls_names=(None, "TestModule"), tests=_RELEVANT_MODULE_TESTS
    )
    track = _Tracker()
    random_in_training = module_info.module_cls.__name__ in RANDOM_IN_TRAINING
    training = not random_in_training
    grad = dtype.is_floating_point or dtype.is_complex
    cpu_errors: list[str] = []
    try:
        torch.manual_seed(0)
        inputs = _quiet(
            module_info.module_inputs_func,
            module_info,
            device="cpu",
            dtype=dtype,
            requires_grad=grad,
            training=training,
        )
    except Exception as err:
        result.reason = f"input generation failed: {_describe(err)}"
        return result
    for index, module_input in spread(list(enumerate(inputs)), max_samples):
        if module_input.forward_input is None:
            continue
        label = f"input {index} ({module_input.desc or 'default'})"
        try:
            outcome = _check_module_input(
                module_info, module_input, dtype, training, grad, rtol, atol, track, result
            )
        except CheckFailure as err:
            result.failures.append(f"{label}: {err}"[:600])
            outcome = True
        if isinstance(outcome, str):
            cpu_errors.append(outcome)
        else:
            result.samples += 1
    result.fallback_ops = dict(track.fallbacks)
    if result.failures:
        result.status, result.reason = "fail", result.failures[0]
        result.signatures = sorted({signature(f) for f in result.failures})
        result.failures = result.failures[:5]
    elif result.samples == 0:
        result.reason = (
            f"the CPU raised on every input: {cpu_errors[0]}" if cpu_errors else "no inputs"
        )
    else:
        result.status = "fallback" if track.fallbacks else "native"
        notes = [result.arbitrated] if result.arbitrated else []
        if random_in_training:
            notes.append("checked in eval mode (random in training mode)")
        result.reason = "; ".join(notes)
    result.seconds = round(time.perf_counter() - started, 3)
    return result


def _check_module_input(
    module_info, module_input, dtype, training, grad, rtol, atol, track, result
):
    ctor = module_input.constructor_input
    fwd = module_input.forward_input
    try:
        torch.manual_seed(0)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ctor_args = _map_tensors(ctor.args, lambda t: t.detach(), {})
            ctor_kwargs = _map_tensors(ctor.kwargs, lambda t: t.detach(), {})
            cpu_module = module_info.module_cls(*ctor_args, **ctor_kwargs).to(dtype)
            if module_info.is_lazy:
                return "lazy module: not checked"  # materialized by its first forward
            cpu_module.train(training)
            dev_module = copy.deepcopy(cpu_module)
            ref_module = copy.deepcopy(cpu_module)  # the float64 arbiter's (before forward)
            cpu_call = Call(_AsSample(fwd), "cpu", grad=grad)
            out_cpu = run_module_call(cpu_call, cpu_module)
            cpu_outs = _tensor_outputs(out_cpu)
            cotangents = [_cotangent(t, 2000 + i) for i, t in enumerate(cpu_outs)]
            params_cpu = [p for p in cpu_module.parameters() if p.requires_grad]
            grads_cpu = None
            if grad and cpu_outs:
                grads_cpu = torch.autograd.grad(
                    cpu_outs, cpu_call.leaves + params_cpu, cotangents, allow_unused=True
                )
    except Exception as err:
        return _describe(err)

    result.checks += 1
    arbiter = _Float64Arbiter(ref_module, fwd, cotangents, grad, dtype)
    dev_call = Call(_AsSample(fwd), DEVICE, grad=grad)
    try:
        dev_module = track(dev_module.to, DEVICE)
        out_dev = track(run_module_call, dev_call, dev_module)
    except Exception as err:
        raise CheckFailure(f"forward raised {_describe(err)}") from None
    arbiter.compare(out_dev, out_cpu, ("forward",), rtol=rtol, atol=atol, result=result)
    for (name, b_dev), (_, b_cpu) in zip(
        dev_module.named_buffers(), cpu_module.named_buffers(), strict=True
    ):
        arbiter.compare(b_dev, b_cpu, ("buffer", name), rtol=rtol, atol=atol, result=result)
    if grads_cpu is not None:
        result.checks += 1
        params_dev = [p for p in dev_module.parameters() if p.requires_grad]
        try:
            grads_dev = track(_gradients, out_dev, dev_call.leaves + params_dev, cotangents, DEVICE)
        except Exception as err:
            raise CheckFailure(f"backward raised {_describe(err)}") from None
        keys = [("input grad", i) for i in range(len(dev_call.leaves))] + [
            ("grad", n) for n, p in dev_module.named_parameters() if p.requires_grad
        ]
        for key, a, e in zip(keys, grads_dev, grads_cpu, strict=True):
            if e is None:
                continue
            if a is None:
                raise CheckFailure(f"{key[0]} {key[1]}: neuron gave no gradient")
            arbiter.compare(a, e, key, rtol=rtol, atol=atol, result=result)
    return True


class _Float64Arbiter:
    """Settles a module value that differs from the CPU's beyond tolerance at a float32 or
    16-bit dtype: the same module and input run at float64 on the CPU give the exact value
    (to within float64 rounding), and neuron's value passes only if every element is at least
    as close to it as the CPU's element is, within the tolerance:
    |neuron - exact| <= |cpu - exact| + atol + rtol * |exact|.
    This keeps the CPU as the reference while not demanding that neuron reproduce the CPU's
    own rounding error where that error exceeds the tolerance (ill-conditioned gradients such
    as attention's softmax backward, or CPU per-op rounding of 16-bit intermediates).
    Every pair settled this way is recorded in the result's reason."""

    def __init__(self, ref_module, fwd, cotangents, grad: bool, dtype: torch.dtype):
        self._args = (ref_module, fwd, cotangents, grad)
        self._enabled = dtype in (torch.float32, torch.float16, torch.bfloat16)
        self._values: dict[tuple, Any] | None = None

    def _exact(self) -> dict[tuple, Any]:
        if self._values is not None:
            return self._values
        ref_module, fwd, cotangents, grad = self._args
        self._values = {}

        def widen(t: torch.Tensor) -> torch.Tensor:
            if not t.is_floating_point():
                return t.detach()
            return t.detach().to(torch.float64).requires_grad_(t.requires_grad)

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            module = ref_module.to(torch.float64)
            sample = _AsSample(
                type(
                    "FunctionInput",
                    (),
                    {
                        "args": _map_tensors(fwd.args, widen, {}),
                        "kwargs": _map_tensors(fwd.kwargs, widen, {}),
                    },
                )()
            )
            call = Call(sample, "cpu", grad=grad)
            out = run_module_call(call, module)
            self._values[("forward",)] = out
            for name, buffer in module.named_buffers():
                self._values[("buffer", name)] = buffer
            outs = _tensor_outputs(out)
            if grad and outs:
                params = [(n, p) for n, p in module.named_parameters() if p.requires_grad]
                grads = torch.autograd.grad(
                    outs, call.leaves + [p for _, p in params],
                    [c.to(torch.float64) for c in cotangents], allow_unused=True,
                )  # fmt: skip
                keys = [("input grad", i) for i in range(len(call.leaves))]
                keys += [("grad", n) for n, _ in params]
                self._values.update(zip(keys, grads, strict=True))
        return self._values

    def compare(self, actual, expected, key: tuple, *, rtol: float, atol: float, result):
        what = " ".join(str(k) for k in key)
        try:
            compare(actual, expected, rtol=rtol, atol=atol, values=True, what=what)
        except CheckFailure as failure:
            if not self._enabled:
                raise
            compare(actual, expected, rtol=rtol, atol=atol, values=False, what=what)
            try:
                exact = self._exact().get(key)
            except Exception:
                raise failure from None
            if exact is None or not closer_than_cpu(actual, expected, exact, rtol, atol):
                raise failure from None
            result.decided_by[ARBITER_RULE] = result.decided_by.get(ARBITER_RULE, 0) + 1
            if not result.arbitrated:
                result.arbitrated = f"{what}: closer to float64 than the CPU ({ARBITER_RULE})"


class _AsSample:
    """A FunctionInput seen as a sample (input = first arg) so Call can move it."""

    def __init__(self, function_input):
        args = function_input.args
        self.input = args[0] if args else None
        self.args = args[1:]
        self.kwargs = function_input.kwargs


def run_module_call(call: Call, module):
    if call.input is None:
        return module(*call.args, **call.kwargs)
    return module(call.input, *call.args, **call.kwargs)


__all__ = [
    "DEVICE",
    "Result",
    "WidenedReference",
    "check_module",
    "check_op",
    "cuda_only_dtypes",
    "dtype_name",
    "is_cuda_only",
    "module_dtypes",
    "op_dtypes",
    "op_full_name",
    "tolerances",
]
