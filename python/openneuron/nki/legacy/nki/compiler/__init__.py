"""``neuronxcc.nki.compiler``: allocation and scheduling controls of the older API.

They steer AWS's compiler (where a tile lives, whether its passes may reorder a loop); the
simulator places every buffer by its live range and keeps the kernel's instruction order, so
each is accepted and changes neither values nor the model's placement. Tensors made to share
memory through one explicit address are therefore not modelled as aliases (as with
``nl.ndarray(address=...)``).
"""

import functools

from openneuron.nki import language as _nl


class _AllocatedMemory:
    """``sbuf.mod_alloc(...)`` / ``psum.mod_alloc(...)``: a buffer kind with an address
    request, used as ``nl.ndarray(..., buffer=...)``; the request itself is not modelled."""

    def __init__(self, memory):
        self.memory = memory

    def mod_alloc(self, *args, **kwargs):
        return self.memory

    def alloc(self, *args, **kwargs):
        return self.memory

    auto_alloc = alloc


sbuf = _AllocatedMemory(_nl.sbuf)
psum = _AllocatedMemory(_nl.psum)


def _passthrough_decorator(function=None, **_options):
    if function is None:
        return lambda f: f
    return function


skip_middle_end_transformations = _passthrough_decorator
enable_stack_allocator = _passthrough_decorator
force_auto_alloc = _passthrough_decorator


def no_reorder(*args, **kwargs):
    """A loop directive (``nl.sequential_range(n, directives=no_reorder())``): the simulator
    keeps program order anyway."""
    return None


@functools.wraps(no_reorder)
def tensor_directive(*args, **kwargs):
    return None
