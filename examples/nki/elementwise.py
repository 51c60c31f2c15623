"""Elementwise kernels: a + b over row tiles of 128 partitions."""

import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def tensor_add(a, b):
    """a + b for 2-D [R, C] tensors; R need not be a multiple of 128."""
    rows, cols = a.shape
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    pmax = nl.tile_size.pmax
    for start in nl.affine_range(0, rows, pmax):
        count = min(pmax, rows - start)
        x = nl.ndarray((pmax, cols), dtype=a.dtype, buffer=nl.sbuf)
        y = nl.ndarray((pmax, cols), dtype=b.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=x[0:count, :], src=a[start : start + count, :])
        nisa.dma_copy(dst=y[0:count, :], src=b[start : start + count, :])
        total = nl.ndarray((pmax, cols), dtype=a.dtype, buffer=nl.sbuf)
        nisa.tensor_tensor(
            dst=total[0:count, :], data1=x[0:count, :], data2=y[0:count, :], op=nl.add
        )
        nisa.dma_copy(dst=out[start : start + count, :], src=total[0:count, :])
    return out
