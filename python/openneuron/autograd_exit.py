"""At interpreter exit, waits until autograd's neuron device threads have let go of the last
backward pass.

A backward pass on a device runs on autograd's thread for that device index, which wakes the
caller and only then drops its reference to the pass's state. That state holds a Python object
(``torch.autograd.graph`` stashes a ``contextvars`` context in it), so when the caller's
program ends in that window the thread decrements it while the interpreter finalizes: CPython
ends the thread with ``pthread_exit`` inside a noexcept destructor and the process aborts
("terminate called without an active exception", about half the runs of a script whose last
act is ``loss.backward()``). PyTorch's own device backends share the race; here an ``atexit``
handler (which runs before finalization, with the interpreter intact) sends one tiny backward
through each device thread: a thread takes it only after finishing the previous pass, so when
it completes nothing of the user's passes is left to drop.
"""

import atexit
import os

import torch


def _autograd_device_threads_started() -> bool:
    try:
        names = os.listdir("/proc/self/task")
    except OSError:
        return True  # cannot tell: drain anyway
    for task in names:
        try:
            with open(f"/proc/self/task/{task}/comm") as comm:
                if comm.read().startswith("pt_autograd_"):
                    return True
        except OSError:
            continue
    return False


def drain_autograd_device_threads() -> None:
    """Runs one backward pass on every neuron device's autograd thread and waits for it. The
    pass calls the engine directly, not through ``torch.autograd``, so it stashes no Python
    object of its own."""
    if not torch.neuron.is_initialized() or not _autograd_device_threads_started():
        return
    engine = torch.autograd.Variable._execution_engine
    for index in range(torch.neuron.device_count()):
        leaf = torch.zeros(1, device=f"neuron:{index}", requires_grad=True)
        out = leaf * 2.0
        engine.run_backward((out,), (torch.ones_like(out),), False, False, (), True, True)


def _drain_at_exit() -> None:
    try:
        drain_autograd_device_threads()
    except Exception:  # noqa: BLE001  a broken device at exit leaves nothing to drain
        pass


atexit.register(_drain_at_exit)
