"""Launching kernels: ``@nki.jit``, ``kernel[lnc](...)``, ``nki.simulate``, latency estimates, and
kernels called on ``neuron`` tensors (eager, traced once per signature and cached).

A launch traces the kernel once per program id into an instruction stream, encodes it and runs
it on the simulated NeuronCore (``openneuron._C._SimProgram``): decoded, placed and checked once
per signature, then executed on the caller's arrays in place and scheduled on the engines.
"""

import functools
import inspect
import json
import numbers
import os
import types

import numpy as np
import torch

from openneuron.nki import trace as tr
from openneuron.nki.copy_forwarding import forward_copies
from openneuron.nki.dtypes import as_dtype
from openneuron.nki.errors import KernelRuleError, KernelTraceError
from openneuron.nki.tensor import NkiTensor

_EMPTY_PATTERN = [-1, 0, 0, 0, 0, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0]
_SLOTS = ("dst", "dst2", "src0", "src1", "src2", "src3")
_NO_INDIRECT = [0, 0, 0, 0, 0] + _EMPTY_PATTERN


def default_profile() -> str:
    return os.environ.get("OPENNEURON_PROFILE", "trn2")


def _sim():
    from openneuron import _C

    return _C


def encode(trace):
    """The trace as the simulator's (buffers, int64 words [n, 122], float64 immediates [n, 3])."""
    rows, immediates = [], []
    for opcode, engine, f in trace.instructions:
        row = [
            opcode,
            -1 if engine is None else engine,
            f["alu0"],
            f["alu1"],
            f["function"],
            f["flags"],
            f["reduce_dims"],
            f["line"],
            *f["pattern"],
        ]
        for slot in _SLOTS:
            tensor = f.get(slot)
            row += tensor.encode() if tensor is not None else _EMPTY_PATTERN
        indirect = f.get("indirect")
        if indirect is None:
            row += _NO_INDIRECT
        else:
            kind, on_dst, skip, stride, bound, index = indirect
            row += [kind, on_dst, skip, stride, bound] + index.encode()
        rows.append(row)
        immediates.append((f["imm0"], f["imm1"], f["imm2"]))
    for row in rows:
        if row[1] == -1:
            row[1] = tr.VECTOR
    words = np.array(rows, dtype=np.int64).reshape(len(rows), 12 + len(_SLOTS) * 15 + 20)
    imms = np.array(immediates, dtype=np.float64).reshape(len(rows), 3)
    return [b.encode() for b in trace.buffers], words, imms


def _host_array(value):
    """A NumPy array for a kernel argument (NumPy array or CPU torch tensor), else None."""
    if isinstance(value, np.ndarray):
        return value
    module = type(value).__module__
    if module.startswith("torch"):
        import torch

        if isinstance(value, torch.Tensor):
            tensor = value.detach()
            if tensor.device.type != "cpu":
                tensor = tensor.cpu()
            if tensor.dtype == torch.bfloat16:
                from openneuron.nki.dtypes import bfloat16

                return tensor.contiguous().view(torch.int16).numpy().view(bfloat16.numpy)
            return tensor.contiguous().numpy()
    return None


class LaunchResult:
    """What one launch produced: outputs (as the kernel returned them), timing per core."""

    def __init__(self, outputs, cores, instructions, traces):
        self.outputs = outputs
        self.cores = cores  # one timing dict per program id
        self.instructions = instructions
        self.traces = traces

    @property
    def latency_ns(self) -> float:
        # Program ids run on separate cores at the same time.
        return max(core["timing"]["total_ns"] for core in self.cores)

    @property
    def latency_ms(self) -> float:
        return self.latency_ns / 1e6

    def utilization(self, core=0) -> dict:
        engines = self.cores[core]["timing"]["engines"]
        return {name: e["utilization"] for name, e in engines.items()}

    def trace_json(self, core=0) -> str:
        return self.cores[core]["timing"].get("trace", "")

    def save_trace(self, path, core=0):
        with open(path, "w") as handle:
            handle.write(self.trace_json(core))

    def summary(self) -> dict:
        core = self.cores[0]
        return {
            "latency_ms": self.latency_ms,
            "instructions": self.instructions,
            "utilization": self.utilization(),
            "sbuf_peak_bytes_per_partition": core["sbuf_peak_bytes"],
            "psum_peak_bytes_per_partition": core["psum_peak_bytes"],
        }

    def __repr__(self):
        return f"LaunchResult({json.dumps(self.summary())})"


