"""The ``neuron`` backend of ``torch.compile``.

Dynamo captures a graph; AOTAutograd functionalizes it and splits forward from backward; each
ATen graph is lowered to IR (``lower.py``), optimised and turned into a program by the C++
compiler (``csrc/compiler``) and run by the bridge: fused elementwise kernels and ATen calls
queued on the current stream. No source code is generated or built.
"""

from __future__ import annotations

import functools
import itertools
import os
import time
from pathlib import Path

import torch
from torch._dynamo.backends.common import aot_autograd
from torch._functorch._aot_autograd.schemas import SerializableAOTDispatchCompiler

from openneuron import _C
from openneuron.compile import aot_cache, cache, metrics, transformers_grouped_mm
from openneuron.compile.decompositions import decomposition_table
from openneuron.compile.lower import LoweringError, lower_graph
from openneuron.compile.output_code import CompiledGraph, UncompiledGraph

# Options of torch.compile(..., options={...}) the backend honours.
KNOWN_OPTIONS = {
    "fuse": "bool, default True: fuse elementwise ops (False keeps one kernel per op)",
    "cache": "bool, default True: use the on-disk cache of compiled graphs",
    "gemm_epilogue": "bool, default True: fuse elementwise consumers into mm/addmm/bmm/conv",
    "bmm_epilogue": "bool, default True: include bmm in gemm_epilogue",
    "conv_epilogue": "bool, default True: include 2-D convolutions in gemm_epilogue",
    "reductions": "bool, default True: fuse sum/mean/amax with their elementwise producers",
    "eliminate_layouts": "bool, default True: remove clones and copies that change nothing",
    "decompose": "bool, default True: decompose ops with no native kernel (decompositions.py)",
    "sibling_gemms": "bool, default True: linear layers sharing an input run as one GEMM over "
    "concatenated weights (not in bitwise mode)",
    "bitwise": "bool, default False: every fused kernel equals eager bit for bit (for debugging); "
    "False holds compiled code to the float64 accuracy rule instead",
}
# What an option means when torch.compile leaves it out.
DEFAULTS = {name: name != "bitwise" for name in KNOWN_OPTIONS}
_graph_counter = itertools.count()
_warn_once = cache.warn_once


def _debug_dir() -> Path | None:
    configured = os.environ.get("OPENNEURON_DEBUG_DIR")
    return Path(configured) if configured else None


def _dump(graph_dir: Path, gm: torch.fx.GraphModule, compiled) -> None:
    graph_dir.mkdir(parents=True, exist_ok=True)
    (graph_dir / "fx_graph.txt").write_text(gm.print_readable(print_output=False))
    for index, (name, text) in enumerate(compiled.dumps):
        (graph_dir / f"ir_{index:02d}_{name}.txt").write_text(text)
    (graph_dir / "kernels.txt").write_text(compiled.kernel_listing)


