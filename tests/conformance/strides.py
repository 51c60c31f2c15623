"""Output strides against the meta kernels: what torch.compile's fake tensors promise.

torch.compile traces with fake tensors whose strides come from the meta kernels (and
decompositions), then runs the real kernels; a later view in the graph is only valid if the
real output has the strides the trace assumed. So every neuron output must have the strides
that the same call on fake neuron tensors gives, wherever the fake run defines them (a call
the fake mode cannot run, e.g. data-dependent output shapes, is not judged). Strides are
compared as torch._prims_common.check_significant_strides does: dimensions of length 1 and
empty tensors do not count.
"""

from __future__ import annotations

import warnings
from typing import Any

import torch
from torch._prims_common import check_significant_strides
from torch._subclasses.fake_tensor import FakeTensorMode


def _flatten(value: Any) -> list[Any]:
    if isinstance(value, (list, tuple)) and not isinstance(value, torch.Size):
        return [leaf for v in value for leaf in _flatten(v)]
    return [value]


class FakeRun:
    """The sample's call (and its gradients) replayed on fake copies of the device tensors.

    inputs: the device call's (input, args, kwargs) before the real run mutates anything."""

    def __init__(self, op, call, cotangents=None):
        self.mode = FakeTensorMode(allow_non_fake_inputs=True)
        self.outputs = self.grads = None
        self.error: str | None = None
        memo: dict[int, Any] = {}

        def fake(t: torch.Tensor) -> torch.Tensor:
            f = self.mode.from_tensor(t.detach())
            return f.requires_grad_(t.requires_grad)

        from .harness import _map_tensors  # the harness's own tree walk

        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                inp = _map_tensors(call.input, fake, memo)
                args = _map_tensors(call.args, fake, memo)
                kwargs = _map_tensors(call.kwargs, fake, memo)
                leaves = [memo[id(t)] for t in call.leaves if id(t) in memo]
                with self.mode:
                    self.outputs = op(inp, *args, **kwargs)
                    outs = [
                        t
                        for t in _flatten(self.outputs)
                        if isinstance(t, torch.Tensor) and t.requires_grad
                    ]
                    if cotangents and leaves and len(outs) == len(cotangents):
                        grads_out = [
                            self.mode.from_tensor(c.to(o.device)) for c, o in zip(cotangents, outs)
                        ]
                        self.grads = torch.autograd.grad(outs, leaves, grads_out, allow_unused=True)
        except Exception as err:  # no meta kernel, data-dependent shape, ...
            self.error = f"{type(err).__name__}: {str(err).strip().splitlines()[0][:200]}"


def stride_mismatch(actual: Any, fake: Any, what: str) -> str | None:
    """A description of the first output whose strides differ from the fake run's, else None.
    Outputs the fake run does not give as tensors are not judged."""
    got, want = _flatten(actual), _flatten(fake)
    if len(got) != len(want):
        return None
    for i, (a, f) in enumerate(zip(got, want)):
        if not (isinstance(a, torch.Tensor) and isinstance(f, torch.Tensor)):
            continue
        if a.layout != torch.strided or f.layout != torch.strided or a.shape != f.shape:
            continue
        same, _dim = check_significant_strides(a, f, only_cuda=False)
        if not same:
            where = f"{what}[{i}]" if len(want) > 1 else what
            return (
                f"{where}: strides {tuple(a.stride())} for shape {tuple(a.shape)}, "
                f"the meta kernel gives {tuple(f.stride())}"
            )
    return None
