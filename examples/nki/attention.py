"""Flash attention forward for one head: softmax(q kᵀ · scale) v, computed one 128-row query
tile at a time against 128-row key/value tiles with a running max and sum, so the S×S score
matrix never exists. Optional causal masking (affine_select on diagonal tiles)."""

import nki
import nki.isa as nisa
import nki.language as nl

TILE = 128


def _load_transposed(source, start, dim, dtype):
    """source[start:start+128, 0:dim] transposed to an SBUF [dim, 128] tile (via PSUM)."""
    rows = nl.ndarray((TILE, dim), dtype=dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=rows, src=source[start : start + TILE, 0:dim])
    flipped = nl.ndarray((dim, TILE), dtype=dtype, buffer=nl.psum)
    nisa.nc_transpose(dst=flipped, data=rows)
    result = nl.ndarray((dim, TILE), dtype=dtype, buffer=nl.sbuf)
    nisa.tensor_copy(dst=result, src=flipped)
    return result


@nki.jit
def flash_attention_forward(q, k, v, causal=False, scale=None):
    """q, k, v: [S, d] with S a multiple of 128 and d <= 128. Returns [S, d] in q's dtype."""
    seq, dim = q.shape
    scale = (1.0 / dim**0.5) if scale is None else scale
    out = nl.ndarray((seq, dim), dtype=q.dtype, buffer=nl.shared_hbm)
    tiles = seq // TILE
    for i in nl.affine_range(tiles):
        q_t = _load_transposed(q, i * TILE, dim, q.dtype)  # [d, 128 queries]
        running_max = nl.ndarray((TILE, 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.memset(dst=running_max, value=-3.0e38)
        running_sum = nl.ndarray((TILE, 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.memset(dst=running_sum, value=0.0)
        acc = nl.ndarray((TILE, dim), dtype=nl.float32, buffer=nl.sbuf)
        nisa.memset(dst=acc, value=0.0)
        for j in nl.sequential_range(i + 1 if causal else tiles):
            k_t = _load_transposed(k, j * TILE, dim, k.dtype)  # [d, 128 keys]
            v_tile = nl.ndarray((TILE, dim), dtype=v.dtype, buffer=nl.sbuf)
            nisa.dma_copy(dst=v_tile, src=v[j * TILE : (j + 1) * TILE, 0:dim])
            scores_psum = nl.ndarray((TILE, TILE), dtype=nl.float32, buffer=nl.psum)
            nisa.nc_matmul(dst=scores_psum, stationary=q_t, moving=k_t)
            scores = nl.ndarray((TILE, TILE), dtype=nl.float32, buffer=nl.sbuf)
            nisa.tensor_scalar(dst=scores, data=scores_psum, op0=nl.multiply, operand0=scale)
            if causal and j == i:
                # keep key <= query: (query p) - (key f) >= 0
                nisa.affine_select(
                    dst=scores,
                    pattern=[[-1, TILE]],
                    channel_multiplier=1,
                    on_true_tile=scores,
                    on_false_value=-3.0e38,
                    cmp_op=nl.greater_equal,
                    offset=0,
                )
            tile_max = nl.ndarray((TILE, 1), dtype=nl.float32, buffer=nl.sbuf)
            nisa.tensor_reduce(dst=tile_max, op=nl.maximum, data=scores, axis=1)
            new_max = nl.ndarray((TILE, 1), dtype=nl.float32, buffer=nl.sbuf)
            nisa.tensor_tensor(dst=new_max, data1=running_max, data2=tile_max, op=nl.maximum)
            neg_max = nl.ndarray((TILE, 1), dtype=nl.float32, buffer=nl.sbuf)
            nisa.tensor_scalar(dst=neg_max, data=new_max, op0=nl.multiply, operand0=-1.0)
            # correction = exp(old max - new max)
            correction = nl.ndarray((TILE, 1), dtype=nl.float32, buffer=nl.sbuf)
            nisa.activation(dst=correction, op=nl.exp, data=running_max, bias=neg_max)
            probs = nl.ndarray((TILE, TILE), dtype=v.dtype, buffer=nl.sbuf)
            tile_sum = nl.ndarray((TILE, 1), dtype=nl.float32, buffer=nl.sbuf)
            nisa.activation(
                dst=probs,
                op=nl.exp,
                data=scores,
                bias=neg_max,
                reduce_op=nl.add,
                reduce_res=tile_sum,
            )
            nisa.scalar_tensor_tensor(
                dst=running_sum,
                data=running_sum,
                op0=nl.multiply,
                operand0=correction,
                op1=nl.add,
                operand1=tile_sum,
            )
            nisa.tensor_copy(dst=running_max, src=new_max)
            # acc = acc * correction + probs @ v
            probs_t_psum = nl.ndarray((TILE, TILE), dtype=v.dtype, buffer=nl.psum)
            nisa.nc_transpose(dst=probs_t_psum, data=probs)
            probs_t = nl.ndarray((TILE, TILE), dtype=v.dtype, buffer=nl.sbuf)
            nisa.tensor_copy(dst=probs_t, src=probs_t_psum)
            pv = nl.ndarray((TILE, dim), dtype=nl.float32, buffer=nl.psum)
            nisa.nc_matmul(dst=pv, stationary=probs_t, moving=v_tile)
            nisa.scalar_tensor_tensor(
                dst=acc, data=acc, op0=nl.multiply, operand0=correction, op1=nl.add, operand1=pv
            )
        inverse = nl.ndarray((TILE, 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.reciprocal(dst=inverse, data=running_sum)
        result = nl.ndarray((TILE, dim), dtype=q.dtype, buffer=nl.sbuf)
        nisa.tensor_scalar(dst=result, data=acc, op0=nl.multiply, operand0=inverse)
        nisa.dma_copy(dst=out[i * TILE : (i + 1) * TILE, 0:dim], src=result)
    return out
