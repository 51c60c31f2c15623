"""Regression tests for what PyTorch's test_torch.py found on neuron: in-place ops that wrote a
tensor sharing memory with itself or with what they read, where the CPU and CUDA refuse it
(copy_, bernoulli_, index_add_, scatter_, index_put_, put_, masked_fill_, masked_scatter_,
index_fill_, the shifts); copy_ from a source that does not broadcast to the destination;
is_set_to, which compared host copies; and index_copy_ between a 0-dim and a one-element
tensor. Each error case is run on the CPU first, so the expected error or warning is the CPU's
own."""

import re
import warnings

import pytest
import torch

import openneuron  # noqa: F401  (registers the device)

DEV = "neuron"
MASK = [True, False, True, True, False, False]


def _expanded(device):
    """Six elements that all live in one memory location."""
    return torch.rand(1, device=device).expand(6)


def _index(device):
    return torch.tensor([2, 1, 0], device=device)


def _mask(device):
    return torch.tensor(MASK, device=device)


def _copy_into_expanded(d):
    torch.randn(1, device=d).expand(3, 3).copy_(torch.randn(3, 3, device=d))


def _copy_partly_overlapping(d):
    x = torch.randn(18, dtype=torch.double, device=d)
    x[0:9].copy_(x[1:10])


def _index_add_source_is_self(d):
    y = torch.rand(6, device=d)
    y.index_add_(0, _index(d), y[:3])


def _index_add_into_its_index(d):
    i = _index(d)
    i.index_add_(0, i, i.clone())


def _scatter_source_is_self(d):
    s = torch.rand(3, device=d)
    s.scatter_(0, _index(d), s)


def _scatter_into_its_index(d):
    i = _index(d)
    i.scatter_(0, i, i.clone())


def _index_put_value_in_self(d):
    y = torch.rand(6, device=d)
    y.index_put_((_index(d),), y[0])


def _index_put_into_its_index(d):
    i = _index(d)
    i.index_put_((i,), i.clone())


def _put_source_in_self(d):
    y = torch.rand(6, device=d)
    y.put_(_index(d)[0], y[0])


def _put_into_its_index(d):
    i = _index(d)
    i.put_(i, i.clone())


def _masked_fill_mask_overlaps(d):
    m = _mask(d)
    m[1:].masked_fill_(m[:-1], False)


def _index_fill_into_its_index(d):
    i = _index(d)
    i.index_fill_(0, i, 0)


def _left_shift_partly_overlapping(d):
    x = torch.rand(3, device=d)
    x[:-1] <<= x[1:]


def _right_shift_partly_overlapping(d):
    x = torch.rand(3, device=d)
    x[:-1] >>= x[1:]


REFUSED = {
    "copy_ into expanded": _copy_into_expanded,
    "copy_ partly overlapping": _copy_partly_overlapping,
    "bernoulli_ expanded": lambda d: _expanded(d).bernoulli_(),
    "bernoulli_(p) expanded": lambda d: _expanded(d).bernoulli_(p=0.1),
    "bernoulli_(tensor) expanded": lambda d: _expanded(d).bernoulli_(torch.rand(6, device=d)),
    "index_add_ expanded": lambda d: _expanded(d).index_add_(0, _index(d), torch.rand(3, device=d)),
    "index_add_ source is self": _index_add_source_is_self,
    "index_add_ into its index": _index_add_into_its_index,
    "scatter_ expanded": lambda d: _expanded(d).scatter_(0, _index(d), torch.rand(3, device=d)),
    "scatter_ source is self": _scatter_source_is_self,
    "scatter_ into its index": _scatter_into_its_index,
    "index_put_ value in self": _index_put_value_in_self,
    "index_put_ into its index": _index_put_into_its_index,
    "put_ expanded": lambda d: _expanded(d).put_(_index(d), torch.rand(3, device=d)),
    "put_ source in self": _put_source_in_self,
    "put_ into its index": _put_into_its_index,
    "masked_fill_ mask overlaps": _masked_fill_mask_overlaps,
    "masked_scatter_ expanded": lambda d: _expanded(d).masked_scatter_(
        _mask(d), torch.rand(3, device=d)
    ),
    "index_fill_ into its index": _index_fill_into_its_index,
    "<<= partly overlapping": _left_shift_partly_overlapping,
    ">>= partly overlapping": _right_shift_partly_overlapping,
}


