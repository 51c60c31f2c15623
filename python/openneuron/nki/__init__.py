"""OpenNeuron's NKI: write NeuronCore kernels with the public NKI API and run them on the
simulated NeuronCore, with the hardware's rules enforced and trn2/trn3 latency estimated.

``import nki`` / ``nki.language as nl`` / ``nki.isa as nisa`` give these modules when AWS's nki
package is not installed (see alias.py); they are always reachable as ``openneuron.nki``.

The modules import one way, in the order data flows through a kernel: trace, dtypes, errors
and arguments; index_grid; tensor (views); isa (instructions on tensors); language (built on
isa); legacy (the older API, over language); tile_operators (a tensor's ``+``, ``*``, ``[...] =``
as language calls); kernel (launches on arrays and on neuron tensors); torch_kernels (kernels as
torch custom ops).
"""

from openneuron.nki import (  # noqa: F401
    isa,
    language,
    tile_operators,  # noqa: F401  (gives NkiTensor its Python operators)
)
from openneuron.nki.dtypes import DType as dtype  # noqa: F401
from openneuron.nki.errors import KernelRuleError, KernelTraceError  # noqa: F401
from openneuron.nki.kernel import (  # noqa: F401
    Kernel,
    LaunchResult,
    benchmark,
    estimate,
    jit,
    simulate,
    simulate_kernel,
)

_is_openneuron_alias = True
