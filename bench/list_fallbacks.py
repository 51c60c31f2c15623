"""Runs every workload for 2 steps on neuron and prints the ops that fell back to the host.

PYTHONPATH=python python -m bench.list_fallbacks [workload ...]
"""

import os
import sys
import warnings

os.environ.setdefault("HF_HUB_OFFLINE", "1")


import openneuron  # noqa: E402
from bench.workloads import WORKLOADS  # noqa: E402

STEPS = 2


def main(names):
    warnings.simplefilter("ignore")
    for name in names or list(WORKLOADS):
        openneuron.clear_op_tracking()
        try:
            built = WORKLOADS[name].build("neuron")
            for i in range(STEPS):
                built.step(i).cpu()
            error = None
        except Exception as exc:  # report and keep going: the list is the point
            error = f"{type(exc).__name__}: {str(exc).splitlines()[0]}"
        fallbacks = openneuron.get_fallback_ops()
        print(
            f"{name}: {len(fallbacks)} op(s) on the host fallback"
            + (f"  [stopped: {error}]" if error else "")
        )
        for op, count in sorted(fallbacks.items(), key=lambda item: (-item[1], item[0])):
            print(f"  {count:6d}  {op}")


if __name__ == "__main__":
    main(sys.argv[1:])
