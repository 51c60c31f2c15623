"""``neuronxcc.nki``: the older generation of the NKI API on the simulated NeuronCore.

Its ``language`` and ``isa`` modules keep the older calls (index grids from ``nl.arange`` and
``nl.mgrid``, ``nisa`` calls that return their result tile); the launch entry points are the
current API's (``jit``, ``simulate_kernel``, ``benchmark``), plus ``baremetal`` and
``profile``.
"""

from openneuron.nki import estimate, jit, simulate, simulate_kernel  # noqa: F401
from openneuron.nki.dtypes import DType as dtype  # noqa: F401
from openneuron.nki.errors import KernelRuleError, KernelTraceError  # noqa: F401
from openneuron.nki.kernel import Kernel, LaunchResult, benchmark  # noqa: F401
from openneuron.nki.legacy.nki import isa, language, typing  # noqa: F401
