"""index_fill_, take, put_, masked_scatter_, equal and index_select of a scalar on neuron:
the CPU's values, gradients and exception types, with no op left to the host fallback."""

import pytest
import torch

import openneuron
from tests.device_dtypes import NATIVE_DTYPES
from tests.kernel_mutants import kernel_replaced

DTYPES = NATIVE_DTYPES


def sample(shape, dtype, seed=0):
    generator = torch.Generator().manual_seed(seed)
    return torch.randint(-9, 10, shape, generator=generator).to(dtype)


def both(fn, *tensors):
    """fn on CPU copies and on neuron copies (strictly native), the neuron result moved back."""
    cpu = fn(*[t.clone() for t in tensors])
    openneuron.clear_op_tracking()
    with openneuron.strict():
        got = fn(*[t.to("neuron") for t in tensors])
    assert openneuron.get_fallback_ops() == {}
    return cpu, got


def assert_same(cpu, got):
    if isinstance(cpu, torch.Tensor):
        assert got.device.type == "neuron" and got.dtype == cpu.dtype
        assert torch.equal(got.cpu(), cpu), (got.cpu(), cpu)
    else:
        assert got == cpu


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_index_fill_take_put_and_masked_scatter_match_the_cpu(dtype):
    x = sample((4, 5), dtype)
    source = sample((4, 6), dtype, seed=1)
    rows = torch.tensor([2, -1, 0])
    flat = torch.tensor([[0, 19], [-3, 7]])
    mask = sample((4, 5), torch.int64, seed=2) > 0
    cases = [
        lambda x, i: x.index_fill_(1, i, 3),
        lambda x, i: x.index_fill(0, i, torch.tensor(1)),
        lambda x, i: x[1, 1].clone().index_fill_(0, torch.tensor(0, device=x.device), 0),
        lambda x, i: x.take(flat.to(x.device)),
        lambda x, i: torch.take(x.t(), flat.to(x.device)),
        lambda x, i: x.put_(flat.to(x.device), x[:2, :2].clone() + x[0, 0]),
        lambda x, i: torch.index_select(x[1, 2], 0, torch.tensor([0], device=x.device)),
        lambda x, i: torch.equal(x, x.clone()),
        lambda x, i: torch.equal(x, x.t().contiguous().t()),
        lambda x, i: torch.equal(x, x[:3]),
    ]
    for case in cases:
        assert_same(*both(case, x, rows))
    if dtype != torch.bool:  # the CPU refuses bool's accumulate (addition)
        assert_same(*both(lambda x, i: x.put_(i, x[0, :3].clone(), accumulate=True), x, rows))
    got = both(lambda x, m, s: x.masked_scatter_(m, s), x, mask, source)
    assert_same(*got)
    got = both(lambda x, m, s: x.masked_scatter(m[0], s), x, mask, source)
    assert_same(*got)


@pytest.mark.parametrize("dtype", DTYPES[1:], ids=str)
def test_index_reduce_narrow_copy_channel_shuffle_and_int32_gather_match_the_cpu(dtype):
    x = sample((4, 6, 2), dtype)
    source = sample((4, 5, 2), dtype, seed=4)
    index = torch.tensor([3, 0, 3, 5, 1])
    half = torch.tensor([[1, 0], [2, 2]], dtype=torch.int32)
    cases = [
        lambda x, s, i, reduce=reduce, include_self=include_self: x.index_reduce(
            1, i, s, reduce, include_self=include_self
        )
        for reduce in ("prod", "mean", "amax", "amin")
        for include_self in (True, False)
    ]
    cases += [
        lambda x, s, i: x.index_reduce_(1, i, s, "amax"),
        lambda x, s, i: torch.index_reduce(x, 1, i, s, "mean", out=torch.empty_like(x)),
        lambda x, s, i: torch.narrow_copy(x, 1, 2, 3),
        lambda x, s, i: torch.narrow_copy(
            x, -1, 1, 1, out=torch.empty(0, dtype=x.dtype, device=x.device)
        ),
        lambda x, s, i: torch.nn.functional.channel_shuffle(x, 2),
        lambda x, s, i: torch.nn.functional.channel_shuffle(x.unsqueeze(-1), 3),
        lambda x, s, i: x[0].gather(0, half.to(x.device)),
        lambda x, s, i: x[0].scatter(0, half.to(x.device), x[1, :2, :]),
        lambda x, s, i: x[0].scatter(0, i[:2, None].expand(2, 2), x[1], reduce="add"),
        lambda x, s, i: x[0].scatter_(0, i[:2, None].expand(2, 2), 3, reduce="multiply"),
        lambda x, s, i: x[0, 0, 0].index_add(0, i[:1] * 0, s[0, 0, 0], alpha=2),
    ]
    for case in cases:
        cpu, got = both(case, x, source, index)
        if dtype in (torch.float16, torch.bfloat16):  # products and means round differently
            torch.testing.assert_close(got.cpu(), cpu)
        else:
            assert_same(cpu, got)


def test_equal_compares_values_after_promotion_and_nan_is_unequal():
    a = torch.tensor([1.0, float("nan"), 3.0])
    for other in [a.half(), a.clone(), torch.tensor([1, 2, 3]), torch.tensor([1.0, 3.0])]:
        assert_same(*both(torch.equal, a[[0, 2]] if other.numel() == 3 else a, other))
    assert_same(*both(torch.equal, a, a))


