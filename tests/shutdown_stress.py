"""Shutdown stress: many short processes that exit with neuron work still in flight.

    .venv/bin/python -m tests.shutdown_stress --processes 200   # the full run (about 2 minutes)

`make test` runs a slice of it (tests/test_shutdown.py). Each child process queues matrix
products on several streams, starts pinned host<->device copies with non_blocking=True and
then ends without synchronizing, in one of these ways (cycled by the child's index):

- main returns normally while the work is queued;
- main returns while a second (non-daemon) thread is still enqueueing work;
- a thread other than main queues work and calls the C library's exit() while main waits
  for it, so static destructors run with the stream workers busy;
- the interpreter exits through sys.exit() from main right after raising inside a stream
  context;
- main returns right after a backward pass (autograd's device thread may still hold it).

A run fails when any child aborts (a signal, or "terminate called" on stderr), hangs past
the timeout, exits with a nonzero status, or prints a traceback. (A daemon thread still
inside a torch op when the interpreter finalizes aborts with "terminate called" on plain CPU
tensors too: CPython ends it with pthread_exit inside torch's GIL-releasing guard, so that
case is not one of the scenarios.)
"""

import argparse
import os
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

SCENARIOS = (
    "main_returns", "enqueueing_thread", "exit_from_thread", "sys_exit_in_stream",
    "after_backward",
)  # fmt: skip

CHILD = r"""
import ctypes, sys, threading, time
import torch

scenario = sys.argv[1]
streams = [torch.neuron.Stream() for _ in range(3)]
weights = torch.randn(256, 256, device="neuron")

def queue_work(count):
    for i in range(count):
        with torch.neuron.stream(streams[i % len(streams)]):
            x = torch.randn(256, 256, device="neuron")
            for _ in range(4):
                x = torch.relu(x @ weights)

host = torch.randn(1 << 20).pin_memory()
device_copy = host.to("neuron", non_blocking=True)
back = torch.empty(1 << 20).pin_memory()
back.copy_(device_copy, non_blocking=True)
queue_work(6)

if scenario == "enqueueing_thread":
    threading.Thread(target=queue_work, args=(40,)).start()
    time.sleep(0.005)
elif scenario == "exit_from_thread":
    libc = ctypes.CDLL(None)
    libc.exit.argtypes = [ctypes.c_int]

    def queue_then_exit():
        queue_work(20)
        libc.exit(0)

    worker = threading.Thread(target=queue_then_exit)
    worker.start()
    worker.join()
elif scenario == "sys_exit_in_stream":
    try:
        with torch.neuron.stream(streams[0]):
            queue_work(2)
            raise RuntimeError("leaving the stream context by an exception")
    except RuntimeError:
        sys.exit(0)
"""

# The after_backward scenario: the program's last act is a backward pass, with nothing left
# for the interpreter to tear down that would give autograd's device thread time to finish.
CHILD_AFTER_BACKWARD = r"""
import torch

leaf = torch.ones(3, device="neuron", requires_grad=True)
(leaf * 2).sum().backward()
"""


CHILDREN = {"after_backward": CHILD_AFTER_BACKWARD}


def run_child(index: int, timeout: float, scenarios=SCENARIOS) -> str | None:
    """Runs one child; returns None when it ended cleanly, else what went wrong."""
    scenario = scenarios[index % len(scenarios)]
    env = dict(os.environ, OPENNEURON_DEVICES="2", PYTHONPATH=str(ROOT / "python"))
    try:
        done = subprocess.run(
            [sys.executable, "-c", CHILDREN.get(scenario, CHILD), scenario],
            capture_output=True,
            text=True,
            timeout=timeout,
            env=env,
        )
    except subprocess.TimeoutExpired:
        return f"child {index} ({scenario}) hung for more than {timeout:.0f} s"
    problems = []
    if done.returncode != 0:
        problems.append(f"exit status {done.returncode}")
    for marker in ("terminate called", "Traceback", "Aborted", "Segmentation"):
        if marker in done.stderr:
            problems.append(f"'{marker}' on stderr")
    if problems:
        return f"child {index} ({scenario}): {', '.join(problems)}\n{done.stderr[-2000:]}"
    return None


def run(processes: int, timeout: float = 60.0, parallel: int = 2, scenarios=SCENARIOS) -> list[str]:
    """Runs `processes` children (cycling `scenarios`), `parallel` at a time; returns the
    failures."""
    with ThreadPoolExecutor(max_workers=parallel) as pool:
        results = pool.map(lambda index: run_child(index, timeout, scenarios), range(processes))
        return [result for result in results if result is not None]


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--processes", type=int, default=200)
    parser.add_argument("--timeout", type=float, default=60.0, help="seconds per child")
    parser.add_argument("--parallel", type=int, default=2, help="children at a time")
    args = parser.parse_args()
    start = time.perf_counter()
    failures = run(args.processes, args.timeout, args.parallel)
    elapsed = time.perf_counter() - start
    for failure in failures:
        print(failure)
    print(f"{args.processes} processes, {len(failures)} failed, {elapsed:.0f} s")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
