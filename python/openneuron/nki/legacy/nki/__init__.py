"""``neuronxcc.nki``: the older generation of the NKI API on the simulated NeuronCore.

Its ``language`` and ``isa`` modules keep the older calls (index grids from ``nl.arange`` and
``nl.mgrid``, ``mask=``, ``nisa`` calls that return their result tile); ``compiler`` accepts
the allocation controls. The launch entry points are the current API's (``jit``,
``simulate_kernel``, ``benchmark``) plus ``baremetal`` and ``profile``: all run the kernel on
the simulator, and ``benchmark``/``profile`` record its estimated latency.
"""

from openneuron.nki import estimate, simulate, simulate_kernel  # noqa: F401
from openneuron.nki.dtypes import DType as dtype  # noqa: F401
from openneuron.nki.errors import KernelRuleError, KernelTraceError  # noqa: F401
from openneuron.nki.kernel import Kernel, LaunchResult, benchmark, jit  # noqa: F401
from openneuron.nki.legacy.nki import compiler, isa, language, typing  # noqa: F401


def baremetal(kernel=None, **options):
    """``nki.baremetal``: the kernel, run as it is (hardware compile options accepted)."""
    if kernel is None:
        return lambda k: jit(k, **options)
    return jit(kernel, **options)


def profile(kernel=None, working_directory=None, save_neff_name=None, save_trace_name=None,
            profile_nth=None, **options):  # fmt: skip
    """``nki.profile``: as ``nki.benchmark``, the estimate recorded on the kernel object and the
    Perfetto trace written to `save_trace_name` when given."""
    return benchmark(kernel, save_trace_name=save_trace_name)