class Kernel:
    """A traced NKI kernel: ``kernel(*args)``, ``kernel[lnc](*args)``."""

    def __init__(self, func, grid=(1,), **options):
        self.func = func
        self.grid = tuple(grid)
        self.options = options
        functools.update_wrapper(self, func)

    def __getitem__(self, grid):
        grid = grid if isinstance(grid, tuple) else (grid,)
        return Kernel(self.func, tuple(int(g) for g in grid), **self.options)

    def __call__(self, *args, **kwargs):
        if getattr(tr._local, "trace", None) is not None:
            # A @nki.jit helper called from a kernel being traced: it is part of that kernel.
            return self.func(*args, **kwargs)

        if has_device_tensor(args, kwargs):
            return call_on_device(self, args, kwargs)
        result = launch(self, args, kwargs)
        return _like_inputs(result.outputs, args)

    def launch(self, args, kwargs=None, **options):
        return launch(self, args, kwargs or {}, **options)


def jit(func=None, **options):
    """``@nki.jit`` / ``@nki.jit(...)``: marks a kernel (options such as mode are accepted)."""
    if func is None:
        return lambda f: Kernel(f, **options)
    if isinstance(func, Kernel):
        return func
    return Kernel(func, **options)


def _as_kernel(kernel):
    return kernel if isinstance(kernel, Kernel) else Kernel(kernel)


def _bind(trace, func, args, kwargs):
    """Turns array arguments into HBM input tensors; returns (args, kwargs, flat host arrays
    in argument order, their buffer indices)."""
    names = list(inspect.signature(func).parameters)
    arrays, indices = [], []

    def convert(value, name):
        array = _host_array(value)
        if array is not None:
            dtype = as_dtype(array.dtype)
            shape = array.shape if array.ndim else (1,)
            buffer = trace.new_buffer(name, tr.HBM, dtype, shape, initialized=True)
            buffer.line = 0
            host = np.ascontiguousarray(array)
            if dtype.numpy != host.dtype:
                host = host.astype(dtype.numpy)
            arrays.append(host)
            indices.append(buffer.index)
            return NkiTensor(buffer)
        if isinstance(value, (list, tuple)) and any(_host_array(v) is not None for v in value):
            return type(value)(convert(v, f"{name}[{i}]") for i, v in enumerate(value))
        return value

    new_args = [convert(a, names[i] if i < len(names) else f"arg{i}") for i, a in enumerate(args)]
    new_kwargs = {k: convert(v, k) for k, v in kwargs.items()}
    return new_args, new_kwargs, arrays, indices


def flat_arrays(args, kwargs):
    """The array arguments in the order _bind numbers them."""
    found = []
    for value in list(args) + list(kwargs.values()):
        if _host_array(value) is not None:
            found.append(value)
        elif isinstance(value, (list, tuple)) and any(_host_array(v) is not None for v in value):
            found.extend(v for v in value if _host_array(v) is not None)
    return found


def _flatten(value, found):
    if isinstance(value, NkiTensor):
        found.append(value)
    elif isinstance(value, (list, tuple)):
        for v in value:
            _flatten(v, found)
    elif isinstance(value, dict):
        for v in value.values():
            _flatten(v, found)
    return found


def _view_array(tensor, arrays):
    """The host array of an HBM view the kernel returned (a whole buffer, or a reshape)."""
    whole = arrays[tensor.buffer.index]
    if tensor.size == whole.size and tensor._is_contiguous() and tensor.offset == 0:
        return whole.reshape(tensor.shape)
    flat = whole.reshape(-1)
    index = np.full(tensor.shape, tensor.offset, dtype=np.int64)
    for d, (size, stride) in enumerate(zip(tensor.shape, tensor.strides, strict=True)):
        shape = [1] * tensor.ndim
        shape[d] = size
        index = index + (np.arange(size) * stride).reshape(shape)
    return flat[index]


