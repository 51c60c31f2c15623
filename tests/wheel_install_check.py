"""The wheel in dist/ installs into a fresh virtual environment beside torch 2.13.0 and works.

Run by `make test-wheel` after `make wheel` (not part of `make test`: installing torch into a
new environment takes a minute or two). Outside the source tree, `import torch` alone must
load the backend (autoload), and a small computation on `neuron` must match the CPU.
"""

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

SMOKE = textwrap.dedent(
    """
    import torch  # autoload registers the device; openneuron is not imported by name
    assert torch.accelerator.current_accelerator().type == "neuron"
    x = torch.randn(64, 32)
    w = torch.randn(32, 16)
    on_neuron = (torch.relu(x.to("neuron") @ w.to("neuron")) * 2).sum().item()
    on_cpu = (torch.relu(x @ w) * 2).sum().item()
    assert abs(on_neuron - on_cpu) <= 1e-3 * max(1.0, abs(on_cpu)), (on_neuron, on_cpu)
    import openneuron
    assert openneuron.__file__.find("site-packages") >= 0, openneuron.__file__
    # oneMKL comes in as a declared dependency and is found in the new environment.
    mkl = openneuron.cpu_capability_details()["mkl"]
    assert " from " in mkl, mkl
    # auto gives it the products on Intel CPUs (OpenBLAS measured faster elsewhere).
    if openneuron.cpu_capability_details()["auto_prefers_mkl"]:
        assert openneuron._C._library_call_counts()["mkl_gemm"] > 0
    print(openneuron.cpu_capability(), openneuron.get_fallback_ops())
    """
)


# The start-up hook the wheel installs: `import nki` with nothing imported first, no torch
# imported before it is asked for.
NKI_NAMES = textwrap.dedent(
    """
    import sys
    assert "torch" not in sys.modules, "the start-up hook imported torch"
    import nki, nki.language, nki.isa
    import neuronxcc.nki.language as nl
    from neuronxcc import nki as older
    assert nki.__name__ == "openneuron.nki", nki.__name__
    print(older.__name__)
    """
)


def newest_wheel() -> Path:
    wheels = sorted((ROOT / "dist").glob("openneuron-*.whl"), key=lambda p: p.stat().st_mtime)
    if not wheels:
        pytest.fail("no wheel in dist/: run `make wheel` first")
    return wheels[-1]


def test_wheel_installs_beside_torch_and_autoloads(tmp_path):
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    python = venv / "bin" / "python"
    # torch==2.13.0 comes in as the wheel's declared dependency.
    subprocess.run(
        [str(python), "-m", "pip", "install", "--quiet", str(newest_wheel())], check=True
    )
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    done = subprocess.run(
        [str(python), "-c", SMOKE], cwd=tmp_path, env=env, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    capability = done.stdout.split()[0]
    assert capability in ("avx2", "avx512", "avx512_bf16"), done.stdout
    names = subprocess.run(
        [str(python), "-c", NKI_NAMES], cwd=tmp_path, env=env, capture_output=True, text=True
    )
    assert names.returncode == 0, names.stderr
    assert names.stdout.strip() == "openneuron.nki.legacy.nki"
