"""The fixture every torch.compile test module uses: each test starts with empty caches (Dynamo's,
ours in memory, fresh directories for our disk cache and PyTorch's AOTAutograd cache) and
zeroed compile metrics. Also `compile_fault`, the test-only wrong epilogue for a block."""

import contextlib

import pytest
import torch

import openneuron
from openneuron.compile import cache


@pytest.fixture(autouse=True)
def fresh_compiler(tmp_path, monkeypatch):
    monkeypatch.setenv("OPENNEURON_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(tmp_path / "torch_cache"))
    torch._dynamo.reset()
    cache.clear_memory()
    openneuron.reset_compile_metrics()
    yield
    torch._dynamo.reset()


@contextlib.contextmanager
def compile_fault(name: str):
    """Inside the block every fused GEMM and convolution epilogue computes the named wrong thing
    (drop_bias, wrong_scale, skip_body: csrc/compiler/epilogue_faults.h); restored after."""
    from openneuron import _C

    previous = _C._compiler_fault()
    _C._compiler_set_fault(name)
    try:
        yield
    finally:
        _C._compiler_set_fault(previous)
