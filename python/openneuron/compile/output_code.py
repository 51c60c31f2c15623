"""A compiled graph as AOTAutograd's cache can store it, so a second process skips tracing.

``CompiledGraph`` is what our forward, backward and inference compilers return. It pickles as
data: the optimised IR text (the program is rebuilt from it after loading, passes not run
again) and CPU copies of the graph's constants. ``UncompiledGraph`` wraps a graph that could
not be lowered; it refuses to be stored, so such a graph is traced again next time.
"""

from __future__ import annotations

import hashlib

import torch
from torch._functorch._aot_autograd.autograd_cache import BypassAOTAutogradCache
from torch._inductor.output_code import OutputCode
from torch._subclasses.fake_tensor import unset_fake_temporarily

from openneuron import _C
from openneuron.compile import cache, metrics


class CompiledGraph(OutputCode):
    """Runs one compiled program with the boxed calling convention (the program owns the
    input list and may free inputs early). Constants are passed after the graph's inputs."""

    def __init__(self, program, optimised_ir: str, constants: list, number: int, key: str):
        # On the instance: the wrapper Dynamo puts around a backward copies only __dict__.
        self._boxed_call = True
        self.program = program
        self.optimised_ir = optimised_ir
        self.ir_digest = hashlib.sha256(optimised_ir.encode()).hexdigest()
        self.constants = list(constants)
        self.constant_devices = [str(t.device) for t in constants]
        self.number = number
        self.key = key

    @property
    def compiled_graph(self):
        return self.program

    def __call__(self, args):
        inputs = list(args)
        args.clear()
        inputs.extend(self.constants)
        try:
            return self.program.run(inputs)
        except Exception as error:
            failure = self.program.last_failure
            if failure and failure not in str(error):
                error.add_note(f"openneuron compiled graph {self.number}: in {failure}")
            raise

    def __setstate__(self, state: dict) -> None:
        # A damaged entry fails here, while PyTorch reads it: it skips it and compiles again.
        if hashlib.sha256(state["optimised_ir"].encode()).hexdigest() != state["ir_digest"]:
            raise ValueError("openneuron compiled graph: stored program fails its checksum")
        self.__dict__.update(state)

    def prepare_for_serialization(self) -> None:
        # Called on a shallow copy: rebind, never mutate what the running original shares.
        self.program = None
        with unset_fake_temporarily():  # AOTAutograd saves from within its fake mode
            self.constants = [t.detach().cpu() for t in self.constants]

    def post_compile(self, example_inputs, constants, graph_kwargs) -> None:
        """After a load from AOTAutograd's cache: rebuild the program from the stored IR (or
        take it from the in-memory cache) and put the constants back on their devices."""
        if self.program is not None:
            return
        program = cache.memory_get(self.key)
        if program is None:
            try:
                program = _C._compiler_compile(
                    self.optimised_ir, keep_dumps=False, run_passes=False
                )
            except RuntimeError as error:
                # PyTorch then drops the entry quietly and traces again: say why.
                cache.report_bad_entry(self.key, f"an unusable AOTAutograd entry ({error})")
                metrics.record(cache_errors=1)
                raise
            cache.memory_put(self.key, program)
        with unset_fake_temporarily():
            placed = zip(self.constants, self.constant_devices, strict=True)
            self.constants = [t.to(device) for t, device in placed]
        self.program = program
        metrics.record(cache_hits_aot=1)

    def set_triton_bundle(self, triton_bundle) -> None:
        pass


class UncompiledGraph(OutputCode):
    """A graph the lowering refused: it runs op by op through the eager kernels."""

    def __init__(self, gm: torch.fx.GraphModule, reason: str):
        self._boxed_call = True
        self.gm = gm
        self.reason = reason

    def __call__(self, args):
        inputs = list(args)
        args.clear()
        return self.gm(*inputs)

    def prepare_for_serialization(self) -> None:
        raise BypassAOTAutogradCache(f"openneuron: graph runs uncompiled ({self.reason})")

    def post_compile(self, example_inputs, constants, graph_kwargs) -> None:
        pass

    def set_triton_bundle(self, triton_bundle) -> None:
        pass
