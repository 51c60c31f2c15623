"""torch.unique and torch.unique_consecutive on neuron: the values, inverse indices and counts
the CPU gives, for every dtype the device computes natively, with no host fallback."""

import warnings

import pytest
import torch

import openneuron
from tests.kernel_mutants import kernel_replaced

DTYPES = [torch.bool, torch.int8, torch.int32, torch.int64, torch.float16, torch.bfloat16]
DTYPES += [torch.float32]


def sample(dtype, shape=(5, 7)):
    torch.manual_seed(0)
    values = torch.randint(-3, 4, shape).to(dtype)  # small range: many repeats and runs
    if dtype.is_floating_point and values.numel() > 3:
        values.view(-1)[[1, 4]] = float("nan")  # NaNs are all distinct, as == makes them
    return values


def same(neuron_result, cpu_result, x):
    """Equal outputs, except which of several NaNs (all distinct) an index names: the order of
    NaNs is unspecified, so inverse indices are exact away from NaNs, and at NaNs each names a
    distinct NaN."""
    for got, want in zip(neuron_result, cpu_result):
        assert got.device.type == "neuron"
        assert got.dtype == want.dtype and got.shape == want.shape
    values, inverse, counts = (t.cpu() for t in neuron_result)
    assert torch.equal(values.nan_to_num(7), cpu_result[0].nan_to_num(7))
    assert torch.equal(counts, cpu_result[2])
    if inverse.numel() == 0:
        assert cpu_result[1].numel() == 0
        return
    nan = x.isnan() if x.is_floating_point() else torch.zeros_like(x, dtype=torch.bool)
    assert torch.equal(inverse[~nan], cpu_result[1][~nan])
    assert values[inverse[nan]].isnan().all()
    assert inverse[nan].unique().numel() == int(nan.sum())


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("shape", [(5, 7), (0, 3), ()], ids=["2d", "empty", "0d"])
def test_unique_matches_the_cpu_natively(dtype, shape):
    x = sample(dtype, shape)
    for inverse in (False, True):
        for counts in (False, True):
            with openneuron.strict():
                got = torch._unique2(x.to("neuron"), True, inverse, counts)
                got_runs = torch.ops.aten.unique_consecutive(x.to("neuron"), inverse, counts)
            same(got, torch._unique2(x, True, inverse, counts), x)
            same(got_runs, torch.ops.aten.unique_consecutive(x, inverse, counts), x)


def test_unsorted_request_still_returns_sorted_values_as_cpu_and_cuda_do():
    x = torch.tensor([5, 1, 5, 3, 1])
    values, counts = torch.unique(x.to("neuron"), sorted=False, return_counts=True)
    assert values.cpu().tolist() == [1, 3, 5] and counts.cpu().tolist() == [2, 1, 2]


def test_dim_forms_run_natively_and_float64_takes_the_host_fallback():
    x = sample(torch.int64)
    openneuron.clear_op_tracking()
    got = torch.unique_consecutive(x.to("neuron"), dim=0, return_counts=True)
    assert openneuron.get_fallback_ops() == {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert torch.equal(torch.unique(x.double().to("neuron")).cpu(), torch.unique(x.double()))
    want = torch.unique_consecutive(x, dim=0, return_counts=True)
    assert all(torch.equal(g.cpu(), w) for g, w in zip(got, want))
    assert set(openneuron.get_fallback_ops()) == {"aten::_unique2"}


def test_a_wrong_bincount_is_caught():
    # The counts come from the device's bincount; a kernel that drops one gives wrong counts.
    def short_bincount(values, weights=None, minlength=0):
        counts = torch.bincount(values.cpu(), weights, minlength)
        counts[0] -= 1
        return counts.to(values.device)

    x = sample(torch.int32)
    with kernel_replaced("bincount", short_bincount):
        got = torch._unique2(x.to("neuron"), True, False, True)
    with pytest.raises(AssertionError):
        same(got, torch._unique2(x, True, False, True), x)
