"""One-element elementwise ops (a loss, a step count, a scale) take a shortcut past the row
machinery of the pointwise kernels; their results stay the CPU's, bit for bit, at every pairing
of dtypes that promotion and out= casts bring together."""

import pytest
import torch

import openneuron
from tests.kernel_mutants import kernel_replaced

DEV = "neuron"

# (left dtype, right dtype): same and mixed, integer, bool and 16-bit floats.
PAIRS = [
    (torch.float32, torch.float32),
    (torch.bfloat16, torch.bfloat16),
    (torch.float16, torch.int32),
    (torch.int8, torch.bfloat16),
    (torch.uint8, torch.int64),
    (torch.bool, torch.int16),
    (torch.bool, torch.bool),
]

BINARY = {
    "add": lambda a, b: torch.add(a, b),
    "add_alpha": lambda a, b: torch.add(a, b, alpha=3),
    "mul": torch.mul,
    "maximum": torch.maximum,
    "eq": torch.eq,
    "lt": torch.lt,
    "where": lambda a, b: torch.where(a > 1, a, b),
}


def one_element(dtype, value):
    return torch.tensor([value], dtype=dtype)


@pytest.mark.parametrize("name", list(BINARY))
@pytest.mark.parametrize("left, right", PAIRS, ids=lambda d: str(d).replace("torch.", ""))
@pytest.mark.parametrize("shape", [(1,), (), (1, 1, 1)], ids=["1", "0-dim", "1x1x1"])
def test_binary_one_element_matches_cpu_bitwise(name, left, right, shape):
    fn = BINARY[name]
    a = one_element(left, 3).reshape(shape)
    b = one_element(right, 2).reshape(shape)
    openneuron.clear_op_tracking()
    actual = fn(a.to(DEV), b.to(DEV))
    assert openneuron.get_fallback_ops() == {}
    expected = fn(a, b)
    assert actual.dtype == expected.dtype and actual.shape == expected.shape
    assert torch.equal(actual.cpu(), expected)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16, torch.int32])
def test_unary_and_scalar_ops_on_one_element_match_cpu(dtype):
    x = torch.tensor([-2.75]).to(dtype)
    for fn in (torch.neg, torch.abs, lambda t: t * 1.5, lambda t: t + 1, lambda t: t.clamp(-1, 1)):
        expected = fn(x)
        actual = fn(x.to(DEV))
        assert actual.dtype == expected.dtype
        assert torch.equal(actual.cpu(), expected)


def test_one_element_out_casts_as_the_cpu():
    # An int result into a bf16 out= and a float result into an int8 out= each cast once.
    for a, b, out_dtype in ((7, 9, torch.bfloat16), (2.5, 4.0, torch.float16)):
        x, y = torch.tensor([a]), torch.tensor([b])
        expected = torch.empty(1, dtype=out_dtype)
        torch.mul(x, y, out=expected)
        actual = torch.empty(1, dtype=out_dtype, device=DEV)
        torch.mul(x.to(DEV), y.to(DEV), out=actual)
        assert torch.equal(actual.cpu(), expected)


def test_a_wrong_one_element_add_is_caught():
    def off_by_one_ulp(a, b, alpha=1):
        result = torch.ops.aten.add.Tensor(a.cpu(), b.cpu(), alpha=alpha)
        return torch.nextafter(result, torch.full_like(result, float("inf"))).to(a.device)

    with kernel_replaced("add.Tensor", off_by_one_ulp):
        with pytest.raises(AssertionError):
            test_binary_one_element_matches_cpu_bitwise("add", torch.float32, torch.float32, (1,))
