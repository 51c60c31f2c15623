"""The float64 arbiter of module checks: a value that differs from CPU beyond tolerance passes
only if every element is at least as close to the float64 result as the CPU's element."""

import torch

from tests.conformance.harness import _Float64Arbiter


def _closer(actual, expected, exact):
    return _Float64Arbiter._closer(actual, expected, exact, rtol=1.3e-6, atol=1e-5)


def test_closer_than_cpu_everywhere_passes():
    exact = torch.tensor([1.0, 2.0, 3.0], dtype=torch.float64)
    cpu = torch.tensor([1.0, 2.0 + 1e-3, 3.0])
    neuron = torch.tensor([1.0, 2.0 + 2e-4, 3.0])
    assert _closer(neuron, cpu, exact)


def test_farther_than_cpu_at_one_element_fails():
    exact = torch.tensor([1.0, 2.0, 3.0], dtype=torch.float64)
    cpu = torch.tensor([1.0, 2.0 + 1e-3, 3.0])
    neuron = torch.tensor([1.0, 2.0 + 2e-4, 3.0 + 1e-3])  # better at [1], worse at [2]
    assert not _closer(neuron, cpu, exact)


def test_nan_pattern_dtype_and_shape_must_agree():
    exact = torch.tensor([1.0, float("nan")], dtype=torch.float64)
    cpu = torch.tensor([1.0, float("nan")])
    assert _closer(torch.tensor([1.0, float("nan")]), cpu, exact)
    assert not _closer(torch.tensor([1.0, 0.0]), cpu, exact)
    assert not _closer(torch.tensor([1.0, float("nan")], dtype=torch.float64), cpu, exact)
    assert not _closer(torch.tensor([1.0]), cpu, exact)


def test_tuples_compare_elementwise():
    exact = (torch.tensor([1.0], dtype=torch.float64), torch.tensor([5.0], dtype=torch.float64))
    cpu = (torch.tensor([1.0]), torch.tensor([5.01]))
    assert _closer((torch.tensor([1.0]), torch.tensor([5.0])), cpu, exact)
    assert not _closer((torch.tensor([1.1]), torch.tensor([5.0])), cpu, exact)