@pytest.mark.parametrize("case", REFUSED)
def test_refused_as_on_cpu(case):
    """The CPU refuses the write with "unsupported operation: ..."; neuron gives that error."""
    fn = REFUSED[case]
    with pytest.raises(RuntimeError, match="unsupported operation") as cpu_error:
        fn("cpu")
    with pytest.raises(RuntimeError, match=re.escape(str(cpu_error.value).splitlines()[0])):
        fn(DEV)


WARNED = {
    "index_put_": lambda d: _expanded(d).index_put_((_index(d),), torch.rand(3, device=d)),
    "index_fill_": lambda d: _expanded(d).index_fill_(0, _index(d), 1.0),
}


@pytest.mark.parametrize("op", WARNED)
def test_expanded_self_warns_as_on_cpu(op):
    """The CPU writes an expanded self with a deprecation warning naming the op; so does neuron."""
    expected = f"Use of {op} on expanded tensors is deprecated"
    for device in ("cpu", DEV):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            WARNED[op](device)
        assert any(expected in str(w.message) for w in caught), (device, caught)


@pytest.mark.parametrize("target_shape", [(), (1,)])
@pytest.mark.parametrize("index_shape", [(), (1,)])
@pytest.mark.parametrize("source_shape", [(), (1,)])
def test_index_copy_between_scalar_and_one_element(target_shape, index_shape, source_shape):
    """A 0-dim tensor and a one-element 1-d tensor are interchangeable in index_copy_, as on
    the CPU."""
    target = torch.zeros(target_shape, device=DEV)
    index = torch.zeros(index_shape, dtype=torch.long, device=DEV)
    target.index_copy_(0, index, torch.full(source_shape, 7.0, device=DEV))
    assert target.item() == 7.0


@pytest.mark.parametrize("source_shape", [(5,), (1, 3), (2, 3)])
def test_copy_refuses_a_source_that_does_not_broadcast(source_shape):
    """copy_ broadcasts the source to the destination's shape or refuses, with the CPU's text."""

    def copy(device):
        torch.zeros(3, device=device).copy_(torch.ones(source_shape, device=device))

    with pytest.raises(RuntimeError) as cpu_error:
        copy("cpu")
    with pytest.raises(RuntimeError, match=re.escape(str(cpu_error.value))):
        copy(DEV)


def test_is_set_to_sees_one_storage():
    """A tensor set_ to another's memory is set to it (both ways); a same-shaped tensor of its
    own memory, or a view of another shape, is not."""
    base = torch.empty(3, 4, device=DEV)
    alias = torch.tensor([], device=DEV).set_(base)
    assert base.is_set_to(alias) and alias.is_set_to(base)
    assert not base.is_set_to(torch.empty(3, 4, device=DEV))
    assert not base.is_set_to(base.view(4, 3))


@pytest.mark.parametrize("op", [torch.add, torch.eq, torch.exp])
def test_resized_out_takes_the_inputs_layout(op):
    """An empty out= that an elementwise op resizes is laid out like a new result, as the
    CPU's TensorIterator does: a permuted input gives a permuted out=."""
    strides = []
    for device in ("cpu", DEV):
        x = torch.randn(2, 3, 4, device=device).permute(0, 2, 1)
        args = (x,) if op is torch.exp else (x, x)
        out = torch.empty(0, device=device, dtype=op(*args).dtype)
        strides.append(op(*args, out=out).stride())
    assert strides[0] == strides[1] == (12, 1, 4)
