"""The decomposition table ``torch.compile(backend="neuron")`` gives AOTAutograd.

The core op set is our kernel library's: an op with a native ``neuron`` kernel stays whole,
because its eager kernel is what the compiled program must equal bit for bit. An op with no
kernel of its own on the device would run on the host fallback (a boxed fallback for the
PrivateUse1 key, so it never shows up as a registration of the op), and when PyTorch's core
ATen decompositions can rewrite it into smaller ops it is decomposed, so it runs on the device
instead (within the rounding of the smaller ops, not bit for bit with the host result).

"Native" means the op has a kernel registered for PrivateUse1, or a CompositeExplicitAutograd
kernel (it runs on the device through other ops, as eager runs it), or a
CompositeImplicitAutograd one (tracing decomposes it before it reaches any backend).
"""

from __future__ import annotations

import functools

import torch

# Not CompositeExplicitAutogradNonFunctional: that is the generic kernel a structured op's
# functional variant gets, which calls its out= variant, and that one has the real kernel.
_COMPOSITE_KEYS = ("CompositeExplicitAutograd",)


def _name(op: torch._ops.OpOverload) -> str:
    schema = op._schema
    return schema.name + (f".{schema.overload_name}" if schema.overload_name else "")


@functools.cache
def _kept_whole() -> frozenset[str]:
    """Ops with a device kernel of their own or a composite one (registration names)."""
    names = set(torch._C._dispatch_get_registrations_for_dispatch_key("PrivateUse1"))
    for key in _COMPOSITE_KEYS:
        names.update(torch._C._dispatch_get_registrations_for_dispatch_key(key))
    return frozenset(names)


def has_native_kernel(op: torch._ops.OpOverload) -> bool:
    """True when ``op`` runs on the device without the host fallback (see the module doc)."""
    name = _name(op)
    return name in _kept_whole() or torch._C._dispatch_has_kernel_for_dispatch_key(
        name, "CompositeImplicitAutograd"
    )


@functools.cache
def decomposition_table() -> dict:
    """The core ATen decompositions of the ops with no native ``neuron`` kernel, built once.

    Registrations made after the first call (e.g. a kernel added from Python later) are not
    seen; ``decomposition_table.cache_clear()`` rebuilds it.
    """
    from torch._decomp import core_aten_decompositions

    return {
        op: fn
        for op, fn in core_aten_decompositions().items()
        if isinstance(op, torch._ops.OpOverload) and not has_native_kernel(op)
    }
