"""Processes that exit with neuron work in flight end cleanly (a slice of the stress run).

The full run, >= 200 processes: `.venv/bin/python -m tests.shutdown_stress --processes 200`.
"""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from tests import shutdown_stress  # noqa: E402


def test_processes_exiting_with_queued_work_end_cleanly():
    # 12 children: each of the four exit scenarios three times (about 20 s on 2 cores).
    failures = shutdown_stress.run(processes=12, timeout=60.0)
    assert not failures, "\n".join(failures)
