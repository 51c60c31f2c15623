"""torch.searchsorted and torch.bucketize on neuron: the CPU's insertion points and its errors,
natively at every dtype the device computes."""

import warnings

import pytest
import torch

import openneuron
from tests.kernel_mutants import kernel_replaced

DTYPES = [torch.int8, torch.int32, torch.int64, torch.float16, torch.bfloat16, torch.float32]
NAN = float("nan")


def on_neuron(*tensors):
    return [t.to("neuron") if isinstance(t, torch.Tensor) else t for t in tensors]


def sorted_rows(shape, dtype):
    torch.manual_seed(0)
    return torch.sort(torch.randint(-20, 20, shape).to(dtype), dim=-1).values


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_searchsorted_matches_the_cpu(dtype):
    for boundaries_shape, values_shape in [((17,), (4, 9)), ((3, 17), (3, 9)), ((17,), ())]:
        boundaries = sorted_rows(boundaries_shape, dtype)
        values = torch.randint(-25, 25, values_shape).to(dtype)
        for kwargs in [{}, {"right": True}, {"side": "right"}, {"out_int32": True}]:
            b, v = on_neuron(boundaries, values)
            with openneuron.strict():
                got = torch.searchsorted(b, v, **kwargs)
            want = torch.searchsorted(boundaries, values, **kwargs)
            assert got.dtype == want.dtype and torch.equal(got.cpu(), want), kwargs


def test_sorter_scalars_bucketize_mixed_dtypes_and_out():
    torch.manual_seed(1)
    unsorted = torch.randn(3, 11)
    sorter = torch.argsort(unsorted, dim=-1)
    values = torch.randn(3, 5)
    b, s, v = on_neuron(unsorted, sorter, values)
    with openneuron.strict():
        got = [
            torch.searchsorted(b, v, sorter=s),
            torch.searchsorted(b[0], 0.25),
            torch.bucketize(v, b[0].sort().values, right=True),
            torch.bucketize(3, torch.arange(10.0, device="neuron")),
            torch.searchsorted(b[0].sort().values.half(), v.int()),
        ]
        out = torch.empty(5, 3, dtype=torch.long, device="neuron").t()  # not contiguous
        torch.searchsorted(b.sort().values, v, out=out)
    want = [
        torch.searchsorted(unsorted, values, sorter=sorter),
        torch.searchsorted(unsorted[0], 0.25),
        torch.bucketize(values, unsorted[0].sort().values, right=True),
        torch.bucketize(3, torch.arange(10.0)),
        torch.searchsorted(unsorted[0].sort().values.half(), values.int()),
    ]
    for g, w in zip(got, want):
        assert g.dtype == w.dtype and torch.equal(g.cpu(), w)
    assert torch.equal(out.cpu(), torch.searchsorted(unsorted.sort().values, values))


def test_nans_are_placed_as_the_cpu_places_them():
    boundaries = torch.tensor([[1.0, 2, 2, 3, NAN], [NAN, NAN, 0, 1, 2]])
    values = torch.tensor([[2.5, 3, NAN, -1], [NAN, 0.5, 5, -9]])
    for right in (False, True):
        got = torch.searchsorted(*on_neuron(boundaries, values), right=right)
        assert torch.equal(got.cpu(), torch.searchsorted(boundaries, values, right=right))


def test_empty_operands():
    empty_values = torch.searchsorted(
        torch.arange(4.0, device="neuron"), torch.zeros(0, 3, device="neuron")
    )
    assert empty_values.shape == (0, 3) and empty_values.device.type == "neuron"
    no_boundaries = torch.searchsorted(
        torch.zeros(0, device="neuron"), torch.ones(3, device="neuron")
    )
    assert no_boundaries.cpu().tolist() == [0, 0, 0]
    # Per-row boundaries with empty rows, and rows of no values.
    for boundaries_shape, values_shape in [((2, 0), (2, 3)), ((2, 5), (2, 0)), ((0, 4), (0, 2))]:
        boundaries, values = torch.zeros(boundaries_shape), torch.ones(values_shape)
        got = torch.searchsorted(*on_neuron(boundaries, values))
        assert torch.equal(got.cpu(), torch.searchsorted(boundaries, values))


@pytest.mark.parametrize(
    "call",
    [
        lambda b, v: torch.searchsorted(b.view(1, -1).expand(2, -1), v.view(4, 1)),
        lambda b, v: torch.searchsorted(b, v, right=True, side="left"),
        lambda b, v: torch.searchsorted(
            b, v, out=torch.empty(4, dtype=torch.float, device=b.device)
        ),
        lambda b, v: torch.bucketize(v, b.view(2, -1)),
        lambda b, v: torch.searchsorted(b.bool(), v.bool()),
    ],
    ids=["shape", "side", "out dtype", "bucketize 2-d", "bool"],
)
def test_errors_are_the_cpus(call):
    boundaries, values = torch.arange(6.0), torch.tensor([1.5, 2, 7, -1])
    with pytest.raises(RuntimeError) as on_cpu:
        call(boundaries, values)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(type(on_cpu.value)) as on_device:
            call(*on_neuron(boundaries, values))
    assert str(on_device.value).split("\n")[0] == str(on_cpu.value).split("\n")[0]


def test_float64_takes_the_host_fallback():
    openneuron.clear_op_tracking()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = torch.searchsorted(
            *on_neuron(torch.arange(5.0).double(), torch.tensor([2.5]).double())
        )
    assert got.cpu().tolist() == [3]
    assert "aten::searchsorted.Tensor_out" in openneuron.get_fallback_ops()


def test_a_wrong_search_is_caught():
    def off_by_one(boundaries, values, **kwargs):
        found = torch.searchsorted(boundaries.cpu(), values.cpu(), **kwargs)
        return (found + 1).to(boundaries.device)

    boundaries, values = torch.arange(6.0), torch.tensor([1.5, 2, 7, -1])
    with kernel_replaced("searchsorted.Tensor", off_by_one):
        got = torch.searchsorted(*on_neuron(boundaries, values))
    assert not torch.equal(got.cpu(), torch.searchsorted(boundaries, values))
