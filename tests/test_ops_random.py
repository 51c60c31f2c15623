"""Random-number ops on the device: determinism under a seeded neuron generator, independence
from the CPU generator, distribution statistics, shapes/dtypes, dropout forward/backward, and
that every case here runs natively (no host fallback).

Values cannot match the CPU bit for bit (each device has its own generator), so statistics are
checked against the distribution instead, with bounds of about 6 standard errors for N samples.
"""

import math

import pytest
import torch
from kernel_mutants import kernel_replaced

import openneuron

DEVICE = "neuron"
N = 200_000
FLOAT_DTYPES = [torch.float32, torch.bfloat16, torch.float16]
INT_DTYPES = [torch.int64, torch.int32, torch.int16, torch.int8, torch.uint8]
# Tolerance of dropout values against input * scale in fp32: one rounding to the dtype
# (half an ulp: 2^-24, 2^-9, 2^-12 relative; fp16 subnormals round to 2^-24 absolute).
DROPOUT_TOL = {torch.float32: (1e-6, 0.0), torch.bfloat16: (8e-3, 0.0), torch.float16: (1e-3, 6e-8)}


def gen(seed=1234):
    return torch.Generator(device=DEVICE).manual_seed(seed)


@pytest.fixture(autouse=True)
def assert_native():
    """Every test in this file must run entirely natively."""
    openneuron.clear_op_tracking()
    yield
    assert openneuron.get_fallback_ops() == {}


def se_bound(std):
    """About 6 standard errors of a mean of N samples."""
    return 6 * std / math.sqrt(N)


# ---- determinism ------------------------------------------------------------------------------

DRAWS = {
    "bernoulli_float": lambda g: torch.empty(1000, device=DEVICE).bernoulli_(0.3, generator=g),
    "bernoulli_tensor": lambda g: torch.empty(1000, device=DEVICE).bernoulli_(
        torch.full((1000,), 0.4, device=DEVICE), generator=g
    ),
    "bernoulli": lambda g: torch.bernoulli(torch.full((1000,), 0.4, device=DEVICE), generator=g),
    "bernoulli_p": lambda g: torch.bernoulli(
        torch.full((1000,), 0.0, device=DEVICE), 0.5, generator=g
    ),
    "randint": lambda g: torch.randint(-7, 9, (1000,), device=DEVICE, generator=g),
    "random_": lambda g: torch.empty(1000, device=DEVICE, dtype=torch.int32).random_(generator=g),
    "random_to": lambda g: torch.empty(1000, device=DEVICE).random_(10, generator=g),
    "randperm": lambda g: torch.randperm(500, device=DEVICE, generator=g),
    "exponential_": lambda g: torch.empty(1000, device=DEVICE).exponential_(2.0, generator=g),
    "normal_tensor_float": lambda g: torch.normal(
        torch.full((1000,), 0.0, device=DEVICE), 2.0, generator=g
    ),
    "normal_float_tensor": lambda g: torch.normal(
        1.0, torch.ones(1000, device=DEVICE), generator=g
    ),
    "normal_tensor_tensor": lambda g: torch.normal(
        torch.full((1000,), 0.0, device=DEVICE), torch.ones(1000, device=DEVICE), generator=g
    ),
    "multinomial": lambda g: torch.multinomial(torch.ones(4, 50, device=DEVICE), 20, generator=g),
}


@pytest.mark.parametrize("name", DRAWS)
def test_seeded_generator_reproduces_and_advances(name):
    draw = DRAWS[name]
    g = gen()
    first, second = draw(g).cpu(), draw(g).cpu()
    again = draw(gen()).cpu()
    torch.testing.assert_close(first, again, rtol=0, atol=0)
    assert not torch.equal(first, second), "the generator must advance between draws"