def _rebuild_views(value, views):
    if isinstance(value, NkiTensor):
        return views[id(value)]
    if isinstance(value, (list, tuple)):
        return type(value)(_rebuild_views(v, views) for v in value)
    if isinstance(value, dict):
        return {k: _rebuild_views(v, views) for k, v in value.items()}
    return value


class _Program:
    """One program id's trace, encoded for the simulator."""

    def __init__(self, recording, input_indices, concurrent=False):
        self.recording = recording
        # Constants the kernel made (nl.shared_constant) are bound like inputs, after them.
        self.argument_count = len(input_indices)
        self.constant_values = list(recording.constants.values())
        input_indices = list(input_indices) + list(recording.constants)
        self.input_indices = input_indices
        # A program that shares HBM with others pauses before each DMA that touches HBM (and
        # at each core barrier), so the launch can interleave the programs' HBM accesses.
        self.marks = []  # per pause: whether it is a core barrier (else a yield point)
        encoded = _with_pauses(recording, self.marks) if concurrent else recording
        self.buffers, self.words, self.immediates = encode(encoded)
        self.hbm = [b for b in recording.buffers if b.memory == tr.HBM]
        inputs = set(input_indices)
        self.created = [b for b in self.hbm if b.index not in inputs]
        self.written_inputs = {
            position
            for position, index in enumerate(input_indices)
            if any(
                f["dst"] is not None and f["dst"].buffer.index == index
                for _, _, f in recording.instructions
            )
        }


def _touches_hbm(opcode, fields):
    return opcode in (tr.DMA_COPY, tr.DMA_COMPUTE) and any(
        fields[slot] is not None and fields[slot].buffer.memory == tr.HBM for slot in _SLOTS
    )


def _with_pauses(recording, marks):
    """`recording`'s instructions with a pause (a core-barrier instruction, which the
    simulator stops after) before every DMA touching HBM; `marks` gets one entry per pause."""
    instructions = []
    for opcode, engine, fields in recording.instructions:
        if opcode == tr.CORE_BARRIER:
            marks.append(True)
        elif _touches_hbm(opcode, fields):
            pause = dict(fields)
            for slot in _SLOTS:
                pause[slot] = None
            pause["indirect"] = None
            instructions.append((tr.CORE_BARRIER, tr.GPSIMD, pause))
            marks.append(False)
        instructions.append((opcode, engine, fields))
    return types.SimpleNamespace(instructions=instructions, buffers=recording.buffers)


