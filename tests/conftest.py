"""Shared fixtures for the neuron backend tests (opt-in only; nothing here is autouse)."""

import os
import subprocess
import sys
import textwrap

import pytest
import torch


@pytest.fixture
def restore_device():
    """Restores the calling thread's current neuron device after the test."""
    previous = torch.neuron.current_device()
    yield previous
    torch.neuron.set_device(previous)


@pytest.fixture
def second_device() -> torch.device:
    """neuron:1, or a skip when the process has a single neuron device."""
    if torch.neuron.device_count() < 2:
        pytest.skip("needs two neuron devices (OPENNEURON_DEVICES >= 2)")
    return torch.device("neuron", 1)


@pytest.fixture(scope="session")
def run_python():
    """Runs a Python snippet in a fresh interpreter with the given OPENNEURON_* settings.

    Every OPENNEURON_* variable of the parent is dropped first, so the child sees exactly the
    configuration the test names.
    """

    def run(code: str, **settings: str) -> subprocess.CompletedProcess:
        env = {k: v for k, v in os.environ.items() if not k.startswith("OPENNEURON_")}
        env.update(settings)
        return subprocess.run(
            [sys.executable, "-c", textwrap.dedent(code)],
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )

    return run