def test_the_gradients_of_masked_scatter_take_and_index_fill_match_the_cpu():
    torch.manual_seed(3)
    x = torch.randn(3, 4)
    source = torch.randn(12)
    mask = torch.rand(3, 4) > 0.4
    index = torch.tensor([[0, 11], [5, -2]])

    def run(device):
        xs = x.to(device).detach().requires_grad_()
        ss = source.to(device).detach().requires_grad_()
        y = xs.masked_scatter(mask.to(device), ss) * 2
        y = y.index_fill(1, torch.tensor([1], device=device), 0.5)
        loss = (y.take(index.to(device)) ** 2).sum() + y.sum()
        loss.backward()
        return loss.detach().cpu(), xs.grad.cpu(), ss.grad.cpu()

    want = run("cpu")
    openneuron.clear_op_tracking()
    got = run("neuron")
    assert openneuron.get_fallback_ops() == {}
    for g, w in zip(got, want):
        torch.testing.assert_close(g, w)


def raised(fn, *tensors):
    try:
        fn(*tensors)
    except Exception as error:  # noqa: BLE001 - the exception's type is what is compared
        return type(error), str(error).split("\n")[0]
    return None


@pytest.mark.parametrize(
    "fn",
    [
        lambda x: x.index_fill_(1, torch.tensor([5], device=x.device), 1.0),
        lambda x: x.index_fill_(1, torch.tensor([1], dtype=torch.int32, device=x.device), 1.0),
        lambda x: x.index_fill_(1, torch.tensor([[1]], device=x.device), 1.0),
        lambda x: x.index_fill_(1, torch.tensor([1], device=x.device), torch.ones(2)),
        lambda x: x.index_fill_(1, torch.tensor([1], device=x.device), 1j),
        lambda x: x.take(torch.tensor([20], device=x.device)),
        lambda x: x.take(torch.tensor([-21], device=x.device)),
        lambda x: x.take(torch.tensor([1], dtype=torch.int32, device=x.device)),
        lambda x: x[:0].take(torch.tensor([0], device=x.device)),
        lambda x: x.put_(torch.tensor([20], device=x.device), x[0, :1].clone()),
        lambda x: x.put_(torch.tensor([1, 2], device=x.device), x[0, :1].clone()),
        lambda x: x.put_(torch.tensor([1], device=x.device), x[0, :1].double()),
        lambda x: x.masked_scatter_(x[0] > 0, x[0, :1].clone()),
        lambda x: x.masked_scatter_(x[0] > -100, x[0].double()),
        lambda x: x.masked_scatter_((x[0] > 0).byte(), x[0].clone()),
        lambda x: torch.index_select(x[0, 0], 0, torch.tensor([0, 0], device=x.device)),
        lambda x: torch.index_select(x[0, 0], 0, torch.tensor([1], device=x.device)),
    ],
)
def test_bad_arguments_raise_the_cpus_exception_at_the_call(fn):
    x = torch.randn(4, 5)
    want = raised(fn, x)
    assert want is not None
    got = raised(fn, x.to("neuron"))
    assert got is not None and got[0] is want[0], (got, want)
    torch.neuron.synchronize()  # nothing was queued that fails later


def test_a_wrong_index_fill_is_caught():
    """The differential test above fails when index_fill_ writes one slice too far."""

    def one_slice_too_far(self, dim, index, value):
        shifted = (index.cpu() + 1).clamp(max=self.size(dim) - 1)
        host = self.cpu()
        torch.Tensor.index_fill_(host, dim, shifted, value)
        return self.copy_(host.to(self.device))

    with kernel_replaced("index_fill_.int_Scalar", one_slice_too_far):
        with pytest.raises(AssertionError):
            test_index_fill_take_put_and_masked_scatter_match_the_cpu(torch.float32)
    test_index_fill_take_put_and_masked_scatter_match_the_cpu(torch.float32)


@pytest.mark.parametrize("dims", [1, 2, 3])
def test_max_unpool_and_its_gradient_match_the_cpu(dims):
    torch.manual_seed(dims)
    pool = getattr(torch.nn.functional, f"max_pool{dims}d")
    unpool = getattr(torch.nn.functional, f"max_unpool{dims}d")
    x = torch.randn(2, 3, *[6] * dims)
    pooled, indices = pool(x, 2, return_indices=True)

    def run(device):
        values = pooled.to(device).detach().requires_grad_()
        out = unpool(values, indices.to(device), 2, output_size=x.shape[-dims:])
        (out * torch.arange(out.numel(), device=device).view_as(out)).sum().backward()
        return out.detach().cpu(), values.grad.cpu()

    want = run("cpu")
    openneuron.clear_op_tracking()
    got = run("neuron")
    assert openneuron.get_fallback_ops() == {}
    for g, w in zip(got, want):
        assert torch.equal(g, w)


def test_the_gradient_of_index_reduce_matches_the_cpu():
    torch.manual_seed(5)
    x = torch.randn(3, 5)
    source = torch.randn(3, 4)
    index = torch.tensor([4, 0, 4, 2])

    def run(device, reduce):
        xs = x.to(device).detach().requires_grad_()
        ss = source.to(device).detach().requires_grad_()
        out = xs.index_reduce(1, index.to(device), ss, reduce)
        (out * out).sum().backward()
        return out.detach().cpu(), xs.grad.cpu(), ss.grad.cpu()

    for reduce in ("prod", "mean", "amax", "amin"):
        want = run("cpu", reduce)
        openneuron.clear_op_tracking()
        got = run("neuron", reduce)
        assert openneuron.get_fallback_ops() == {}, reduce
        for g, w in zip(got, want):
            torch.testing.assert_close(g, w)
