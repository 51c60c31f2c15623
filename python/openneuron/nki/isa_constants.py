"""``nki.isa.constants``: the instruction set's enums as a module, for kernels that write
``from nki.isa.constants import oob_mode, dge_mode``; the same classes as at the top of
``nki.isa``."""

from openneuron.nki.isa import (  # noqa: F401
    dge_mode,
    dma_engine,
    engine,
    matmul_perf_mode,
    nc_version,
    oob_mode,
    reduce_cmd,
)
