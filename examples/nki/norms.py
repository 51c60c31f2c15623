"""LayerNorm and RMSNorm over the last axis, one row per partition."""

import nki
import nki.isa as nisa
import nki.language as nl


def _broadcast_rows(vector, cols):
    """A [128, cols] SBUF tile with `vector` (HBM [cols]) in every partition (stride-0 DMA)."""
    tile = nl.ndarray((128, cols), dtype=nl.float32, buffer=nl.sbuf)
    nisa.dma_copy(dst=tile, src=vector.ap(pattern=[[0, 128], [1, cols]]))
    return tile


@nki.jit
def layernorm(x, weight, bias, eps=1e-5):
    rows, cols = x.shape
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    gamma = _broadcast_rows(weight, cols)
    beta = _broadcast_rows(bias, cols)
    chunk = 512  # bn_stats reads at most 512 elements per partition
    chunks = (cols + chunk - 1) // chunk
    for start in nl.affine_range(0, rows, 128):
        count = min(128, rows - start)
        tile = nl.ndarray((128, cols), dtype=x.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=tile[0:count], src=x[start : start + count])
        stats = nl.ndarray((128, 6 * chunks), dtype=nl.float32, buffer=nl.sbuf)
        for c in nl.affine_range(chunks):
            width = min(chunk, cols - c * chunk)
            nisa.bn_stats(
                dst=stats[0:count, 6 * c : 6 * c + 6],
                data=tile[0:count, c * chunk : c * chunk + width],
            )
        moments = nl.ndarray((128, 2), dtype=nl.float32, buffer=nl.sbuf)
        nisa.bn_aggr(dst=moments[0:count], data=stats[0:count])
        rstd = nl.ndarray((128, 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.activation(dst=rstd[0:count], op=nl.rsqrt, data=moments[0:count, 1:2], bias=eps)
        normed = nl.ndarray((128, cols), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_scalar(
            dst=normed[0:count],
            data=tile[0:count],
            op0=nl.subtract,
            operand0=moments[0:count, 0:1],
            op1=nl.multiply,
            operand1=rstd[0:count],
        )
        nisa.tensor_tensor(
            dst=normed[0:count], data1=normed[0:count], data2=gamma[0:count], op=nl.multiply
        )
        result = nl.ndarray((128, cols), dtype=x.dtype, buffer=nl.sbuf)
        nisa.tensor_tensor(
            dst=result[0:count], data1=normed[0:count], data2=beta[0:count], op=nl.add
        )
        nisa.dma_copy(dst=out[start : start + count], src=result[0:count])
    return out


@nki.jit
def rmsnorm(x, weight, eps=1e-6):
    rows, cols = x.shape
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    gamma = _broadcast_rows(weight, cols)
    for start in nl.affine_range(0, rows, 128):
        count = min(128, rows - start)
        tile = nl.ndarray((128, cols), dtype=x.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=tile[0:count], src=x[start : start + count])
        squares = nl.ndarray((128, cols), dtype=nl.float32, buffer=nl.sbuf)
        total = nl.ndarray((128, 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.activation(
            dst=squares[0:count],
            op=nl.square,
            data=tile[0:count],
            reduce_op=nl.add,
            reduce_res=total[0:count],
        )
        rstd = nl.ndarray((128, 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.activation(
            dst=rstd[0:count], op=nl.rsqrt, data=total[0:count], scale=1.0 / cols, bias=eps
        )
        result = nl.ndarray((128, cols), dtype=x.dtype, buffer=nl.sbuf)
        nisa.scalar_tensor_tensor(
            dst=result[0:count],
            data=tile[0:count],
            op0=nl.multiply,
            operand0=rstd[0:count],
            op1=nl.multiply,
            operand1=gamma[0:count],
        )
        nisa.dma_copy(dst=out[start : start + count], src=result[0:count])
    return out
