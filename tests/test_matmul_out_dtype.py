"""mm, bmm, addmm and baddbmm with out_dtype (the `.dtype` overloads CUDA has and the CPU does
not): fp16/bf16 operands write an fp32 result that keeps the fp32 accumulator unrounded,
natively, with CUDA's checks at the call. The reference is a float64 product of the same
16-bit values: only fp32 accumulation separates it from the device's result."""

import pytest
import torch
from kernel_mutants import kernel_replaced

import openneuron

# Measured: < 1e-6 relative to the float64 product over K = 64 (fp32 sums of exact products).
# One bf16 rounding of the result (what out_dtype=float32 must not do) is up to 4e-3 relative.
WIDENED = dict(rtol=2e-6, atol=2e-6)


def operands(*shapes, dtype):
    generator = torch.Generator().manual_seed(len(shapes) * 7 + sum(map(len, shapes)))
    return [torch.randn(shape, generator=generator).to(dtype) for shape in shapes]


def on_device(*tensors):
    return [t.to("neuron") for t in tensors]


def run_native(op, *args, **kwargs):
    """op on the device; asserts it ran natively (no host fallback)."""
    openneuron.clear_op_tracking()
    result = op(*args, **kwargs)
    torch.neuron.synchronize()
    assert openneuron.get_fallback_ops() == {}
    return result


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16], ids=str)
def test_mm_and_bmm_write_the_unrounded_fp32_product(dtype):
    a, b = operands((33, 64), (64, 20), dtype=dtype)
    got = run_native(torch.mm, *on_device(a, b), out_dtype=torch.float32)
    assert got.dtype == torch.float32 and got.device.type == "neuron"
    torch.testing.assert_close(got.cpu().double(), a.double() @ b.double(), **WIDENED)

    a3, b3 = operands((3, 17, 64), (3, 64, 9), dtype=dtype)
    got = run_native(torch.bmm, *on_device(a3, b3), out_dtype=torch.float32)
    assert got.dtype == torch.float32
    torch.testing.assert_close(got.cpu().double(), a3.double() @ b3.double(), **WIDENED)


def test_addmm_and_baddbmm_add_the_16_bit_term_at_fp32():
    bias, a, b = operands((20,), (33, 64), (64, 20), dtype=torch.bfloat16)
    got = run_native(
        torch.addmm, *on_device(bias, a, b), out_dtype=torch.float32, beta=0.5, alpha=2
    )
    expected = 0.5 * bias.double() + 2 * (a.double() @ b.double())
    torch.testing.assert_close(got.cpu().double(), expected, **WIDENED)

    added, b1, b2 = operands((2, 5, 7), (2, 5, 64), (2, 64, 7), dtype=torch.bfloat16)
    got = run_native(
        torch.baddbmm, *on_device(added, b1, b2), out_dtype=torch.float32, beta=-1, alpha=0.25
    )
    expected = -added.double() + 0.25 * (b1.double() @ b2.double())
    torch.testing.assert_close(got.cpu().double(), expected, **WIDENED)
    # An fp32 added term (CUDA reads it at out_dtype).
    got = run_native(
        torch.baddbmm, *on_device(added.float(), b1, b2), out_dtype=torch.float32, beta=2
    )
    expected = 2 * added.double() + b1.double() @ b2.double()
    torch.testing.assert_close(got.cpu().double(), expected, **WIDENED)


def test_out_dtype_equal_to_the_operands_is_the_plain_product():
    a, b = operands((9, 16), (16, 5), dtype=torch.float32)
    got = run_native(torch.mm, *on_device(a, b), out_dtype=torch.float32)
    torch.testing.assert_close(got.cpu(), a @ b)
    a16, b16 = a.bfloat16(), b.bfloat16()
    got = run_native(torch.mm, *on_device(a16, b16), out_dtype=torch.bfloat16)
    assert got.dtype == torch.bfloat16
    torch.testing.assert_close(got.cpu(), a16 @ b16, rtol=1.6e-2, atol=1e-2)