class CompiledLaunch:
    """A kernel traced for one signature (shapes, dtypes, constants): replayable on new
    arrays of that signature without tracing again."""

    def __init__(self, kernel, args, kwargs, profile):
        self.profile = profile
        func = kernel.func
        self.source = os.path.basename(inspect.getsourcefile(func) or "<kernel>")
        program_ids = [()]
        for extent in kernel.grid:
            program_ids = [ids + (i,) for ids in program_ids for i in range(extent)]
        self.programs = []
        self.returned = None
        self.sample_inputs = None
        for ids in program_ids:
            recording = tr.Trace(self.source, ids, kernel.grid, profile)
            with tr.tracing(recording):
                call_args, call_kwargs, arrays, indices = _bind(recording, func, args, kwargs)
                self.returned = func(*call_args, **call_kwargs)
                for tensor in _flatten(self.returned, []):
                    if tensor.memory != tr.HBM:
                        raise KernelTraceError(
                            "bad-return",
                            0,
                            f"{self.source}: the kernel returned {tensor!r}; a kernel returns "
                            "HBM tensors (nl.ndarray(..., buffer=nl.shared_hbm))",
                        )
            self.sample_inputs = arrays
            forward_copies(recording)
            self.programs.append(_Program(recording, indices, concurrent=len(program_ids) > 1))
        self.written_inputs = set().union(*(p.written_inputs for p in self.programs))
        self._simulators = {}
        self._timings = {}

    @property
    def instructions(self) -> int:
        return sum(len(p.recording.instructions) for p in self.programs)

    def _simulator(self, number, carried):
        """Program `number` decoded, placed and rule-checked once (per whether kernel-created
        HBM tensors are shared with other cores, which may write them)."""
        key = (number, carried)
        simulator = self._simulators.get(key)
        if simulator is None:
            program = self.programs[number]
            for buffer in program.created:
                buffer.initialized = carried
            buffers = [b.encode() for b in program.recording.buffers]
            simulator = _sim()._SimProgram(
                self.profile, self.source, buffers, program.words, program.immediates
            )
            self._simulators[key] = simulator
        return simulator

    def _timing(self, number, carried, trace):
        key = (number, carried, trace)
        timing = self._timings.get(key)
        if timing is None:
            timing = self._simulator(number, carried).timing(trace)
            self._timings[key] = timing
        return timing

    def run(self, arrays, execute=True, reference=False, trace=False):
        """Runs every program id on `arrays` (the kernel's array arguments in order).
        Returns (LaunchResult, the input arrays as the kernel left them). Inputs are read in
        place; outputs are written straight into new arrays; inputs the kernel writes are
        copied first, so a failing kernel leaves the caller's arrays as they were."""
        if len(self.programs) > 1:
            return self._run_concurrently(arrays, execute, reference, trace)
        arrays = list(arrays)
        program = self.programs[0]
        simulator = self._simulator(0, False)
        final = {}
        if execute:
            bound = {}
            for position, index in enumerate(program.input_indices):
                if position < program.argument_count:
                    host = np.ascontiguousarray(arrays[position])
                else:
                    host = program.constant_values[position - program.argument_count]
                if position in program.written_inputs:
                    host = host.copy()
                final[index] = host
                bound[index] = host.reshape(-1).view(np.uint8)
            for buffer in program.created:
                host = np.empty(buffer.shape, dtype=buffer.dtype.numpy)
                final[buffer.index] = host
                bound[buffer.index] = host.reshape(-1).view(np.uint8)
            simulator.run(bound, reference)
            for b in program.hbm:
                final[b.index] = final[b.index].reshape(b.shape)
            for position, index in enumerate(program.input_indices):
                if position in program.written_inputs and position < program.argument_count:
                    arrays[position] = final[index]
        cores = [self._timing(0, False, trace)]
        return self._result(execute, final, cores), arrays

    def _result(self, execute, final, cores):
        outputs = None
        if execute and self.returned is not None:
            views = {id(t): _view_array(t, final) for t in _flatten(self.returned, [])}
            outputs = _rebuild_views(self.returned, views)
        return LaunchResult(outputs, cores, self.instructions, [p.recording for p in self.programs])

    def _run_concurrently(self, arrays, execute, reference, trace):
        """The programs of a multi-core launch run at once on shared HBM: kernel-created
        tensors (matched by creation order) and written inputs are one array for all of them.
        Each program pauses before every DMA touching HBM and at each core barrier; between
        barriers the paused segments run in the order of their start in each program's own
        schedule, so HBM accesses interleave as the cores' timelines do. Created tensors start
        as 0xFF bytes (NaN), as a one-program launch leaves bytes it never wrote; as any core
        may write them, reading them is not checked for never-written bytes."""
        arrays = list(arrays)
        cores = [self._timing(n, True, trace) for n in range(len(self.programs))]
        final = {}
        if not execute:
            return self._result(False, final, cores), arrays
        barriers = {sum(p.marks) for p in self.programs}
        if len(barriers) > 1:
            counts = [sum(p.marks) for p in self.programs]
            raise KernelRuleError(
                "core-barrier",
                0,
                f"{self.source}: the programs of the launch reach different numbers of "
                f"core_barrier calls ({counts}), so some would wait forever",
            )
        written, created = {}, {}
        queue = []  # (phase, start ns, program, segment) for every segment
        bindings = []
        for number, program in enumerate(self.programs):
            # Buffer numbers are each program's own; the outputs are read through the last
            # program's, as the returned tensors are the last trace's.
            bound, final = {}, {}
            for position, index in enumerate(program.input_indices):
                if position < program.argument_count:
                    host = np.ascontiguousarray(arrays[position])
                else:
                    host = program.constant_values[position - program.argument_count]
                if position in program.written_inputs:
                    if position not in written:
                        written[position] = host.copy()
                    host = written[position]
                final[index] = host
                bound[index] = host.reshape(-1).view(np.uint8)
            for order, buffer in enumerate(program.created):
                if order not in created:
                    host = np.empty(buffer.shape, dtype=buffer.dtype.numpy)
                    host.reshape(-1).view(np.uint8)[:] = 0xFF
                    created[order] = host
                host = created[order]
                final[buffer.index] = host
                bound[buffer.index] = host.reshape(-1).view(np.uint8)
            bindings.append(bound)
            phase = 0
            for segment, start in enumerate(self._segment_starts(number)):
                queue.append((phase, start, number, segment))
                if segment < len(program.marks) and program.marks[segment]:
                    phase += 1
        queue.sort()
        try:
            for _, _, number, _ in queue:
                self._simulator(number, True).run(bindings[number], reference)
        except Exception:
            self._simulators.clear()  # the other programs stopped mid-way: start them afresh
            raise
        for b in self.programs[-1].hbm:
            final[b.index] = final[b.index].reshape(b.shape)
        for position, host in written.items():
            arrays[position] = host
        return self._result(True, final, cores), arrays

    def _segment_starts(self, number):
        """The start (ns, in program `number`'s own schedule) of each of its segments: the
        first instruction after the previous pause; a segment with none takes the previous."""
        key = ("starts", number)
        starts = self._timings.get(key)
        if starts is None:
            events = json.loads(self._timing(number, True, True)["timing"]["trace"])
            start_of = {}
            for event in events["traceEvents"]:
                if event.get("ph") == "X":
                    start_of[event["args"]["index"]] = event["ts"] * 1000.0
            # Kept non-decreasing, so sorting by start never reorders a program's own segments.
            starts, first, latest = [], None, 0.0
            for index, word in enumerate(self.programs[number].words):
                if word[0] == tr.CORE_BARRIER:
                    starts.append(latest if first is None else first)
                    first = None
                elif first is None:
                    first = latest = max(latest, start_of.get(index, latest))
            starts.append(latest if first is None else first)
            self._timings[key] = starts
        return starts


