"""Two rewrites of a finished trace that NKI's compiler makes and a line-by-line trace does not:

- tile assignment without its copy: ``dst[...] = nl.exp(x)`` first computes a temporary tile,
  then copies it into dst. When nothing but that copy reads the temporary, the instruction
  that made it writes dst itself and the copy is dropped;
- a dead zero-fill: ``acc = nl.zeros(..., buffer=nl.psum)`` followed by ``acc += matmul``
  fills acc, then the first matmul overwrites it. The fill is dropped.

Both leave every result bit for bit as it was (a forwarded value is rounded once, to the same
dtype); they change the instruction count and so the timing estimate.
"""

import bisect

from openneuron.nki import trace as tr

_SOURCE_SLOTS = ("src0", "src1", "src2", "src3")
_ALL_SLOTS = ("dst", "dst2", *_SOURCE_SLOTS)
# Engines that may write each memory: the Tensor engine writes PSUM only, the DMA engines
# SBUF (and HBM), GpSimd cannot reach PSUM.
_WRITABLE = {
    tr.TENSOR: {tr.PSUM},
    tr.VECTOR: {tr.SBUF, tr.PSUM},
    tr.SCALAR: {tr.SBUF, tr.PSUM},
    tr.GPSIMD: {tr.SBUF},
    tr.DMA: {tr.SBUF},
}
# Writes that replace every element of their destination without reading it first.
_PURE_WRITES = {
    tr.TENSOR_TENSOR,
    tr.TENSOR_SCALAR,
    tr.TENSOR_COPY,
    tr.ACTIVATION,
    tr.MEMSET,
    tr.TRANSPOSE,
    tr.IOTA,
}


def _buffers(fields, slots):
    found = {fields[s].buffer.index for s in slots if fields.get(s) is not None}
    indirect = fields.get("indirect")
    if indirect is not None:
        found.add(indirect[-1].buffer.index)
    return found


def _whole(view):
    """Whether `view` is its whole buffer in the buffer's own layout."""
    buffer = view.buffer
    return (
        view.offset == 0
        and view.start_partition == 0
        and tuple(view.shape) == tuple(buffer.shape)
        and view.dtype == buffer.dtype
        and view._is_contiguous()
    )


def _rounds_alike(writer_fields, middle, target):
    """Whether writing `target` directly rounds as writing `middle` then copying does: the
    same dtype, or an fp32 middle between float sources and a float target (the engines
    compute in fp32, so the fp32 step is exact)."""
    if middle.dtype == target.dtype:
        return True
    sources = [writer_fields[s] for s in _SOURCE_SLOTS if writer_fields.get(s) is not None]
    return (
        middle.dtype.name == "float32"
        and target.dtype.is_float
        and all(s.dtype.is_float for s in sources)
    )


def _touching(instructions):
    """buffer index -> sorted instruction indices that name it in any operand."""
    users = {}
    for position, (_, _, fields) in enumerate(instructions):
        for index in _buffers(fields, _ALL_SLOTS):
            users.setdefault(index, []).append(position)
    return users


def _touched_between(users, buffer_index, first, last):
    uses = users.get(buffer_index, [])
    start = bisect.bisect_right(uses, first)
    return start < len(uses) and uses[start] < last


def _forward(trace, users, dropped, copy_index):
    opcode, _, copy = trace.instructions[copy_index]
    if opcode != tr.TENSOR_COPY or copy.get("indirect") is not None:
        return
    middle, target = copy["src0"], copy["dst"]
    buffer = middle.buffer
    if buffer.memory == tr.HBM or target.memory == tr.HBM or buffer.initialized:
        return
    if buffer.index in trace.valid_boxes or not _whole(middle):
        return
    uses = users.get(buffer.index, [])
    if len(uses) != 2 or uses[1] != copy_index:
        return
    writer_index = uses[0]
    writer_opcode, writer_engine, writer = trace.instructions[writer_index]
    if writer.get("dst") is None or writer["dst"].buffer is not buffer or not _whole(writer["dst"]):
        return
    if buffer.index in _buffers(writer, ("dst2", *_SOURCE_SLOTS)):
        return
    if target.memory not in _WRITABLE.get(writer_engine, ()):
        return
    if writer_opcode == tr.DMA_COPY and writer.get("indirect") is not None:
        return
    if tuple(target.shape) != tuple(middle.shape) or not _rounds_alike(writer, middle, target):
        return
    target_index = target.buffer.index
    if target_index in _buffers(writer, ("dst2", *_SOURCE_SLOTS)):
        return
    if _touched_between(users, target_index, writer_index, copy_index):
        return
    writer["dst"] = target
    dropped.add(copy_index)
    users[buffer.index] = []
    target_uses = users[target_index]
    target_uses.remove(copy_index)
    bisect.insort(target_uses, writer_index)


def _drop_dead_fill(trace, users, dropped, fill_index):
    opcode, _, fill = trace.instructions[fill_index]
    target = fill["dst"]
    if opcode != tr.MEMSET or target.memory == tr.HBM or not _whole(target):
        return
    if target.buffer.index in trace.valid_boxes:
        return
    uses = users.get(target.buffer.index, [])
    position = bisect.bisect_right(uses, fill_index)
    if position >= len(uses):
        return
    next_opcode, _, after = trace.instructions[uses[position]]
    overwrites = next_opcode in _PURE_WRITES or (next_opcode == tr.MATMUL and after["flags"] == 0)
    if not overwrites or after.get("indirect") is not None:
        return
    if after["dst"] is None or after["dst"].buffer is not target.buffer or not _whole(after["dst"]):
        return
    if target.buffer.index in _buffers(after, ("dst2", *_SOURCE_SLOTS)):
        return
    dropped.add(fill_index)
    uses.remove(fill_index)


def forward_copies(trace):
    """Rewrites `trace.instructions` in place: assignment copies forwarded (the indices in
    `trace.assignment_copies`), dead whole-tile zero-fills dropped."""
    users = _touching(trace.instructions)
    dropped = set()
    for copy_index in trace.assignment_copies:
        _forward(trace, users, dropped, copy_index)
    for index, (opcode, _, _) in enumerate(trace.instructions):
        if opcode == tr.MEMSET and index not in dropped:
            _drop_dead_fill(trace, users, dropped, index)
    if dropped:
        trace.instructions = [
            instruction
            for index, instruction in enumerate(trace.instructions)
            if index not in dropped
        ]
