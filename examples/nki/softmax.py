"""Row softmax: max on the Vector engine, exp with a fused row sum on the Scalar engine."""

import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def softmax(x):
    """softmax over the last axis of a 2-D [R, C] tensor (fp32 statistics)."""
    rows, cols = x.shape
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    for start in nl.affine_range(0, rows, 128):
        count = min(128, rows - start)
        tile = nl.ndarray((128, cols), dtype=x.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=tile[0:count], src=x[start : start + count])
        neg_max = nl.ndarray((128, 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_reduce(
            dst=neg_max[0:count], op=nl.maximum, data=tile[0:count], axis=1, negate=True
        )
        exps = nl.ndarray((128, cols), dtype=nl.float32, buffer=nl.sbuf)
        sums = nl.ndarray((128, 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.activation(
            dst=exps[0:count],
            op=nl.exp,
            data=tile[0:count],
            bias=neg_max[0:count],
            reduce_op=nl.add,
            reduce_res=sums[0:count],
        )
        inverse = nl.ndarray((128, 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.reciprocal(dst=inverse[0:count], data=sums[0:count])
        result = nl.ndarray((128, cols), dtype=x.dtype, buffer=nl.sbuf)
        nisa.tensor_scalar(
            dst=result[0:count], data=exps[0:count], op0=nl.multiply, operand0=inverse[0:count]
        )
        nisa.dma_copy(dst=out[start : start + count], src=result[0:count])
    return out