def launch(kernel, args, kwargs, profile=None, execute=True, reference=False, trace=False):
    """Traces and runs `kernel` once per program id of its grid; returns a LaunchResult.
    Array arguments the kernel wrote are updated in place."""
    kernel = _as_kernel(kernel)
    profile = profile or _target_profile(kernel) or default_profile()
    compiled = CompiledLaunch(kernel, args, kwargs, profile)
    result, arrays = compiled.run(compiled.sample_inputs, execute, reference, trace)
    if execute and compiled.written_inputs:
        _write_back(flat_arrays(args, kwargs), arrays, compiled.written_inputs)
    return result


def _target_profile(kernel):
    """The profile ``@nki.jit(platform_target="trn3")`` names, if it is one simulated here."""
    target = kernel.options.get("platform_target")
    return target if target in ("trn2", "trn3") else None


def _write_back(originals, arrays, positions):
    for position in positions:
        value = originals[position]
        if isinstance(value, np.ndarray):
            value[...] = arrays[position].reshape(value.shape).astype(value.dtype)
        else:
            with torch.no_grad():
                value.copy_(to_torch(arrays[position]).reshape(value.shape))


def _like_inputs(outputs, args):
    """Outputs as torch tensors when the kernel was called with torch tensors."""
    if any(type(a).__module__.startswith("torch") for a in args):
        return _map_arrays(outputs, to_torch)
    return outputs


def _map_arrays(value, fn):
    if isinstance(value, np.ndarray):
        return fn(value)
    if isinstance(value, (list, tuple)):
        return type(value)(_map_arrays(v, fn) for v in value)
    if isinstance(value, dict):
        return {k: _map_arrays(v, fn) for k, v in value.items()}
    return value


