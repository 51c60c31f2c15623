"""Runtime CPU dispatch: which ISA level was chosen, the OPENNEURON_MAX_CPU_ISA cap, and a
binary that carries AVX-512 instructions only inside the kernels built for AVX-512."""

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch

import openneuron

LEVELS = ("avx2", "avx512", "avx512_bf16")


def run_python(code: str, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", code],
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_capability_is_a_level_within_the_cpus():
    details = openneuron.cpu_capability_details()
    assert openneuron.cpu_capability() == details["capability"]
    assert details["capability"] in LEVELS and details["detected"] in LEVELS
    assert LEVELS.index(details["capability"]) <= LEVELS.index(details["detected"])
    wide = details["capability"] != "avx2"
    assert details["kernels"] == ("avx512" if wide else "avx2")


def test_avx2_cap_selects_the_avx2_kernels_and_caps_onednn():
    code = (
        "import torch, openneuron\n"
        "d = openneuron.cpu_capability_details()\n"
        "x = torch.randn(64, 48, device='neuron')\n"
        "w = torch.randn(48, 32, device='neuron')\n"
        "y = torch.nn.functional.layer_norm(x @ w, (32,))\n"
        "assert torch.allclose(y.cpu(), torch.nn.functional.layer_norm(x.cpu() @ w.cpu(), (32,)),"
        " atol=1e-4)\n"
        "print(d['capability'], d['kernels'], d['onednn'])\n"
    )
    done = run_python(code, OPENNEURON_MAX_CPU_ISA="avx2")
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["avx2", "avx2", "avx2"]


def test_malformed_cap_fails_at_import_naming_the_accepted_values():
    done = run_python("import openneuron", OPENNEURON_MAX_CPU_ISA="avx1024")
    assert done.returncode != 0
    assert "OPENNEURON_MAX_CPU_ISA='avx1024'" in done.stderr
    assert "avx2, avx512, avx512_bf16" in done.stderr


# EVEX-only forms: zmm and mask registers, the upper 16 vector registers, and instructions
# without a VEX encoding that GCC emits for AVX-512VL code on ymm/xmm.
EVEX_ONLY = re.compile(
    r"%zmm|%k[0-7]\b|%[xy]mm(1[6-9]|2[0-9]|3[01])\b|vpternlog|vpermt2|vpermi2|vcvtneps2bf16"
)


@pytest.mark.skipif(shutil.which("objdump") is None, reason="needs objdump (binutils)")
def test_avx512_instructions_appear_only_in_the_avx512_kernel_builds():
    # Catches -march=native (or an AVX-512 inline function shared with the baseline) coming
    # back: such code would die with SIGILL on an AVX2-only CPU.
    module = Path(openneuron._C.__file__)
    listing = subprocess.run(
        ["objdump", "-d", "--no-show-raw-insn", "-C", str(module)],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    function, offenders, avx512_functions = "", set(), set()
    for line in listing.splitlines():
        if line.endswith(">:"):
            function = line
        elif EVEX_ONLY.search(line):
            (avx512_functions if "isa_avx512" in function else offenders).add(function)
    assert not offenders, sorted(offenders)[:10]
    assert avx512_functions, "the AVX-512 kernel builds are missing from the module"
    assert torch.ones(1, device="neuron").item() == 1.0
