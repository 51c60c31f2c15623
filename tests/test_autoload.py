"""`import torch` alone brings up the neuron device, and the switch to turn that off works."""

import os
import subprocess
import sys


def run(script: str, **env_overrides: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, **env_overrides)
    return subprocess.run(
        [sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=120
    )


def test_import_torch_alone_provides_the_neuron_device():
    done = run(
        "import torch; x = torch.ones(2, device='neuron'); "
        "print(x * 2, torch.accelerator.current_accelerator())"
    )
    assert done.returncode == 0, done.stderr
    assert "tensor([2., 2.], device='neuron:0') neuron" in done.stdout
    # Printing a tensor must not exercise (and warn about) the host fallback.
    assert "fallback" not in done.stderr


def test_autoload_can_be_disabled():
    done = run(
        "import torch; print(torch._C._get_privateuse1_backend_name(), hasattr(torch, 'neuron'))",
        TORCH_DEVICE_BACKEND_AUTOLOAD="0",
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["privateuseone", "False"]


def test_explicit_import_after_disabled_autoload():
    done = run(
        "import torch, openneuron; print(torch.ones(1, device='neuron').device)",
        TORCH_DEVICE_BACKEND_AUTOLOAD="0",
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "neuron:0"


def test_importing_openneuron_before_torch():
    done = run("import openneuron, torch; print(torch.ones(1, device='neuron').device)")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "neuron:0"
