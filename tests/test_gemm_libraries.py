"""The matrix-product library choice (OPENNEURON_GEMM_LIBRARY): each forced library runs the
matmul family right, forward and backward, and the counters show that it, and only it, ran."""

import json
import os
import subprocess
import sys

import pytest

import openneuron

# Runs in a child (the choice is read once per process): products of every matmul entry point
# in fp32, fp64 and bf16 against torch on the CPU, then the library calls made.
CHILD = r"""
import json, torch, openneuron
torch.manual_seed(0)
errors = []
def check(name, got, want, dtype):
    tol = {torch.float32: 1e-4, torch.float64: 1e-10, torch.bfloat16: 2e-2}[dtype]
    try:
        torch.testing.assert_close(got.cpu(), want, rtol=tol, atol=tol)
    except AssertionError as error:
        errors.append(f"{name} {dtype}: {error}".splitlines()[0])
for dtype in (torch.float32, torch.float64, torch.bfloat16):
    a = torch.randn(67, 45, dtype=dtype)
    b = torch.randn(45, 39, dtype=dtype)
    bias = torch.randn(39, dtype=dtype)
    x = torch.randn(3, 17, 45, dtype=dtype)
    w = torch.randn(29, 45, dtype=dtype, requires_grad=True)
    n = lambda t: t.detach().to("neuron").requires_grad_(t.requires_grad)
    check("mm", n(a) @ n(b), a @ b, dtype)
    check("mm transposed", n(b).t() @ n(a).t(), b.t() @ a.t(), dtype)
    check("addmm", torch.addmm(n(bias), n(a), n(b), beta=0.5, alpha=2),
          torch.addmm(bias, a, b, beta=0.5, alpha=2), dtype)
    check("bmm", torch.bmm(n(x), n(x).transpose(1, 2)), torch.bmm(x, x.transpose(1, 2)), dtype)
    wn = n(w)
    out = torch.nn.functional.linear(n(x), wn)
    out.square().sum().backward()
    ref = torch.nn.functional.linear(x, w)
    ref.square().sum().backward()
    check("linear", out, ref, dtype)
    check("linear weight grad", wn.grad, w.grad, dtype)
print(json.dumps({"errors": errors, "calls": openneuron._C._library_call_counts(),
                  "details": openneuron.cpu_capability_details()}))
"""


def run_child(library: str) -> dict:
    done = subprocess.run(
        [sys.executable, "-c", CHILD],
        env={**os.environ, "OPENNEURON_GEMM_LIBRARY": library},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


MKL_INSTALLED = " from " in openneuron.cpu_capability_details()["mkl"]


@pytest.mark.parametrize("library", ["auto", "mkl", "onednn", "openblas"])
def test_each_library_runs_the_matmul_family_right(library):
    if library == "mkl" and not MKL_INSTALLED:
        pytest.skip(f"oneMKL is not installed here: {openneuron.cpu_capability_details()['mkl']}")
    result = run_child(library)
    assert result["errors"] == []
    assert result["details"]["gemm_library"] == library
    calls = result["calls"]
    wide_onednn = result["details"]["capability"] != "avx2"  # oneDNN 2.6 brgemm needs AVX-512
    # auto: oneMKL on Intel CPUs where it is installed, OpenBLAS (or oneDNN) elsewhere.
    mkl_expected = library == "mkl" or (library == "auto" and result["details"]["auto_prefers_mkl"])
    if mkl_expected:
        assert calls["mkl_gemm"] > 0 and calls["openblas_gemm"] == 0
    elif library == "auto":
        assert calls["mkl_gemm"] == 0
    if library == "mkl":
        assert calls["onednn_matmul"] == 0
    if library == "openblas":
        assert calls["mkl_gemm"] == 0 and calls["onednn_matmul"] == 0
        assert calls["openblas_gemm"] > 0
    if library == "onednn":
        assert calls["mkl_gemm"] == 0
        assert calls["onednn_matmul" if wide_onednn else "openblas_gemm"] > 0


def test_forcing_mkl_where_it_cannot_load_names_the_reason():
    code = "import torch, openneuron\nx = torch.ones(4, 4, device='neuron')\n(x @ x).cpu()\n"
    done = subprocess.run(
        [sys.executable, "-c", code],
        env={
            **os.environ,
            "OPENNEURON_GEMM_LIBRARY": "mkl",
            "OPENNEURON_MKL_LIBRARY": "/nonexistent/libmkl_rt.so.3",
        },
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode != 0
    assert "OPENNEURON_GEMM_LIBRARY=mkl, but oneMKL not loaded" in done.stderr
    assert "/nonexistent/libmkl_rt.so.3" in done.stderr


def test_unknown_library_fails_at_import_naming_the_choices():
    done = subprocess.run(
        [sys.executable, "-c", "import openneuron"],
        env={**os.environ, "OPENNEURON_GEMM_LIBRARY": "cublas"},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode != 0
    assert "cublas is not one of auto, mkl, onednn, openblas" in done.stderr


def test_switching_the_library_between_products_takes_effect():
    # The switch bench/gemm_libraries.py uses: each product runs on the library chosen when it
    # was issued, and the empty name returns to the process's own choice.
    import torch

    a = torch.randn(64, 48, device="neuron")
    b = torch.randn(48, 40, device="neuron")
    want = a.cpu() @ b.cpu()
    wide_onednn = openneuron.cpu_capability_details()["capability"] != "avx2"
    try:
        for library, counter in (
            ("openblas", "openblas_gemm"),
            ("onednn", "onednn_matmul" if wide_onednn else "openblas_gemm"),
        ):
            openneuron._C._set_gemm_library_for_testing(library)
            before = openneuron._C._library_call_counts()
            got = (a @ b).cpu()
            after = openneuron._C._library_call_counts()
            torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-4)
            changed = {name for name in after if after[name] != before[name]}
            assert changed == {counter}, (library, changed)
    finally:
        openneuron._C._set_gemm_library_for_testing("")
    with pytest.raises(ValueError, match="cublas is not one of"):
        openneuron._C._set_gemm_library_for_testing("cublas")
