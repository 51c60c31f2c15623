"""Order statistics and running extremes on the device: kthvalue, median, nanmedian, mode,
cummax/cummin, unstable sort and top-k. Among equal elements PyTorch's CPU reports an index its
algorithm happens to leave (a quickselect, std::nth_element, std::sort, a partial sort); users
compare indices with it, so every test here holds indices equal to the CPU's on inputs full of
ties, values bit for bit, gradients too, with no op on the host fallback.
"""

import pytest
import torch

import openneuron
from tests.device_dtypes import INTEGER_DTYPES, NATIVE_DTYPES
from tests.kernel_mutants import kernel_replaced

DEVICE = "neuron"
SELECTION_DTYPES = [*INTEGER_DTYPES, torch.float16, torch.bfloat16, torch.float32]


def tied(shape, dtype, seed, with_nan=False):
    """Values from a handful of levels, so almost every element has equals."""
    torch.manual_seed(seed)
    if dtype == torch.bool:
        return torch.randint(0, 2, shape).bool()
    x = torch.randint(0, 5, shape).to(torch.float32) - 2
    if with_nan and dtype.is_floating_point:
        x.view(-1)[:: max(3, x.numel() // 4)] = float("nan")
    if dtype == torch.uint8:
        x = x + 2
    return x.to(dtype)


def assert_same(dev, cpu, what):
    """Each device result equals the CPU's: dtype, shape, and every element (NaN where NaN)."""
    for got, want in zip(dev, cpu, strict=True):
        torch.testing.assert_close(got.cpu(), want, rtol=0, atol=0, equal_nan=True, msg=what)


@pytest.mark.parametrize("dtype", SELECTION_DTYPES, ids=str)
def test_kthvalue_median_and_mode_pick_the_cpus_index(dtype):
    with_nan = dtype.is_floating_point
    cases = [((7, 40), 1), ((40, 7), 0), ((3, 5, 33), -1), ((129,), 0)]
    for k_seed, (shape, dim) in enumerate(cases):
        x = tied(shape, dtype, k_seed, with_nan)
        d = x.to(DEVICE)
        length = x.shape[dim]
        openneuron.clear_op_tracking()
        for k in (1, length // 3 + 1, length):
            for keepdim in (False, True):
                assert_same(
                    torch.kthvalue(d, k, dim, keepdim), torch.kthvalue(x, k, dim, keepdim), "kth"
                )
        for keepdim in (False, True):
            assert_same(torch.median(d, dim, keepdim), torch.median(x, dim, keepdim), "median")
            assert_same(
                torch.nanmedian(d, dim, keepdim), torch.nanmedian(x, dim, keepdim), "nanmedian"
            )
            assert_same(torch.mode(d, dim, keepdim), torch.mode(x, dim, keepdim), "mode")
        assert_same([torch.median(d)], [torch.median(x)], "median of all")
        assert_same([torch.nanmedian(d)], [torch.nanmedian(x)], "nanmedian of all")
        assert openneuron.get_fallback_ops() == {}


def test_mode_of_bool_and_all_nan_lines():
    x = tied((6, 50), torch.bool, 4)
    assert_same(torch.mode(x.to(DEVICE), 1), torch.mode(x, 1), "bool mode")
    nan_rows = torch.full((3, 9), float("nan"))
    nan_rows[1, 4] = 2.0
    for op in (torch.nanmedian, torch.median, torch.mode):
        assert_same(op(nan_rows.to(DEVICE), 1), op(nan_rows, 1), op.__name__)


def test_selection_edges_and_out_forms_match_cpu():
    x = tied((4, 6), torch.float32, 5)
    d = x.to(DEVICE)
    scalar = torch.tensor(2.5)
    for op in (
        lambda t: torch.kthvalue(t, 1),
        lambda t: torch.median(t, 0),
        lambda t: torch.nanmedian(t, 0),
        torch.mode,
        lambda t: [torch.median(t)],
    ):
        assert_same(op(scalar.to(DEVICE)), op(scalar), "0-dim")
    empty = torch.empty(3, 0)
    assert_same(torch.kthvalue(empty.to(DEVICE), 1, 0), torch.kthvalue(empty, 1, 0), "empty")
    values = torch.empty(0, device=DEVICE)
    indices = torch.empty(0, dtype=torch.long, device=DEVICE)
    torch.kthvalue(d[:, ::2], 2, 1, out=(values, indices))
    assert_same((values, indices), torch.kthvalue(x[:, ::2], 2, 1), "out=")
    torch.median(d.t(), 0, keepdim=True, out=(values, indices))
    assert_same((values, indices), torch.median(x.t(), 0, keepdim=True), "median out=")
    with pytest.raises(IndexError, match=r"kthvalue\(\): Expected reduction dim 1"):
        torch.kthvalue(empty.to(DEVICE), 1, 1)
    with pytest.raises(RuntimeError, match="selected number k out of range for dimension 1"):
        torch.kthvalue(d, 7, 1)
    with pytest.raises(RuntimeError, match="output values must be of same type as input"):
        torch.kthvalue(d, 1, 1, out=(values.double(), indices))
    with pytest.raises(NotImplementedError, match="not implemented for 'Bool'"):
        torch.median(torch.zeros(3, dtype=torch.bool, device=DEVICE), 0)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16], ids=str)
def test_selection_gradients_match_cpu(dtype):
    x = tied((5, 24), dtype, 6)
    dev = x.to(DEVICE).requires_grad_()
    cpu = x.clone().requires_grad_()
    for op in (
        lambda t: torch.kthvalue(t, 7, 1).values,
        lambda t: torch.median(t, 0).values,
        lambda t: torch.nanmedian(t, 1, keepdim=True).values,
        lambda t: torch.mode(t, 1).values,
        lambda t: torch.cummax(t, 1).values,
        lambda t: torch.cummin(t, 0).values,
        lambda t: torch.median(t),
    ):
        dev.grad = cpu.grad = None
        openneuron.clear_op_tracking()
        (op(dev) * 3).sum().backward()
        (op(cpu) * 3).sum().backward()
        assert openneuron.get_fallback_ops() == {}
        assert torch.equal(dev.grad.cpu(), cpu.grad)


@pytest.mark.parametrize("dtype", NATIVE_DTYPES, ids=str)
def test_cummax_and_cummin_match_cpu(dtype):
    x = tied((6, 31), dtype, 7, with_nan=dtype.is_floating_point)
    d = x.to(DEVICE)
    openneuron.clear_op_tracking()
    for dim in (0, 1, -1):
        assert_same(torch.cummax(d, dim), torch.cummax(x, dim), "cummax")
        assert_same(torch.cummin(d, dim), torch.cummin(x, dim), "cummin")
    assert_same(torch.cummax(d.t(), 1), torch.cummax(x.t(), 1), "transposed")
    assert openneuron.get_fallback_ops() == {}


@pytest.mark.parametrize("dtype", NATIVE_DTYPES, ids=str)
def test_unstable_sort_and_topk_leave_ties_where_the_cpu_does(dtype):
    x = tied((3, 700), dtype, 8, with_nan=dtype.is_floating_point)
    d = x.to(DEVICE)
    openneuron.clear_op_tracking()
    for descending in (False, True):
        dev = torch.sort(d, 1, descending=descending)
        cpu = torch.sort(x, 1, descending=descending)
        assert_same([dev.values], [cpu.values], "sorted values")
        if dtype not in (torch.int32, torch.int64, torch.float32):
            # The CPU sorts these three with a vectorized sort whose ties are its own.
            assert_same([dev.indices], [cpu.indices], "unstable sort indices")
        stable = torch.argsort(d, dim=1, descending=descending, stable=True)
        want = torch.argsort(x, dim=1, descending=descending, stable=True)
        assert_same([stable], [want], "stable")
    if dtype != torch.bool:
        for k in (3, 10, 11, 300):  # k * 64 <= 700 takes a partial sort, else a selection
            for largest in (True, False):
                for is_sorted in (True, False):
                    assert_same(
                        torch.topk(d, k, 1, largest, is_sorted),
                        torch.topk(x, k, 1, largest, is_sorted),
                        f"topk {k}",
                    )
    assert openneuron.get_fallback_ops() == {}


@pytest.mark.parametrize("dtype", [*INTEGER_DTYPES, torch.float16, torch.bfloat16, torch.float32])
def test_logspace_matches_cpu(dtype):
    openneuron.clear_op_tracking()
    cases = [(0, 3, 7, 10.0), (2.3, 5.7, 50, 2.0), (1.1, 0.6, 11, 3.5), (2, 2, 1, 10.0)]
    cases += [(0.5, 4, 2, 0.5)]
    if dtype != torch.uint8:  # the CPU refuses a negative start or end for uint8
        cases += [(-2.3, 5.7, 50, 2.0), (1.1, -1.6, 11, 3.5)]
    for start, end, steps, base in cases:
        dev = torch.logspace(start, end, steps, base, dtype=dtype, device=DEVICE)
        cpu = torch.logspace(start, end, steps, base, dtype=dtype)
        assert torch.equal(dev.cpu(), cpu), (start, end, steps, base)
    with pytest.raises(RuntimeError, match="without overflow"):
        torch.logspace(0, 1e6, 3, dtype=torch.float16, device=DEVICE)
    out = torch.empty(2, 3, dtype=dtype, device=DEVICE)
    torch.logspace(0, 2, 6, out=out)
    assert torch.equal(out.cpu(), torch.logspace(0, 2, 6, out=torch.empty(2, 3, dtype=dtype)))
    assert openneuron.get_fallback_ops() == {}


@pytest.mark.parametrize("dtype", [torch.uint16, torch.uint32, torch.uint64], ids=str)
def test_wide_unsigned_inputs_convert_on_the_device(dtype):
    top = {torch.uint16: 65535, torch.uint32: 2**32 - 1, torch.uint64: 2**64 - 1}[dtype]
    bits = torch.tensor([0, 1, 7, 1000, top], dtype=dtype)
    d = bits.to(DEVICE)
    openneuron.clear_op_tracking()
    results = {
        "to float": (d.float(), bits.float()),
        "to bfloat16": (d.bfloat16(), bits.bfloat16()),
        "to int64": (d.long(), bits.long()),
        "to bool": (d.bool(), bits.bool()),
        "from int8": (torch.tensor([-1, 5], dtype=torch.int8).to(DEVICE).to(dtype), None),
        "entr": (torch.special.entr(d), torch.special.entr(bits)),
        "i1e": (torch.special.i1e(d), torch.special.i1e(bits)),
        "xlog1py": (torch.special.xlog1py(d, d), torch.special.xlog1py(bits, bits)),
        "ndtr": (torch.special.ndtr(d), torch.special.ndtr(bits)),
    }
    assert openneuron.get_fallback_ops() == {}
    wrapped = torch.tensor([-1, 5], dtype=torch.int8).to(dtype)
    assert torch.equal(results.pop("from int8")[0].cpu(), wrapped)
    for name, (dev, cpu) in results.items():
        assert dev.dtype == cpu.dtype, name
        torch.testing.assert_close(dev.cpu(), cpu, equal_nan=True, rtol=1e-6, atol=0, msg=name)


def test_a_wrong_selection_kernel_is_caught():
    def first_of_ties(self, k, dim=-1, keepdim=False, *, values, indices):
        # The lowest index among equal k-th values: the right value, the CPU's index by luck.
        order = torch.sort(self, dim=dim, stable=True)
        picked = [t.narrow(dim, k - 1, 1) for t in order]
        if not keepdim:
            picked = [t.squeeze(dim) for t in picked]
        values.resize_(picked[0].shape).copy_(picked[0])
        indices.resize_(picked[1].shape).copy_(picked[1])
        return values, indices

    with kernel_replaced("kthvalue.values", first_of_ties), pytest.raises(AssertionError):
        test_kthvalue_median_and_mode_pick_the_cpus_index(torch.float32)


def test_a_wrong_unsigned_conversion_is_caught():
    def signed_entr(self):
        # Reads the bits as the signed type of the same width (2**64 - 1 becomes -1).
        signed = {torch.uint16: torch.int16, torch.uint32: torch.int32, torch.uint64: torch.int64}
        host = self.cpu()
        return torch.special.entr(host.view(signed.get(host.dtype, host.dtype))).to(DEVICE)

    with kernel_replaced("special_entr", signed_entr), pytest.raises(AssertionError):
        test_wide_unsigned_inputs_convert_on_the_device(torch.uint64)