def simulate(kernel):
    """``nki.simulate(kernel)(*arrays)``: runs on the simulated NeuronCore, returns NumPy
    arrays (torch tensors when called with torch tensors)."""
    kernel = _as_kernel(kernel)

    def run(*args, **kwargs):
        return _like_inputs(launch(kernel, args, kwargs).outputs, args)

    return run


def simulate_kernel(kernel, *args, **kwargs):
    """The older spelling: ``nki.simulate_kernel(kernel[grid], *arrays)``."""
    return simulate(kernel)(*args, **kwargs)


def estimate(kernel, *args, profile=None, execute=False, trace_path=None, **kwargs):
    """Estimated latency of one launch on `profile` (default OPENNEURON_PROFILE or trn2):
    a LaunchResult with latency, per-engine utilisation and, with trace_path, a Perfetto
    trace written there. execute=False only times the instruction stream."""
    result = launch(
        kernel, args, kwargs, profile=profile, execute=execute, trace=trace_path is not None
    )
    if trace_path is not None:
        result.save_trace(trace_path)
    return result


class _Latency:
    def __init__(self, latency_us):
        self._latency_us = latency_us

    def get_latency_percentile(self, percentile=50):
        return self._latency_us  # the model is deterministic: every percentile is the same


class _BenchmarkResult:
    def __init__(self, result):
        self.nc_latency = _Latency(result.latency_ns / 1000.0)
        self.launch = result


class _BenchmarkedKernel:
    def __init__(self, kernel, profile, save_trace_name):
        self.kernel = _as_kernel(kernel)
        self.profile = profile
        self.save_trace_name = save_trace_name
        self.benchmark_result = None

    def __getitem__(self, grid):
        return _BenchmarkedKernel(self.kernel[grid], self.profile, self.save_trace_name)

    def __call__(self, *args, **kwargs):
        result = estimate(
            self.kernel,
            *args,
            profile=self.profile,
            execute=True,
            trace_path=self.save_trace_name,
            **kwargs,
        )
        self.benchmark_result = _BenchmarkResult(result)
        return _like_inputs(result.outputs, args)


# nki.benchmark options that only matter on hardware (repetitions, compiler artefacts).
_BENCHMARK_HARDWARE_OPTIONS = {"warmup", "iters", "save_neff_name", "additional_compile_opt"}


def benchmark(kernel=None, *, profile=None, save_trace_name=None, **options):
    """``nki.benchmark``: runs the kernel and records its estimated latency in
    ``.benchmark_result.nc_latency.get_latency_percentile(50)`` (µs). The hardware-only
    options (warmup, iters, save_neff_name, additional_compile_opt) are accepted and change
    nothing: the model is deterministic."""
    unknown = sorted(set(options) - _BENCHMARK_HARDWARE_OPTIONS)
    if unknown:
        raise TypeError(
            f"nki.benchmark() got unknown keyword arguments {unknown} (it takes: profile, "
            f"save_trace_name, {', '.join(sorted(_BENCHMARK_HARDWARE_OPTIONS))})"
        )
    if kernel is None:
        return lambda k: _BenchmarkedKernel(k, profile, save_trace_name)
    return _BenchmarkedKernel(kernel, profile, save_trace_name)


# ---------------------------------------------------------------- on neuron tensors
# A kernel called on neuron tensors runs in eager: traced once per shapes, dtypes and constant
# arguments, then replayed from this cache.
_cache = {}
_stats = {"hits": 0, "misses": 0}

_TORCH_DTYPES = {
    "float32": torch.float32,
    "float16": torch.float16,
    "bfloat16": torch.bfloat16,
    "int8": torch.int8,
    "int16": torch.int16,
    "int32": torch.int32,
    "uint8": torch.uint8,
    "bool": torch.bool,
    "float8_e4m3": torch.float8_e4m3fn,
    "float8_e5m2": torch.float8_e5m2,
}


