"""The five representative workloads (bench/workloads) on neuron against the CPU.

Each workload runs 10 training steps (forward passes for the BERT inference workloads) on
both devices from the same seed, weights and batches; losses/outputs must agree within the
workload's declared tolerance (bench.workloads.Tolerance states each reason). A second test
per workload asserts that nothing ran on the host fallback.
"""

import os
import sys
import warnings

import pytest
import torch

import openneuron

os.environ.setdefault("HF_HUB_OFFLINE", "1")
sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from bench.workloads import WORKLOADS  # noqa: E402

pytest.importorskip("transformers")

STEPS = 10


def run_steps(name, device):
    built = WORKLOADS[name].build(device)
    return [built.step(i).float().cpu() for i in range(STEPS)]


_cache = {}


def runs(name):
    """(cpu outputs, neuron outputs, neuron fallback ops), computed once per workload."""
    if name not in _cache:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            cpu = run_steps(name, "cpu")
            openneuron.clear_op_tracking()
            try:
                neuron = run_steps(name, "neuron")
            except Exception as error:  # remembered, so both tests report it
                _cache[name] = error
                raise
            _cache[name] = (cpu, neuron, openneuron.get_fallback_ops())
    if isinstance(_cache[name], Exception):
        raise _cache[name]
    return _cache[name]


@pytest.mark.parametrize("name", list(WORKLOADS))
def test_matches_cpu(name):
    cpu, neuron, _ = runs(name)
    tolerance = WORKLOADS[name].tolerance
    for step, (expected, actual) in enumerate(zip(cpu, neuron)):
        assert torch.isfinite(actual).all(), f"{name}: non-finite output at step {step}"
        torch.testing.assert_close(
            actual,
            expected,
            rtol=tolerance.rtol,
            atol=tolerance.atol,
            msg=lambda m, step=step: f"{name} step {step} ({tolerance.reason}): {m}",
        )


@pytest.mark.parametrize("name", list(WORKLOADS))
def test_no_fallbacks(name):
    _, _, fallbacks = runs(name)
    assert fallbacks == {}, f"{name} ran ops on the host fallback: {fallbacks}"


def test_training_losses_decrease():
    """A sanity check that the training workloads learn (on the CPU reference run)."""
    for name, workload in WORKLOADS.items():
        if not workload.training:
            continue
        cpu, _, _ = runs(name)
        assert cpu[-1].item() < cpu[0].item(), f"{name}: loss did not decrease over {STEPS} steps"
