"""Bool tensors whose bytes are not 0 or 1 (a uint8 tensor viewed as bool): every nonzero byte
is true, as on the CPU, in reductions, casts, comparisons, logical ops and masks."""

import pytest
import torch

BYTES = [0, 2, 255, 1, 0, 4, 128, 1]
OTHER = [1, 0, 1, 1, 0, 0, 3, 1]


def bool_view(values, device):
    return torch.tensor(values, dtype=torch.uint8, device=device).view(torch.bool)


CASES = {
    "sum": lambda b, o, x: b.sum(),
    "sum along a dim": lambda b, o, x: b.view(2, 4).sum(1),
    "to int": lambda b, o, x: b.to(torch.int32),
    "to float": lambda b, o, x: b.to(torch.float32),
    "to half": lambda b, o, x: b.to(torch.float16),
    "to uint8": lambda b, o, x: b.to(torch.uint8),
    "strided to int64": lambda b, o, x: b[::2].to(torch.int64),
    "logical and": lambda b, o, x: torch.logical_and(b, o),
    "logical xor": lambda b, o, x: torch.logical_xor(b, o),
    "logical not": lambda b, o, x: torch.logical_not(b),
    "bitwise xor": lambda b, o, x: b ^ o,
    "equal to another bool": lambda b, o, x: b == o,
    "equal to True": lambda b, o, x: b == True,  # noqa: E712 - the comparison is the test
    "not equal": lambda b, o, x: b != o,
    "times a float": lambda b, o, x: b * x,
    "plus an int": lambda b, o, x: b + 1,
    "cumsum": lambda b, o, x: b.cumsum(0),
    "where": lambda b, o, x: torch.where(b, x, -x),
    "masked_fill mask": lambda b, o, x: x.masked_fill(b, -1.0),
    "masked_select mask": lambda b, o, x: x[b],
    "nonzero": lambda b, o, x: b.nonzero(),
    "any": lambda b, o, x: b.any(),
    "all": lambda b, o, x: b.all(),
    "all along a dim": lambda b, o, x: b.view(2, 4).all(1),
}


@pytest.mark.parametrize("name", list(CASES), ids=str)
def test_nonzero_bytes_read_as_true_as_on_the_cpu(name):
    fn = CASES[name]
    x = torch.arange(1.0, 9.0)
    want = fn(bool_view(BYTES, "cpu"), bool_view(OTHER, "cpu"), x)
    got = fn(bool_view(BYTES, "neuron"), bool_view(OTHER, "neuron"), x.to("neuron"))
    assert got.dtype == want.dtype
    assert torch.equal(got.cpu(), want), (got.cpu(), want)


def as_bytes(t):
    """A tensor's stored values, with a bool tensor's bytes exposed (2 and 1 both read True)."""
    t = t.cpu()
    return t.view(torch.uint8) if t.dtype == torch.bool else t


ORDERING_CASES = {
    "sort": lambda b: b.sort(stable=True),
    "sort descending": lambda b: b.sort(descending=True, stable=True),
    "sort along rows": lambda b: b.view(2, 4).sort(dim=1, stable=True),
    "sort a strided view": lambda b: b.view(4, 2).mT.sort(dim=1, stable=True),
    "argsort": lambda b: (b.argsort(stable=True),),
    "msort": lambda b: (b.view(4, 2).msort(),),
    "softmax": lambda b: (torch.softmax(b.view(2, 4), 1, dtype=torch.float32),),
    "softmax over the outer dim": lambda b: (torch.softmax(b.view(4, 2), 0, dtype=torch.float32),),
}


@pytest.mark.parametrize("name", list(ORDERING_CASES), ids=str)
def test_nonzero_bytes_sort_and_normalise_as_on_the_cpu(name):
    # The CPU orders every nonzero byte as True (ties keep their order) and writes sorted
    # values as 0 or 1; a kernel keyed on the raw byte put 255 after 2 and copied the bytes.
    fn = ORDERING_CASES[name]
    want = fn(bool_view(BYTES, "cpu"))
    got = fn(bool_view(BYTES, "neuron"))
    for g, w in zip(got, want, strict=True):
        assert g.dtype == w.dtype
        torch.testing.assert_close(as_bytes(g), as_bytes(w), rtol=2e-7, atol=0)