def to_torch(array: np.ndarray) -> torch.Tensor:
    """A CPU tensor holding `array` (bfloat16/fp8 through their bits)."""
    dtype = as_dtype(array.dtype)
    target = _TORCH_DTYPES.get(dtype.name)
    if target is None:
        return torch.from_numpy(np.ascontiguousarray(array).copy())
    if dtype.name in ("bfloat16", "float16"):
        bits = np.ascontiguousarray(array).view(np.int16).copy()
        return torch.from_numpy(bits).view(target)
    if dtype.name.startswith("float8"):
        bits = np.ascontiguousarray(array).view(np.uint8).copy()
        return torch.from_numpy(bits).view(target)
    return torch.from_numpy(np.ascontiguousarray(array).copy())


def _tensors(args, kwargs):
    for value in list(args) + list(kwargs.values()):
        if isinstance(value, torch.Tensor):
            yield value
        elif isinstance(value, (list, tuple)):
            yield from (v for v in value if isinstance(v, torch.Tensor))


def has_device_tensor(args, kwargs) -> bool:
    return any(t.device.type == "neuron" for t in _tensors(args, kwargs))


def _describe(value):
    if isinstance(value, torch.Tensor):
        return ("tensor", tuple(value.shape), str(value.dtype))
    if isinstance(value, np.ndarray):
        return ("array", value.shape, str(value.dtype))
    if isinstance(value, (list, tuple)):
        return (type(value).__name__,) + tuple(_describe(v) for v in value)
    if value is None or isinstance(value, (numbers.Number, str, bool)):
        return ("constant", type(value).__name__, value)
    return ("constant", repr(value))


def signature(kernel, args, kwargs, profile):
    return (
        kernel.func,
        kernel.grid,
        profile,
        tuple(_describe(a) for a in args),
        tuple(sorted((k, _describe(v)) for k, v in kwargs.items())),
    )


def compiled_for(kernel, args, kwargs, profile=None):
    """The cached trace of `kernel` for this signature, tracing it on a miss."""
    profile = profile or default_profile()
    key = signature(kernel, args, kwargs, profile)
    compiled = _cache.get(key)
    if compiled is None:
        _stats["misses"] += 1
        shaped = [_shape_only(a) for a in args]
        shaped_kwargs = {k: _shape_only(v) for k, v in kwargs.items()}
        compiled = CompiledLaunch(kernel, shaped, shaped_kwargs, profile)
        _cache[key] = compiled
    else:
        _stats["hits"] += 1
    return compiled


def _shape_only(value):
    """An uninitialised NumPy stand-in with a tensor's shape and dtype (tracing never reads
    values), so tracing needs no copy and works for meta tensors."""
    if isinstance(value, torch.Tensor):
        dtype = as_dtype(
            str(value.dtype).replace("torch.", "").replace("float8_e4m3fn", "float8_e4m3")
        )
        return np.empty(tuple(value.shape), dtype=dtype.numpy)
    if isinstance(value, (list, tuple)) and any(isinstance(v, torch.Tensor) for v in value):
        return type(value)(_shape_only(v) for v in value)
    return value


def cache_info() -> dict:
    return {"entries": len(_cache), **_stats}


def clear_cache():
    _cache.clear()
    _stats.update(hits=0, misses=0)


def _map(value, fn):
    if isinstance(value, np.ndarray):
        return fn(value)
    if isinstance(value, (list, tuple)):
        return type(value)(_map(v, fn) for v in value)
    if isinstance(value, dict):
        return {k: _map(v, fn) for k, v in value.items()}
    return value


def call_on_device(kernel, args, kwargs):
    """Runs `kernel` on tensors of the neuron device; outputs are neuron tensors, inputs the
    kernel wrote are updated."""
    device = next(t.device for t in _tensors(args, kwargs) if t.device.type == "neuron")
    compiled = compiled_for(kernel, args, kwargs)
    originals = flat_arrays(args, kwargs)
    arrays = [_host_array(t) for t in originals]
    result, arrays = compiled.run(arrays)
    for position in compiled.written_inputs:
        with torch.no_grad():
            originals[position].copy_(to_torch(arrays[position]).reshape(originals[position].shape))
    return _map(result.outputs, lambda a: to_torch(a).to(device))
