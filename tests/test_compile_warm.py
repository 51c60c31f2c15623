"""Warm compile: a second process finds the compiled graphs a first one stored in AOTAutograd's
persistent cache, and a damaged entry is reported, compiled again and replaced.

Checked by counters (graphs compiled, graphs loaded), never by timings.
"""

import json
import os
import sys
import textwrap

import pytest
import torch

import openneuron
from openneuron.compile import cache

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from tests.compile_fixtures import fresh_compiler  # noqa: E402, F401

# A forward and backward of a small block; prints what was compiled, loaded and computed.
TRAINING_STEP = textwrap.dedent(
    """
    import json, torch, openneuron
    from torch._dynamo.utils import counters
    torch.manual_seed(0)
    model = torch.nn.Sequential(
        torch.nn.Linear(16, 16), torch.nn.GELU(), torch.nn.LayerNorm(16)
    ).to("neuron")
    x = torch.randn(4, 16, device="neuron", requires_grad=True)
    y = torch.compile(model, backend="neuron")(x)
    (y * y).sum().backward()
    metrics = openneuron.compile_metrics()
    print(json.dumps({
        "graphs": metrics["graphs"],
        "loaded": metrics["cache_hits_aot"],
        "saved": counters["aot_autograd"].get("autograd_cache_saved", 0),
        "output": y.detach().cpu().flatten().tolist(),
        "grad": x.grad.cpu().flatten().tolist(),
    }))
    """
)


def run_step(run_python, tmp_path) -> dict:
    done = run_python(
        TRAINING_STEP,
        OPENNEURON_CACHE_DIR=str(tmp_path / "ours"),
        TORCHINDUCTOR_CACHE_DIR=str(tmp_path / "torch"),
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_second_process_loads_instead_of_compiling(run_python, tmp_path):
    cold = run_step(run_python, tmp_path)
    assert cold["graphs"] == 2 and cold["loaded"] == 0  # forward and backward
    assert cold["saved"] == 1  # one AOTAutograd entry holds both
    warm = run_step(run_python, tmp_path)
    assert warm["graphs"] == 0 and warm["loaded"] == 2
    assert warm["output"] == cold["output"] and warm["grad"] == cold["grad"]


def model_and_input():
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(16, 16), torch.nn.GELU(), torch.nn.LayerNorm(16))
    return model.to("neuron"), torch.randn(4, 16, device="neuron", requires_grad=True)


def compiled_step(model, x) -> list:
    """A fresh Dynamo and an empty in-memory cache, as in a new process; returns the results."""
    torch._dynamo.reset()
    cache.clear_memory()
    x.grad = None
    y = torch.compile(model, backend="neuron")(x)
    (y * y).sum().backward()
    return [y.detach().cpu(), x.grad.cpu()]


def aot_entries(tmp_path):
    entries = [p for p in (tmp_path / "torch_cache" / "aotautograd").rglob("*") if p.is_file()]
    assert entries, "nothing was stored in AOTAutograd's cache"
    return entries


def assert_equal(got, expected):
    assert all(torch.equal(a, b) for a, b in zip(got, expected, strict=True))


def test_reload_in_process_uses_the_stored_graphs(tmp_path):
    model, x = model_and_input()
    expected = compiled_step(model, x)
    openneuron.reset_compile_metrics()
    assert_equal(compiled_step(model, x), expected)
    metrics = openneuron.compile_metrics()
    assert metrics["graphs"] == 0 and metrics["cache_hits_aot"] == 2


@pytest.mark.parametrize(
    "damage",
    [
        pytest.param(lambda data: data[: len(data) // 2], id="truncated"),
        pytest.param(lambda data: b"\x00\xff" * 64, id="garbage"),
        # A valid pickle whose stored program text no longer matches its checksum.
        pytest.param(lambda data: data.replace(b"pointwise", b"pointwize", 1), id="program"),
    ],
)
def test_damaged_entry_is_reported_recompiled_and_replaced(tmp_path, damage):
    model, x = model_and_input()
    expected = compiled_step(model, x)
    for entry in aot_entries(tmp_path):
        data = entry.read_bytes()
        assert damage(data) != data
        entry.write_bytes(damage(data))
    openneuron.reset_compile_metrics()
    with pytest.warns(RuntimeWarning, match="compile cache.*(unusable|AOTAutograd)"):
        got = compiled_step(model, x)
    assert_equal(got, expected)
    metrics = openneuron.compile_metrics()
    assert metrics["cache_errors"] >= 1 and metrics["graphs"] == 2
    # Nothing is lost: the next fresh compile finds a good entry again.
    openneuron.reset_compile_metrics()
    assert_equal(compiled_step(model, x), expected)
    assert openneuron.compile_metrics()["cache_hits_aot"] == 2


def test_cache_option_and_empty_directory_keep_the_entry_out(tmp_path, monkeypatch):
    model, x = model_and_input()
    torch._dynamo.reset()
    y = torch.compile(model, backend="neuron", options={"cache": False})(x)
    y.sum().backward()
    assert not (tmp_path / "torch_cache" / "aotautograd").exists()
    monkeypatch.setenv("OPENNEURON_CACHE_DIR", "")
    compiled_step(model, x)
    assert not (tmp_path / "torch_cache" / "aotautograd").exists()