def test_out_variants_write_into_out():
    a, b = operands((6, 64), (64, 4), dtype=torch.bfloat16)
    out = torch.empty(0, device="neuron")  # resized, as CUDA resizes it
    result = run_native(torch.mm, *on_device(a, b), out_dtype=torch.float32, out=out)
    assert result is out and out.shape == (6, 4)
    torch.testing.assert_close(out.cpu().double(), a.double() @ b.double(), **WIDENED)
    a3, b3 = a.unsqueeze(0), b.unsqueeze(0)
    out3 = torch.empty(0, device="neuron")
    torch.bmm(*on_device(a3, b3), out_dtype=torch.float32, out=out3)
    torch.testing.assert_close(out3.cpu().double(), a3.double() @ b3.double(), **WIDENED)


def test_what_cuda_refuses_is_refused_at_the_call():
    a, b = on_device(*operands((4, 8), (8, 3), dtype=torch.bfloat16))
    with pytest.raises(RuntimeError, match="out_dtype must be the same as input dtype or fp32"):
        torch.mm(a, b, out_dtype=torch.float16)
    with pytest.raises(RuntimeError, match="out_dtype must be the same as input dtype or fp32"):
        torch.mm(a.float(), b.float(), out_dtype=torch.bfloat16)
    with pytest.raises(RuntimeError, match="input dtypes must be the same"):
        torch.mm(a, b.half(), out_dtype=torch.float32)
    with pytest.raises(RuntimeError, match="shapes cannot be multiplied"):
        torch.mm(a, a, out_dtype=torch.float32)
    with pytest.raises(RuntimeError, match="dtype of the provided out tensor"):
        torch.mm(a, b, out_dtype=torch.float32, out=torch.empty(4, 3, device="neuron").bfloat16())
    with pytest.raises(RuntimeError, match="batch1 must be a 3D tensor"):
        torch.bmm(a, b, out_dtype=torch.float32)
    with pytest.raises(RuntimeError, match="self and mat2 must have the same dtype"):
        torch.addmm(torch.zeros(3, device="neuron"), a, b, out_dtype=torch.float32)
    b1, b2 = a.unsqueeze(0), b.unsqueeze(0)
    with pytest.raises(RuntimeError, match="self must have the same shape as the output"):
        torch.baddbmm(torch.zeros(1, 4, 1, device="neuron"), b1, b2, out_dtype=torch.float32)
    # The device is still usable after each refusal.
    torch.testing.assert_close(
        torch.mm(a, b, out_dtype=torch.float32).cpu().double(),
        a.cpu().double() @ b.cpu().double(),
        **WIDENED,
    )


def test_a_kernel_that_rounds_to_16_bits_is_caught():
    """mm.dtype replaced by one that rounds the fp32 result to bf16 first: the check fails."""
    a, b = operands((33, 64), (64, 20), dtype=torch.bfloat16)

    def rounds_first(self, mat2, out_dtype):
        return torch.mm(self, mat2).to(out_dtype)  # a bf16 product, then widened

    with kernel_replaced("mm.dtype", rounds_first):
        got = torch.mm(*on_device(a, b), out_dtype=torch.float32)
    with pytest.raises(AssertionError):
        torch.testing.assert_close(got.cpu().double(), a.double() @ b.double(), **WIDENED)


def test_other_dtypes_are_the_plain_product_and_refusals_come_at_the_call():
    a = torch.randint(-5, 5, (4, 6), dtype=torch.int32)
    b = torch.randint(-5, 5, (6, 3), dtype=torch.int32)
    got = run_native(torch.mm, *on_device(a, b), out_dtype=torch.int32)
    assert got.dtype == torch.int32 and torch.equal(got.cpu(), a @ b)
    got = torch.bmm(*on_device(a.unsqueeze(0), b.unsqueeze(0)), out_dtype=torch.int32)
    assert torch.equal(got.cpu(), (a @ b).unsqueeze(0))
    # float64 is the plain product too (on the host, as float64 runs; the CPU has no .dtype).
    a64, b64 = a.double(), b.double()
    torch.testing.assert_close(
        torch.mm(*on_device(a64, b64), out_dtype=torch.float64).cpu(), a64 @ b64
    )
    # A dtype no matrix product takes is refused at the call, not at the next synchronize.
    bools = on_device(a > 0, b > 0)
    with pytest.raises(RuntimeError):
        torch.mm(*bools, out_dtype=torch.bool)
    torch.neuron.synchronize()
