"""Runs a function in N spawned rank processes with a deadline, collecting what each returns.

Ranks are spawned (the runtime refuses a fork after initialisation), rendezvous on a fresh
127.0.0.1 port, and report through JSON files, so a rank that dies or hangs is seen as such
instead of stalling the test: every launch is bounded by its deadline.
"""

from __future__ import annotations

import faulthandler
import json
import multiprocessing
import os
import socket
import time
import traceback
from pathlib import Path


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _rank_main(target, rank, world_size, port, result_dir, env, args, stack_dump_s):
    faulthandler.enable()  # a crash prints its stack instead of only an exit code
    # A rank still running shortly before the deadline prints where each thread is.
    faulthandler.dump_traceback_later(stack_dump_s, exit=False)
    os.environ.update(env)
    os.environ.update(
        {
            "MASTER_ADDR": "127.0.0.1",
            "MASTER_PORT": str(port),
            "RANK": str(rank),
            "WORLD_SIZE": str(world_size),
            "LOCAL_RANK": str(rank),
        }
    )
    try:
        outcome = {"ok": True, "result": target(rank, world_size, *args)}
    except BaseException as error:  # reported to the parent, which fails the test
        outcome = {"ok": False, "error": f"{type(error).__name__}: {error}"}
        outcome["traceback"] = traceback.format_exc()
    Path(result_dir, f"rank{rank}.json").write_text(json.dumps(outcome))
    # Skip interpreter teardown: worker threads of a broken group must not delay the exit.
    os._exit(0)


def launch(
    target, world_size: int, result_dir, *args, env=None, deadline_s: float = 90.0, watch=None
):
    """Runs target(rank, world_size, *args) in world_size spawned processes.

    Returns one entry per rank: {"ok": True, "result": ...}, {"ok": False, "error": ...,
    "traceback": ...}, or {"ok": False, "error": "no report ..."} for a rank that died or was
    still running at the deadline (it is then killed). With `watch` (a rank), the others are
    killed as soon as that rank has finished.
    """
    context = multiprocessing.get_context("spawn")
    port = free_port()
    result_dir = Path(result_dir)
    result_dir.mkdir(parents=True, exist_ok=True)
    processes = [
        context.Process(
            target=_rank_main,
            args=(
                target,
                rank,
                world_size,
                port,
                str(result_dir),
                dict(env or {}),
                args,
                max(1.0, deadline_s - 5),
            ),
            daemon=True,
        )
        for rank in range(world_size)
    ]
    # The children inherit the environment at start, before they import torch (which reads
    # settings such as TORCH_DISTRIBUTED_DEBUG when it loads).
    saved = dict(os.environ)
    os.environ.update(env or {})
    try:
        for process in processes:
            process.start()
    finally:
        os.environ.clear()
        os.environ.update(saved)
    end = time.monotonic() + deadline_s
    for process in [processes[watch]] if watch is not None else processes:
        process.join(max(0.0, end - time.monotonic()))
    outcomes = []
    for rank, process in enumerate(processes):
        if process.is_alive():
            process.kill()
            process.join(5)
        report = result_dir / f"rank{rank}.json"
        if report.exists():
            outcomes.append(json.loads(report.read_text()))
        else:
            outcomes.append({"ok": False, "error": f"no report (exit code {process.exitcode})"})
    return outcomes


def describe(outcomes) -> str:
    """The failures of a launch, for an assertion message."""
    lines = []
    for rank, outcome in enumerate(outcomes):
        if not outcome["ok"]:
            lines.append(f"rank {rank}: {outcome['error']}\n{outcome.get('traceback', '')}")
    return "\n".join(lines)