@pytest.mark.parametrize("name", DRAWS)
def test_independent_of_cpu_generator(name):
    torch.manual_seed(0)
    torch.neuron.manual_seed(5)
    a = DRAWS[name](None).cpu()
    torch.manual_seed(1)  # the CPU generator must not matter
    torch.neuron.manual_seed(5)
    b = DRAWS[name](None).cpu()
    torch.testing.assert_close(a, b, rtol=0, atol=0)


# ---- statistics, shapes, dtypes -------------------------------------------------------------


@pytest.mark.parametrize("dtype", FLOAT_DTYPES + INT_DTYPES + [torch.bool])
def test_bernoulli_float_statistics(dtype):
    out = torch.empty(N, device=DEVICE, dtype=dtype).bernoulli_(0.3, generator=gen())
    assert out.dtype == dtype
    values = out.cpu().float()
    assert set(values.unique().tolist()) <= {0.0, 1.0}
    assert abs(values.mean().item() - 0.3) < se_bound(math.sqrt(0.21))


def test_bernoulli_tensor_broadcast_and_noncontiguous():
    p = torch.tensor([0.0, 0.25, 1.0], device=DEVICE, dtype=torch.bfloat16)
    out = torch.empty(3, N // 4, device=DEVICE).t()  # [N/4, 3], not contiguous
    out.bernoulli_(p, generator=gen())
    values = out.cpu()
    assert values[:, 0].sum() == 0 and values[:, 2].min() == 1
    assert abs(values[:, 1].mean().item() - 0.25) < 6 * math.sqrt(0.1875 / (N // 4))


def test_bernoulli_functional_out_and_zero_size():
    probs = torch.rand(50, 40, device=DEVICE)
    out = torch.empty(0, device=DEVICE)
    torch.bernoulli(probs, generator=gen(), out=out)
    assert out.shape == probs.shape
    # out= draws the same values as the functional form from the same generator state.
    torch.testing.assert_close(out, torch.bernoulli(probs, generator=gen()), rtol=0, atol=0)
    assert torch.bernoulli(torch.empty(0, 3, device=DEVICE)).shape == (0, 3)
    assert torch.bernoulli(torch.rand(5, device=DEVICE, dtype=torch.float16)).dtype == torch.float16
    with pytest.raises(RuntimeError, match="p to be in"):
        torch.empty(3, device=DEVICE).bernoulli_(1.5)


@pytest.mark.parametrize("dtype", INT_DTYPES + FLOAT_DTYPES)
def test_randint_bounds_and_mean(dtype):
    low, high = (0, 100) if dtype == torch.uint8 else (-20, 80)
    out = torch.randint(low, high, (N,), device=DEVICE, dtype=dtype, generator=gen())
    values = out.cpu().double()
    assert out.dtype == dtype
    assert values.min() == low and values.max() == high - 1
    n = high - low
    assert abs(values.mean().item() - (low + high - 1) / 2) < se_bound(math.sqrt((n * n - 1) / 12))


@pytest.mark.parametrize(
    "dtype,upper",
    [
        (torch.int8, 127),
        (torch.uint8, 255),
        (torch.bool, 1),
        (torch.bfloat16, 256),
        (torch.float16, 2048),
    ],
)
def test_random_plain_covers_dtype_range(dtype, upper):
    values = torch.empty(N, device=DEVICE, dtype=dtype).random_(generator=gen()).cpu().double()
    assert values.min() == 0 and values.max() == upper


def test_random_from_without_to_and_full_int64_range():
    values = (
        torch.empty(N, device=DEVICE, dtype=torch.int16).random_(-3, None, generator=gen()).cpu()
    )
    assert values.min() == -3 and values.max() == 32767
    full = (
        torch.empty(N, device=DEVICE, dtype=torch.int64)
        .random_(-(2**63), None, generator=gen())
        .cpu()
    )
    assert (full < 0).any() and (full > 2**62).any()
    with pytest.raises(RuntimeError, match="from.*to"):
        torch.empty(3, device=DEVICE).random_(5, 5)


@pytest.mark.parametrize("dtype", [torch.int64, torch.int32, torch.float32])
def test_randperm_is_a_permutation(dtype):
    out = torch.randperm(1000, device=DEVICE, dtype=dtype, generator=gen())
    assert out.dtype == dtype and out.device.type == DEVICE
    assert torch.equal(out.cpu().sort().values, torch.arange(1000, dtype=dtype))
    assert torch.randperm(0, device=DEVICE).numel() == 0
    noncontiguous = torch.empty(2000, device=DEVICE, dtype=torch.int64)[::2]
    torch.randperm(1000, generator=gen(), out=noncontiguous)
    assert torch.equal(noncontiguous.cpu().sort().values, torch.arange(1000))


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_exponential_moments(dtype):
    values = (
        torch.empty(N, device=DEVICE, dtype=dtype).exponential_(4.0, generator=gen()).cpu().double()
    )
    assert values.min() >= 0
    assert abs(values.mean().item() - 0.25) < se_bound(0.25) + 2e-3
    assert abs(values.std().item() - 0.25) < 0.01


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_normal_tensor_moments(dtype):
    mean = torch.tensor([-5.0, 0.0, 10.0], device=DEVICE, dtype=dtype).expand(N // 4, 3)
    std = torch.tensor([1.0, 3.0, 0.5], device=DEVICE, dtype=dtype)
    out = torch.normal(mean, std.expand(N // 4, 3), generator=gen())
    assert out.shape == (N // 4, 3) and out.dtype == dtype
    values = out.cpu().double()
    torch.testing.assert_close(
        values.mean(0), torch.tensor([-5.0, 0.0, 10.0], dtype=torch.float64), atol=0.1, rtol=0
    )
    torch.testing.assert_close(
        values.std(0), torch.tensor([1.0, 3.0, 0.5], dtype=torch.float64), atol=0.05, rtol=0.02
    )
    only_mean = torch.normal(mean, 2.0, generator=gen()).cpu().double()
    assert abs(only_mean[:, 2].std().item() - 2.0) < 0.05
    only_std = torch.normal(3.0, std.expand(N // 4, 3), generator=gen()).cpu().double()
    assert abs(only_std.mean().item() - 3.0) < 0.05


def test_normal_out_variants_and_errors():
    mean = torch.full((10,), 0.0, device=DEVICE)
    std = torch.ones(10, device=DEVICE)
    for args in [(mean, 1.0), (0.0, std), (mean, std)]:
        out = torch.empty(0, device=DEVICE)
        torch.normal(*args, generator=gen(), out=out)
        assert out.shape == (10,)
        # out= draws the same values as the functional form from the same generator state.
        torch.testing.assert_close(out, torch.normal(*args, generator=gen()), rtol=0, atol=0)
    with pytest.raises(RuntimeError, match="std >= 0.0"):
        torch.normal(mean, -1.0)
    assert torch.normal(torch.empty(0, 2, device=DEVICE), 1.0).shape == (0, 2)


def test_multinomial_with_and_without_replacement():
    weights = torch.tensor([[1.0, 0.0, 3.0, 0.0], [0.0, 2.0, 2.0, 4.0]], device=DEVICE)
    draws = torch.multinomial(weights, 20000, replacement=True, generator=gen()).cpu()
    assert draws.shape == (2, 20000) and draws.dtype == torch.int64
    assert abs((draws[0] == 2).float().mean().item() - 0.75) < 0.02
    assert not ((draws[1] == 0).any() or (draws[0] == 1).any())
    picks = torch.multinomial(weights[1], 3, generator=gen()).cpu()
    assert sorted(picks.tolist()) == [1, 2, 3]
    with pytest.raises(RuntimeError, match="without replacement"):
        torch.multinomial(weights, 5)


# ---- dropout ----------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("p", [0.1, 0.5])
def test_dropout_forward_backward_consistency(dtype, p):
    torch.neuron.manual_seed(3)
    x = torch.randn(300, 200, device=DEVICE, dtype=dtype).requires_grad_()
    y = torch.nn.functional.dropout(x, p, training=True)
    grad = torch.randn(300, 200, device=DEVICE, dtype=dtype)
    y.backward(grad)
    kept = y.detach().cpu() != 0
    scale = 1.0 / (1.0 - p)
    expected_y = x.detach().cpu().float() * kept * scale
    torch.testing.assert_close(
        y.detach().cpu().float(), expected_y, rtol=DROPOUT_TOL[dtype][0], atol=DROPOUT_TOL[dtype][1]
    )
    expected_grad = grad.cpu().float() * kept * scale
    torch.testing.assert_close(
        x.grad.cpu().float(), expected_grad, rtol=DROPOUT_TOL[dtype][0], atol=DROPOUT_TOL[dtype][1]
    )
    assert abs(kept.float().mean().item() - (1 - p)) < 6 * math.sqrt(p * (1 - p) / kept.numel())


def test_native_dropout_mask_and_modes():
    x = torch.randn(64, 33, device=DEVICE).t()  # non-contiguous
    out, mask = torch.native_dropout(x, 0.25, True)
    assert mask.dtype == torch.bool and mask.shape == x.shape
    torch.testing.assert_close(out.cpu(), x.cpu() * mask.cpu() / 0.75)
    grad = torch.ops.aten.native_dropout_backward(torch.ones_like(x), mask, 1 / 0.75)
    torch.testing.assert_close(grad.cpu(), mask.cpu().float() / 0.75)
    eval_out, eval_mask = torch.native_dropout(x, 0.25, False)
    assert torch.equal(eval_out.cpu(), x.cpu()) and bool(eval_mask.cpu().all())
    all_dropped, _ = torch.native_dropout(x, 1.0, True)
    assert torch.count_nonzero(all_dropped.cpu()) == 0
    empty_out, empty_mask = torch.native_dropout(torch.empty(0, 4, device=DEVICE), 0.5, True)
    assert empty_out.shape == (0, 4) and empty_mask.shape == (0, 4)


@pytest.mark.parametrize(
    "dtype", [torch.bool, torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64], ids=str
)
def test_native_dropout_backward_of_integer_gradients_matches_cpu(dtype):
    # The CPU computes grad * mask * scale, whose float scale makes the result float32.
    grad = torch.arange(-6, 6).reshape(3, 4).to(dtype)
    mask = torch.arange(12).reshape(3, 4) % 3 != 0
    openneuron.clear_op_tracking()
    got = torch.ops.aten.native_dropout_backward(grad.to(DEVICE), mask.to(DEVICE), 1 / 0.7)
    assert openneuron.get_fallback_ops() == {}
    want = torch.ops.aten.native_dropout_backward(grad, mask, 1 / 0.7)
    assert got.dtype == want.dtype
    assert torch.equal(got.cpu(), want)


def test_nn_dropout_module_is_deterministic_under_device_seed():
    layer = torch.nn.Dropout(0.3).train()
    x = torch.ones(1000, device=DEVICE)
    torch.neuron.manual_seed(11)
    a = layer(x).cpu()
    torch.neuron.manual_seed(11)
    b = layer(x).cpu()
    assert torch.equal(a, b)


def test_float64_goes_to_the_fallback_visibly():
    """float64 is not a NeuronCore type: it runs on the host fallback (the one exception)."""
    openneuron.clear_op_tracking()
    out = torch.empty(10, device=DEVICE, dtype=torch.float64).bernoulli_(0.5)
    assert out.dtype == torch.float64
    assert "aten::bernoulli_.float" in openneuron.get_fallback_ops()
    openneuron.clear_op_tracking()  # keep the autouse native check meaningful for the rest


# ---- out= values: the distribution, not only the shape ---------------------------------------


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_bernoulli_out_statistics(dtype):
    # Per-column probabilities 0, 0.2, 0.7, 1: each column's mean within 6 standard errors
    # (sqrt(p(1-p)/rows)) of p; columns with p 0 and 1 exactly 0 and 1. Seeded: deterministic.
    rows = N // 4
    p = torch.tensor([0.0, 0.2, 0.7, 1.0], device=DEVICE, dtype=dtype).expand(rows, 4)
    out = torch.empty(0, device=DEVICE, dtype=dtype)
    torch.bernoulli(p, generator=gen(7), out=out)
    assert out.shape == (rows, 4) and out.dtype == dtype
    values = out.cpu().double()
    assert set(values.unique().tolist()) <= {0.0, 1.0}
    assert values[:, 0].sum() == 0 and values[:, 3].min() == 1
    for col, prob in ((1, 0.2), (2, 0.7)):
        bound = 6 * math.sqrt(prob * (1 - prob) / rows)
        assert abs(values[:, col].mean().item() - prob) < bound, (col, values[:, col].mean())


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("form", ["tensor_float", "float_tensor", "tensor_tensor"])
def test_normal_out_statistics(dtype, form):
    # Columns with means (-5, 0, 10) and stds (1, 3, 0.5): each column's sample mean within
    # 6 standard errors (6 std / sqrt(rows), about 0.05 for std 3) and its sample std within
    # 6 standard errors of a std estimate (6 std / sqrt(2 rows)) plus the dtype's rounding of
    # the values (bfloat16: 2^-8 relative of |mean| + 3 std).
    rows = N // 4
    mean_values = torch.tensor([-5.0, 0.0, 10.0], dtype=torch.float64)
    std_values = torch.tensor([1.0, 3.0, 0.5], dtype=torch.float64)
    mean = mean_values.to(DEVICE, dtype).expand(rows, 3)
    std = std_values.to(DEVICE, dtype).expand(rows, 3)
    if form == "tensor_float":
        args, std_values = (mean, 2.0), torch.full((3,), 2.0, dtype=torch.float64)
    elif form == "float_tensor":
        args, mean_values = (3.0, std), torch.full((3,), 3.0, dtype=torch.float64)
    else:
        args = (mean, std)
    out = torch.empty(0, device=DEVICE, dtype=dtype)
    torch.normal(*args, generator=gen(11), out=out)
    assert out.shape == (rows, 3) and out.dtype == dtype
    values = out.cpu().double()
    rounding = torch.finfo(dtype).eps * (mean_values.abs() + 3 * std_values)
    mean_bound = 6 * std_values / math.sqrt(rows) + rounding
    std_bound = 6 * std_values / math.sqrt(2 * rows) + rounding
    assert ((values.mean(0) - mean_values).abs() < mean_bound).all(), values.mean(0)
    assert ((values.std(0) - std_values).abs() < std_bound).all(), values.std(0)


# ---- the out= checks catch wrong kernels ------------------------------------------------------


def _normal_std_ten_percent_high(mean, std, *, generator=None, out):
    out.resize_(torch.broadcast_shapes(mean.shape, std.shape))
    out.normal_(0.0, 1.0, generator=generator)
    return out.mul_(std * 1.1).add_(mean)


def _bernoulli_p_ten_percent_low(p, *, generator=None, out):
    out.resize_(p.shape)
    return out.bernoulli_(p * 0.9, generator=generator)


def test_out_statistics_catch_wrong_kernels():
    with kernel_replaced("normal.Tensor_Tensor_out", _normal_std_ten_percent_high):
        with pytest.raises(AssertionError):
            test_normal_out_statistics(torch.float32, "tensor_tensor")
    with kernel_replaced("bernoulli.out", _bernoulli_p_ten_percent_low):
        with pytest.raises(AssertionError):
            test_bernoulli_out_statistics(torch.float32)
    test_normal_out_statistics(torch.float32, "tensor_tensor")  # the real kernels pass again
    test_bernoulli_out_statistics(torch.float32)
