"""A NumPy executor of the simulator's instruction stream, written as the obvious reference
(one NumPy call per instruction over strided views): the baseline of the speed benchmark.
It covers the opcodes the benchmark kernels use."""

import numpy as np

from openneuron.nki import trace as tr

_ALU = {1: np.add, 2: np.subtract, 3: np.multiply, 4: np.divide, 5: np.maximum, 6: np.minimum}
_ACT = {
    0: lambda x: x,
    1: np.exp,
    3: np.tanh,
    5: lambda x: np.maximum(x, 0),
    9: np.sqrt,
    10: lambda x: 1 / np.sqrt(x),
    12: np.square,
}


class NumpyExecutor:
    def __init__(self, trace, inputs):
        self.trace = trace
        self.memory = {}
        for buffer in trace.buffers:
            if buffer.index in inputs:
                self.memory[buffer.index] = np.ascontiguousarray(inputs[buffer.index]).reshape(-1)
            else:
                count = int(np.prod(buffer.shape))
                self.memory[buffer.index] = np.full(count, np.nan, dtype=buffer.dtype.numpy)

    def view(self, tensor):
        base = self.memory[tensor.buffer.index]
        item = base.itemsize
        if tensor.buffer.memory == tr.HBM:
            strides = [s * item for s in tensor.strides]
            start = tensor.offset
        else:
            row = int(np.prod(tensor.buffer.shape[1:])) if len(tensor.buffer.shape) > 1 else 1
            strides = [row * item] + [s * item for s in tensor.strides[1:]]
            start = tensor.start_partition * row + tensor.offset
        return np.lib.stride_tricks.as_strided(base[start:], tensor.shape, strides)

    def run(self):
        for opcode, _engine, f in self.trace.instructions:
            dst = self.view(f["dst"])
            if opcode in (tr.DMA_COPY, tr.TENSOR_COPY):
                dst[...] = self.view(f["src0"]).reshape(dst.shape)
            elif opcode == tr.MATMUL:
                a = self.view(f["src0"]).reshape(f["src0"].partitions, -1)
                b = self.view(f["src1"]).reshape(f["src1"].partitions, -1)
                product = (a.T.astype(np.float32) @ b.astype(np.float32)).reshape(dst.shape)
                dst[...] = dst + product if f["flags"] & 1 else product
            elif opcode == tr.TENSOR_TENSOR:
                dst[...] = _ALU[f["alu0"]](self.view(f["src0"]), self.view(f["src1"]))
            elif opcode == tr.TENSOR_SCALAR:
                data = self.view(f["src0"])
                operand = self.view(f["src1"]) if f["src1"] is not None else f["imm0"]
                value = (
                    _ALU[f["alu0"]](operand, data)
                    if f["flags"] & 2
                    else _ALU[f["alu0"]](data, operand)
                )
                if f["alu1"]:
                    other = self.view(f["src2"]) if f["src2"] is not None else f["imm1"]
                    value = _ALU[f["alu1"]](value, other)
                dst[...] = value
            elif opcode == tr.ACTIVATION:
                data = self.view(f["src0"]).astype(np.float32)
                scale = self.view(f["src2"]) if f["src2"] is not None else f["imm0"]
                bias = self.view(f["src1"]) if f["src1"] is not None else f["imm1"]
                value = _ACT[f["function"]](data * scale + bias)
                dst[...] = value
                if f["alu1"]:
                    self.view(f["dst2"])[...] = value.reshape(value.shape[0], -1).sum(
                        axis=1, keepdims=True
                    )
            elif opcode == tr.TENSOR_REDUCE:
                data = self.view(f["src0"])
                axes = tuple(range(data.ndim - f["reduce_dims"], data.ndim))
                ufunc = _ALU[f["alu0"]]
                value = ufunc.reduce(data, axis=axes)
                dst[...] = (-value if f["flags"] & 8 else value).reshape(dst.shape)
            elif opcode == tr.TRANSPOSE:
                src = self.view(f["src0"])
                dst[...] = src.reshape(src.shape[0], -1).T.reshape(dst.shape)
            elif opcode == tr.MEMSET:
                dst[...] = f["imm0"]
            else:
                raise NotImplementedError(f"opcode {opcode}")
        return self.memory
