"""The four matmul kernels of the NKI kernel-optimisation tutorial, written from its description:
result[M, N] = lhsT[K, M].T @ rhs[K, N] in fp32, tiles of K=128 (partitions), M=128, N=512.

1. tiled: every output tile loads its K tiles of both operands again.
2. hoisted: each lhsT column block is loaded once per M tile, rhs once per output tile.
3. blocked free dimensions: output tiles are computed in blocks of several M and N tiles, so
   each loaded operand tile serves a whole block.
4. optimised: blocks along K as well, with the partial results accumulated in SBUF.
"""

import nki
import nki.isa as nisa
import nki.language as nl

TILE_K, TILE_M, TILE_N = 128, 128, 512


@nki.jit
def matmul_tiled(lhsT, rhs):
    K, M = lhsT.shape
    _, N = rhs.shape
    result = nl.ndarray((M, N), dtype=nl.float32, buffer=nl.shared_hbm)
    for m in nl.affine_range(M // TILE_M):
        for n in nl.affine_range(N // TILE_N):
            acc = nl.ndarray((TILE_M, TILE_N), dtype=nl.float32, buffer=nl.psum)
            for k in nl.affine_range(K // TILE_K):
                a = nl.ndarray((TILE_K, TILE_M), dtype=lhsT.dtype, buffer=nl.sbuf)
                b = nl.ndarray((TILE_K, TILE_N), dtype=rhs.dtype, buffer=nl.sbuf)
                nisa.dma_copy(
                    dst=a, src=lhsT[k * TILE_K : (k + 1) * TILE_K, m * TILE_M : (m + 1) * TILE_M]
                )
                nisa.dma_copy(
                    dst=b, src=rhs[k * TILE_K : (k + 1) * TILE_K, n * TILE_N : (n + 1) * TILE_N]
                )
                nisa.nc_matmul(dst=acc, stationary=a, moving=b)
            out = nl.ndarray((TILE_M, TILE_N), dtype=nl.float32, buffer=nl.sbuf)
            nisa.tensor_copy(dst=out, src=acc)
            nisa.dma_copy(
                dst=result[m * TILE_M : (m + 1) * TILE_M, n * TILE_N : (n + 1) * TILE_N], src=out
            )
    return result


@nki.jit
def matmul_hoisted(lhsT, rhs):
    K, M = lhsT.shape
    _, N = rhs.shape
    tiles_k = K // TILE_K
    result = nl.ndarray((M, N), dtype=nl.float32, buffer=nl.shared_hbm)
    for m in nl.affine_range(M // TILE_M):
        a = nl.ndarray((TILE_K, tiles_k, TILE_M), dtype=lhsT.dtype, buffer=nl.sbuf)
        for k in nl.affine_range(tiles_k):
            nisa.dma_copy(
                dst=a[:, k, :],
                src=lhsT[k * TILE_K : (k + 1) * TILE_K, m * TILE_M : (m + 1) * TILE_M],
            )
        for n in nl.affine_range(N // TILE_N):
            b = nl.ndarray((TILE_K, tiles_k, TILE_N), dtype=rhs.dtype, buffer=nl.sbuf)
            for k in nl.affine_range(tiles_k):
                nisa.dma_copy(
                    dst=b[:, k, :],
                    src=rhs[k * TILE_K : (k + 1) * TILE_K, n * TILE_N : (n + 1) * TILE_N],
                )
            acc = nl.ndarray((TILE_M, TILE_N), dtype=nl.float32, buffer=nl.psum)
            for k in nl.affine_range(tiles_k):
                nisa.nc_matmul(dst=acc, stationary=a[:, k, :], moving=b[:, k, :])
            out = nl.ndarray((TILE_M, TILE_N), dtype=nl.float32, buffer=nl.sbuf)
            nisa.tensor_copy(dst=out, src=acc)
            nisa.dma_copy(
                dst=result[m * TILE_M : (m + 1) * TILE_M, n * TILE_N : (n + 1) * TILE_N], src=out
            )
    return result


@nki.jit
def matmul_blocked(lhsT, rhs, block_m=2, block_n=1):
    """Blocks of block_m × block_n output tiles (at most 8: one PSUM bank each); with K = 8192
    in fp32 a whole-K operand block of 512 columns takes 128 KiB of the 224 KiB per partition."""
    K, M = lhsT.shape
    _, N = rhs.shape
    tiles_k = K // TILE_K
    result = nl.ndarray((M, N), dtype=nl.float32, buffer=nl.shared_hbm)
    for mb in nl.affine_range(M // (TILE_M * block_m)):
        a = nl.ndarray((TILE_K, tiles_k, block_m * TILE_M), dtype=lhsT.dtype, buffer=nl.sbuf)
        m0 = mb * block_m * TILE_M
        for k in nl.affine_range(tiles_k):
            nisa.dma_copy(
                dst=a[:, k, :], src=lhsT[k * TILE_K : (k + 1) * TILE_K, m0 : m0 + block_m * TILE_M]
            )
        for nb in nl.affine_range(N // (TILE_N * block_n)):
            n0 = nb * block_n * TILE_N
            b = nl.ndarray((TILE_K, tiles_k, block_n * TILE_N), dtype=rhs.dtype, buffer=nl.sbuf)
            for k in nl.affine_range(tiles_k):
                nisa.dma_copy(
                    dst=b[:, k, :],
                    src=rhs[k * TILE_K : (k + 1) * TILE_K, n0 : n0 + block_n * TILE_N],
                )
            for i in nl.affine_range(block_m):
                for j in nl.affine_range(block_n):
                    acc = nl.ndarray((TILE_M, TILE_N), dtype=nl.float32, buffer=nl.psum)
                    for k in nl.affine_range(tiles_k):
                        nisa.nc_matmul(
                            dst=acc,
                            stationary=a[:, k, i * TILE_M : (i + 1) * TILE_M],
                            moving=b[:, k, j * TILE_N : (j + 1) * TILE_N],
                        )
                    out = nl.ndarray((TILE_M, TILE_N), dtype=nl.float32, buffer=nl.sbuf)
                    nisa.tensor_copy(dst=out, src=acc)
                    row, col = m0 + i * TILE_M, n0 + j * TILE_N
                    nisa.dma_copy(dst=result[row : row + TILE_M, col : col + TILE_N], src=out)
    return result


@nki.jit
def matmul_optimized(lhsT, rhs, block_m=2, block_n=4, block_k=8):
    """Blocks along M, N and K; each K block's partial products are added to an SBUF result
    block, so only block_k operand tiles need to be resident at a time."""
    K, M = lhsT.shape
    _, N = rhs.shape
    result = nl.ndarray((M, N), dtype=nl.float32, buffer=nl.shared_hbm)
    width_m, width_n = block_m * TILE_M, block_n * TILE_N
    for nb in nl.affine_range(N // width_n):
        n0 = nb * width_n
        for mb in nl.affine_range(M // width_m):
            m0 = mb * width_m
            partial = nl.ndarray((TILE_M, block_m, width_n), dtype=nl.float32, buffer=nl.sbuf)
            for kb in nl.affine_range(K // (TILE_K * block_k)):
                a = nl.ndarray((TILE_K, block_k, width_m), dtype=lhsT.dtype, buffer=nl.sbuf)
                b = nl.ndarray((TILE_K, block_k, width_n), dtype=rhs.dtype, buffer=nl.sbuf)
                for k in nl.affine_range(block_k):
                    k0 = (kb * block_k + k) * TILE_K
                    nisa.dma_copy(dst=a[:, k, :], src=lhsT[k0 : k0 + TILE_K, m0 : m0 + width_m])
                    nisa.dma_copy(dst=b[:, k, :], src=rhs[k0 : k0 + TILE_K, n0 : n0 + width_n])
                for i in nl.affine_range(block_m):
                    for j in nl.affine_range(block_n):
                        acc = nl.ndarray((TILE_M, TILE_N), dtype=nl.float32, buffer=nl.psum)
                        for k in nl.affine_range(block_k):
                            nisa.nc_matmul(
                                dst=acc,
                                stationary=a[:, k, i * TILE_M : (i + 1) * TILE_M],
                                moving=b[:, k, j * TILE_N : (j + 1) * TILE_N],
                            )
                        target = partial[:, i, j * TILE_N : (j + 1) * TILE_N]
                        if kb == 0:
                            nisa.tensor_copy(dst=target, src=acc)
                        else:
                            nisa.tensor_tensor(dst=target, data1=target, data2=acc, op=nl.add)
            for i in nl.affine_range(block_m):
                nisa.dma_copy(
                    dst=result[m0 + i * TILE_M : m0 + (i + 1) * TILE_M, n0 : n0 + width_n],
                    src=partial[:, i, :],
                )
    return result


VARIANTS = {
    "tiled": matmul_tiled,
    "hoisted": matmul_hoisted,
    "blocked": matmul_blocked,
    "optimized": matmul_optimized,
}
