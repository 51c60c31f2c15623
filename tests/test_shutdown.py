"""Processes that exit with neuron work in flight end cleanly (a slice of the stress run).

The full run, >= 200 processes: `.venv/bin/python -m tests.shutdown_stress --processes 200`.
"""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from tests import shutdown_stress  # noqa: E402


def test_processes_exiting_with_queued_work_end_cleanly():
    # 12 children over the exit scenarios (about 20 s on 2 cores).
    failures = shutdown_stress.run(processes=12, timeout=60.0)
    assert not failures, "\n".join(failures)


def test_processes_ending_right_after_a_backward_pass_do_not_abort():
    # Without the atexit drain about half of these aborted ("terminate called without an
    # active exception"): autograd's device thread dropped the pass during finalization.
    failures = shutdown_stress.run(processes=6, timeout=60.0, scenarios=("after_backward",))
    assert not failures, "\n".join(failures)
