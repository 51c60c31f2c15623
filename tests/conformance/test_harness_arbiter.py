"""The float64 arbiter (arbiter.py): a value that differs from the CPU's beyond tolerance
passes only if every element is at least as close to the float64 result as the CPU's element,
infinite CPU elements are matched exactly, and ops depending on dtype limits are never
arbitrated."""

import torch

from tests.conformance import harness
from tests.conformance.arbiter import DTYPE_LIMIT_OPS, closer_than_cpu
from tests.conformance.catalog import ops_by_name
from tests.conformance.layouts import matches_a_cpu_layout

INF = float("inf")


def _closer(actual, expected, exact):
    return closer_than_cpu(actual, expected, exact, rtol=1.3e-6, atol=1e-5)


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


def test_infinite_cpu_element_with_finite_float64_must_match_exactly():
    # CPU overflows to inf at float32, float64 does not: the bound |cpu - exact| is infinite,
    # so without the exact-match rule any value would pass there.
    exact = torch.tensor([1.0, 1e39], dtype=torch.float64)
    cpu = torch.tensor([1.0 + 1e-3, INF])
    assert _closer(torch.tensor([1.0, INF]), cpu, exact)
    assert not _closer(torch.tensor([1.0, 0.0]), cpu, exact)
    assert not _closer(torch.tensor([1.0, -INF]), cpu, exact)
    assert not _closer(torch.tensor([1.0, 3e38]), cpu, exact)


def test_neuron_infinite_where_cpu_is_finite_fails():
    # nan_to_num leaving inf: CPU gives float32's max, float64 gives float64's max.
    exact = torch.tensor([1.7976931348623157e308], dtype=torch.float64)
    cpu = torch.tensor([3.4028234663852886e38])
    assert not _closer(torch.tensor([INF]), cpu, exact)


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


def test_float64_results_are_never_arbitrated():
    exact = torch.tensor([1.0], dtype=torch.float64)
    assert not _closer(exact + 1e-9, exact + 1e-3, exact)


def test_comparer_records_each_decision_and_skips_dtype_limit_ops():
    exact = torch.tensor([2.0], dtype=torch.float64)
    cpu, neuron = torch.tensor([2.001]), torch.tensor([2.0])
    result = harness.Result("op", "x", "float32", "skip")
    harness._Comparer(1.3e-6, 1e-5, True, result, check_device=False)(
        neuron, cpu, lambda: exact, "forward"
    )
    assert result.decided_by == {"float64 arbiter": 1} and "forward" in result.arbitrated
    refusing = harness._Comparer(1.3e-6, 1e-5, True, result, check_device=False, arbitrate=False)
    try:
        refusing(neuron, cpu, lambda: exact, "forward")
    except harness.CheckFailure:
        pass
    else:
        raise AssertionError("a comparer with arbitration off accepted a value off the CPU's")


def test_dtype_limit_ops_exist_in_the_database():
    ops = ops_by_name()
    assert all(name in ops and reason for name, reason in DTYPE_LIMIT_OPS.items())


# ---- the CPU layout rule (layouts.py) ------------------------------------------------------

NAN = float("nan")


def _layouts(actual, *cpu_layouts):
    return matches_a_cpu_layout(actual, list(cpu_layouts), rtol=1.3e-6, atol=1e-5)


def test_value_of_another_cpu_layout_passes_where_the_layouts_disagree():
    # elu's gradient at a NaN input: NaN from the CPU's vectorized loop, g from its scalar one.
    vectorized = torch.tensor([0.5, NAN, 2.0])
    scalar = torch.tensor([0.5, 1.0, 2.0])
    assert _layouts(torch.tensor([0.5, 1.0, 2.0]), vectorized, scalar)
    assert _layouts(torch.tensor([0.5, NAN, 2.0]), scalar, vectorized)


def test_value_no_cpu_layout_gives_fails():
    vectorized = torch.tensor([0.5, NAN, 2.0])
    scalar = torch.tensor([0.5, 1.0, 2.0])
    assert not _layouts(torch.tensor([0.5, 0.0, 2.0]), vectorized, scalar)  # 0 at the NaN
    assert not _layouts(torch.tensor([0.5, 1.0, 2.1]), vectorized, scalar)  # off elsewhere


def test_layout_rule_needs_the_cpu_layouts_to_disagree():
    cpu = torch.tensor([0.5, 1.0, 2.0])
    assert not _layouts(torch.tensor([0.5, 1.0, 2.0 + 1e-3]), cpu, cpu.clone())


def test_layout_rule_is_used_for_a_real_layout_dependent_pair():
    result = harness.check_op(ops_by_name()["nn.functional.elu"], torch.float32, max_samples=4)
    assert result.status == "native", result
    assert result.decided_by.get("CPU layout-dependent", 0) >= 1, result.decided_by


def test_layout_rule_compares_complex_values_componentwise():
    # complex64 products overflowing: the CPU's vectorized loop gives inf+0j, its scalar loop
    # inf+3.2e14j for the same inputs.
    vectorized = torch.tensor([1 + 1j, complex(INF, 0.0)], dtype=torch.complex64)
    scalar = torch.tensor([1 + 1j, complex(INF, 3.2e14)], dtype=torch.complex64)
    assert _layouts(vectorized.clone(), scalar, vectorized)
    assert not _layouts(torch.tensor([1 + 1j, complex(NAN, INF)]), scalar, vectorized)