def _compile_graph(gm: torch.fx.GraphModule, example_inputs, *, kind: str, options: dict):
    """Compiles one ATen graph from AOTAutograd into a boxed callable."""
    number = next(_graph_counter)
    start = time.perf_counter()
    try:
        ir_text, counts, constants = lower_graph(gm, reductions=options.get("reductions", True))
    except LoweringError as error:
        # Counted and reported: the graph still runs, op by op through the eager kernels.
        metrics.record_lowering_fallback(str(error))
        _warn_once(str(error), f"openneuron compile: graph {number} runs uncompiled: {error}")
        return UncompiledGraph(gm, str(error))
    debug = _debug_dir()
    # Every option with its default filled in, so an explicit default and an omitted one share
    # an entry and a bitwise program never stands in for a free one (or the other way round).
    key = cache.signature(ir_text + repr(sorted({**DEFAULTS, **options}.items())))
    compiled = cache.memory_get(key)
    if compiled is not None:
        metrics.record(cache_hits_memory=1)
    else:
        optimised, problem = cache.disk_get(key) if options.get("cache", True) else (None, None)
        if problem:
            cache.report_bad_entry(key, problem)
            metrics.record(cache_errors=1)
        if optimised is not None:
            try:
                compiled = _C._compiler_compile(optimised, keep_dumps=False, run_passes=False)
                metrics.record(cache_hits_disk=1)
            except RuntimeError as error:  # parses or verifies badly: treat as corrupted
                cache.report_bad_entry(key, f"unusable ({error})")
                metrics.record(cache_errors=1)
                compiled = None
        if compiled is None:
            compiled = _C._compiler_compile(
                ir_text,
                keep_dumps=debug is not None,
                run_passes=True,
                fuse=options.get("fuse", True),
                gemm_epilogues=options.get("gemm_epilogue", True),
                bmm_epilogues=options.get("bmm_epilogue", True),
                conv_epilogues=options.get("conv_epilogue", True),
                eliminate_layouts=options.get("eliminate_layouts", True),
                bitwise=options.get("bitwise", False),
                sibling_gemms=options.get("sibling_gemms", True),
            )
            if options.get("cache", True):
                cache.disk_put(key, compiled.ir)
        cache.memory_put(key, compiled)
    if debug is not None:
        if not compiled.dumps:  # a cache hit: show at least the lowered and final IR
            compiled = _C._compiler_compile(
                ir_text,
                keep_dumps=True,
                run_passes=True,
                fuse=options.get("fuse", True),
                gemm_epilogues=options.get("gemm_epilogue", True),
                bmm_epilogues=options.get("bmm_epilogue", True),
                conv_epilogues=options.get("conv_epilogue", True),
                eliminate_layouts=options.get("eliminate_layouts", True),
                bitwise=options.get("bitwise", False),
                sibling_gemms=options.get("sibling_gemms", True),
            )
        _dump(debug / f"graph_{number:03d}_{kind}", gm, compiled)
    stats = compiled.stats
    metrics.record(graphs=1, **stats)
    metrics.record_compile_ms((time.perf_counter() - start) * 1e3)
    metrics.record(lowered_pointwise=counts["pointwise"], lowered_extern=counts["extern"])

    return CompiledGraph(compiled, compiled.ir, constants, number, key)


def _check_options(mode, options) -> dict:
    if mode not in (
        None,
        "default",
        "reduce-overhead",
        "max-autotune",
        "max-autotune-no-cudagraphs",
    ):
        raise RuntimeError(f"torch.compile(backend='neuron'): unknown mode {mode!r}")
    options = dict(options or {})
    for name in list(options):
        if name not in KNOWN_OPTIONS:
            _warn_once(
                f"option:{name}",
                f"torch.compile(backend='neuron') ignores the unknown option {name!r}; "
                f"known: {', '.join(sorted(KNOWN_OPTIONS))}",
            )
            options.pop(name)
    return options


def neuron_backend(gm: torch.fx.GraphModule, example_inputs, mode=None, options=None):
    """The Dynamo backend: AOTAutograd with our compiler for forward, backward and inference.

    Every ``mode`` compiles the same way (there is no autotuning or graph capture to choose);
    ``options`` keys are listed in ``KNOWN_OPTIONS``, others are warned about once and ignored.
    """
    options = _check_options(mode, options)
    transformers_grouped_mm.register_if_loaded()
    compile_id = torch._guards.CompileContext.current_compile_id()
    if compile_id is not None and getattr(compile_id, "frame_compile_id", 0):
        metrics.record(recompiles=1)

    def compiler(kind):
        # Serializable: AOTAutograd's cache stores what it returns (see output_code.py).
        return SerializableAOTDispatchCompiler(
            CompiledGraph, functools.partial(_compile_graph, kind=kind, options=options)
        )

    backend = aot_autograd(
        fw_compiler=compiler("forward"),
        bw_compiler=compiler("backward"),
        inference_compiler=compiler("inference"),
        # Ops our kernels lack are decomposed into ones they have rather than run on the host.
        decompositions=decomposition_table() if options.get("decompose", True) else None,
        keep_inference_input_mutations=True,
    )
    # Defaults filled in, as for our own cache key: an omitted option and its default share entries.
    with aot_cache.for_backend({**DEFAULTS, **options}):
        return backend(gm, example_inputs)


def _on_neuron(value) -> bool:
    if isinstance(value, (tuple, list)):
        return any(_on_neuron(v) for v in value)
    return isinstance(value, torch.Tensor) and value.device.type == "neuron"


def has_neuron_inputs(example_inputs) -> bool:
    return any(_on_neuron(t) for t in example_inputs)


def uses_neuron(gm: torch.fx.GraphModule, example_inputs) -> bool:
    """Whether a Dynamo graph computes on neuron: a neuron input, or a value the graph makes
    on the device (``torch.zeros(5, device="neuron")`` or the default device) though none of
    its inputs is."""
    if has_neuron_inputs(example_inputs):
        return True
    return any(
        _on_neuron(node.meta.get("example_value", node.meta.get("val"))) for node in gm.graph.nodes
    )
