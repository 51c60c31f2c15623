"""a @ b with the language-level API: tiles of a are transposed on the Tensor engine, products
accumulate in PSUM with ``acc += nl.matmul(...)``."""

import nki
import nki.language as nl


@nki.jit
def matmul(a, b):
    """a[M, K] @ b[K, N]; M, K multiples of 128, N a multiple of 512 or smaller than it."""
    m_size, k_size = a.shape
    _, n_size = b.shape
    tile_n = min(512, n_size)
    out = nl.ndarray((m_size, n_size), dtype=a.dtype, buffer=nl.shared_hbm)
    for m in nl.affine_range(m_size // 128):
        for n in nl.affine_range(n_size // tile_n):
            acc = nl.zeros((128, tile_n), dtype=nl.float32, buffer=nl.psum)
            for k in nl.affine_range(k_size // 128):
                a_tile = nl.load(a[m * 128 : (m + 1) * 128, k * 128 : (k + 1) * 128])
                b_tile = nl.load(b[k * 128 : (k + 1) * 128, n * tile_n : (n + 1) * tile_n])
                acc += nl.matmul(a_tile, b_tile)
            nl.store(
                out[m * 128 : (m + 1) * 128, n * tile_n : (n + 1) * tile_n],
                nl.copy(acc, dtype=a.dtype),
            )
    return out
