"""Out-of-range indices raise at the indexing call, with the CPU's error type and a message naming
the index and the size, and leave nothing queued that would raise later in unrelated code."""

import pytest
import torch

from openneuron import _C


def _x(device):
    return torch.arange(12.0, device=device).reshape(3, 4)


def _i(values, device):
    return torch.tensor(values, device=device)


# name -> (call(x, device), the index and size the message must name)
OUT_OF_RANGE_CALLS = {
    "index_select": (lambda x, d: torch.index_select(x, 0, _i([0, 5], d)), "index 5", "size 3"),
    "index_select_negative": (
        lambda x, d: torch.index_select(x, 0, _i([-1], d)),
        "index -1",
        "size 3",
    ),
    "index_select_int32": (
        lambda x, d: torch.index_select(x, 1, _i([4], d).int()),
        "index 4",
        "size 4",
    ),
    "embedding": (lambda x, d: torch.nn.functional.embedding(_i([3], d), x), "index 3", "size 3"),
    "getitem": (lambda x, d: x[_i([0, 5], d)], "index 5", "size 3"),
    "getitem_negative": (lambda x, d: x[_i([-4], d)], "index -4", "size 3"),
    "getitem_second_dim": (lambda x, d: x[_i([0, 1], d), _i([1, 4], d)], "index 4", "size 4"),
    "setitem": (lambda x, d: x.__setitem__(_i([5], d), 0.0), "index 5", "size 3"),
    "index_put_accumulate": (
        lambda x, d: x.index_put_((_i([7], d),), torch.tensor(1.0, device=d), accumulate=True),
        "index 7",
        "size 3",
    ),
    "gather": (lambda x, d: torch.gather(x, 1, _i([[0, 4]], d)), "index 4", "size 4"),
    "gather_negative": (lambda x, d: torch.gather(x, 1, _i([[-1]], d)), "index -1", "size 4"),
    "scatter": (lambda x, d: x.scatter(1, _i([[0, 4]], d), 1.0), "index 4", "size 4"),
    "scatter_add_": (
        lambda x, d: x.scatter_add_(0, _i([[3]], d), torch.ones(1, 1, device=d)),
        "index 3",
        "size 3",
    ),
    "scatter_reduce": (
        lambda x, d: x.scatter_reduce(0, _i([[3]], d), torch.ones(1, 1, device=d), "amax"),
        "index 3",
        "size 3",
    ),
    "index_add_": (
        lambda x, d: x.index_add_(0, _i([3], d), torch.ones(1, 4, device=d)),
        "index 3",
        "size 3",
    ),
    "index_add_negative": (
        lambda x, d: x.index_add_(0, _i([-1], d), torch.ones(1, 4, device=d)),
        "index -1",
        "size 3",
    ),
    "nll_loss": (
        lambda x, d: torch.nn.functional.nll_loss(x, _i([0, 1, 4], d)),
        "Target 4",
        "out of bounds",
    ),
    "cross_entropy": (
        lambda x, d: torch.nn.functional.cross_entropy(x, _i([0, -1, 1], d)),
        "Target -1",
        "out of bounds",
    ),
}


def _cpu_error_type(call):
    try:
        call(_x("cpu"), "cpu")
    except Exception as error:  # the CPU's error type is the expectation
        return type(error)
    raise AssertionError("the CPU accepted the call")


@pytest.mark.parametrize("case", OUT_OF_RANGE_CALLS.values(), ids=OUT_OF_RANGE_CALLS.keys())
def test_out_of_range_index_raises_at_the_call(case):
    call, names_index, names_size = case
    expected = _cpu_error_type(call)
    x = _x("neuron")
    with pytest.raises(expected) as raised:
        call(x, "neuron")
    assert names_index in str(raised.value) and names_size in str(raised.value)
    # Nothing is left queued: a synchronize and an unrelated op afterwards do not raise.
    torch.neuron.synchronize()
    y = torch.ones(3, device="neuron") * 2
    assert y.cpu().tolist() == [2.0, 2.0, 2.0]
    assert x.cpu().equal(_x("cpu")), "a rejected call must not change its input"


def test_index_from_queued_work_is_checked_after_that_work():
    a = torch.randn(256, 256, device="neuron")
    x = _x("neuron")
    a @ a  # queued work ahead of the index
    index = torch.zeros(2, dtype=torch.long, device="neuron") + 5  # written by queued work
    with pytest.raises(IndexError, match="index 5 is out of bounds for dimension 0 with size 3"):
        x[index]
    in_range = torch.zeros(2, dtype=torch.long, device="neuron") + 2
    assert x[in_range].cpu().equal(_x("cpu")[[2, 2]])


def test_in_range_values_pass_the_check():
    cpu = _x("cpu")
    x = _x("neuron")
    assert x[_i([-3, 2], "neuron")].cpu().equal(cpu[[-3, 2]])
    assert (
        torch.gather(x, 1, _i([[3, 0]], "neuron")).cpu().equal(cpu.gather(1, _i([[3, 0]], "cpu")))
    )
    loss = torch.nn.functional.nll_loss(x, _i([0, -100, 3], "neuron"))  # -100: ignore_index
    expected = torch.nn.functional.nll_loss(cpu, _i([0, -100, 3], "cpu"))
    torch.testing.assert_close(loss.cpu(), expected, rtol=0, atol=0)


def test_deferred_checks_raise_at_the_next_synchronize():
    previous = _C._set_deferred_index_checks(True)
    try:
        x = _x("neuron")
        x[_i([5], "neuron")]  # queued; the kernel refuses the index
        with pytest.raises(torch.AcceleratorError, match="index 5 is out of bounds"):
            torch.neuron.synchronize()
    finally:
        _C._set_deferred_index_checks(previous)
    assert (torch.ones(2, device="neuron") + 1).cpu().tolist() == [2.0, 2.0]
