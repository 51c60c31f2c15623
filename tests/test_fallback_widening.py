"""The host fallback never fails on a dtype CUDA has and the CPU lacks: it computes at the nearest
wider dtype the CPU has, rounds once, and says so (openneuron.get_widened_ops())."""

import warnings

import pytest
import torch

import openneuron


@pytest.fixture(autouse=True)
def quiet_fallback_warnings():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yield


# Anti-aliased bilinear resizing: CUDA has 16-bit kernels, the CPU does not (and neuron runs it
# on the host).
SIZE = [4, 4]


def resize(x):
    return torch.ops.aten._upsample_bilinear2d_aa(x, SIZE, False, None, None)


def resize_on_cpu_widened(x):
    """The reference for a 16-bit anti-aliased resize: the CPU at float32, rounded once."""
    return resize(x.float()).to(x.dtype)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=str)
def test_16_bit_op_the_cpu_lacks_runs_widened_and_is_reported(dtype):
    x = torch.randn(1, 2, 9, 9).to(dtype)
    openneuron.clear_op_tracking()
    result = resize(x.to("neuron"))
    assert result.dtype == dtype and result.device.type == "neuron"
    assert torch.equal(result.cpu(), resize_on_cpu_widened(x))
    # The functional form runs its out= form (a structured kernel), which falls back.
    op = "aten::_upsample_bilinear2d_aa.out"
    assert openneuron.get_fallback_ops() == {op: 1}
    assert openneuron.get_widened_ops() == {op: {str(dtype): "torch.float32"}}
    openneuron.clear_op_tracking()
    assert openneuron.get_widened_ops() == {}


def test_widened_out_is_resized_and_returned_and_gradients_flow():
    x = torch.randn(1, 2, 9, 9).half()
    out = torch.empty(0, dtype=torch.half, device="neuron")
    returned = torch.ops.aten._upsample_bilinear2d_aa.out(
        x.to("neuron"), SIZE, False, None, None, out=out
    )
    assert returned is out and out.shape == (1, 2, 4, 4)
    assert torch.equal(out.cpu(), resize_on_cpu_widened(x))

    leaf = x.to("neuron").requires_grad_()
    (grad,) = torch.autograd.grad(resize(leaf).sum(), leaf)
    reference = x.float().requires_grad_()
    (expected,) = torch.autograd.grad(resize(reference).sum(), reference)
    assert grad.dtype == torch.half
    assert torch.equal(grad.cpu(), expected.half())
    assert "aten::_upsample_bilinear2d_aa_backward.grad_input" in openneuron.get_widened_ops()


def test_antialiased_16_bit_interpolation_runs_widened():
    x = torch.randn(1, 2, 9, 9).half()
    result = torch.nn.functional.interpolate(
        x.to("neuron"), size=(4, 4), mode="bilinear", antialias=True
    )
    expected = torch.nn.functional.interpolate(
        x.float(), size=(4, 4), mode="bilinear", antialias=True
    ).half()
    assert torch.equal(result.cpu(), expected)


def test_without_widening_the_cpu_kernel_error_comes_back():
    """The mutant: a fallback that does not widen fails where CUDA computes."""
    x = torch.randn(1, 2, 9, 9).half().to("neuron")
    openneuron._C._set_fallback_widening(False)
    try:
        with pytest.raises(NotImplementedError, match="not implemented for 'Half'"):
            resize(x)
    finally:
        openneuron._C._set_fallback_widening(True)
    assert resize(x).shape == (1, 2, 4, 4)


def test_dtypes_cuda_refuses_too_are_not_widened():
    """Integer lerp: CUDA's kernel refuses it like the CPU's, so the CPU's error stands."""
    a = torch.tensor([1, 2], device="neuron")
    with pytest.raises((NotImplementedError, RuntimeError)):
        torch.lerp(a, a, 0.5)
    assert openneuron.get_widened_ops().get("aten::lerp.Scalar_out") is None


def test_strict_mode_still_refuses_before_widening():
    x = torch.randn(1, 2, 9, 9).half().to("neuron")
    with openneuron.strict(), pytest.raises(NotImplementedError, match="_upsample_bilinear2d_aa"):
        resize(x)


def test_bool_widens_only_where_cuda_has_a_bool_kernel():
    flags = torch.tensor([True, False, True])
    openneuron.clear_op_tracking()
    assert torch.equal(torch.abs(flags.to("neuron")).cpu(), flags)
    assert torch.trace(torch.eye(3).bool().to("neuron")).item() == 3
    # trace of bool (CUDA sums it to int64) is now native: nothing widened.
    assert "aten::trace" not in openneuron.get_widened_ops()
    # Negation of bool: CUDA refuses it as the CPU does, with the CPU's message.
    with pytest.raises(RuntimeError, match="Negation, the `-` operator, on a bool tensor"):
        -flags.to("neuron")


def test_a_dtype_argument_naming_a_missing_dtype_is_widened_too():
    values = torch.randn(4, dtype=torch.complex64)
    openneuron.clear_op_tracking()
    product = torch.prod(values.to("neuron"), dtype=torch.complex32)
    assert product.dtype == torch.complex32
    assert openneuron.get_widened_ops()["aten::prod"] == {"torch.complex32": "torch.complex64"}
    expected = torch.prod(values).to(torch.complex32)
    assert product.cpu().to(torch.complex64) == expected.to(torch.complex64)


def test_complex32_fft_runs_widened():
    """The CPU's FFT names a complex32 tensor by its real part ("type: Half")."""
    signal = torch.randn(8, dtype=torch.complex64).to(torch.complex32)
    spectrum = torch.fft.fft(signal.to("neuron"))
    expected = torch.fft.fft(signal.to(torch.complex64)).to(torch.complex32)
    assert torch.equal(spectrum.cpu().to(torch.complex64), expected.to(torch.complex64))
    # A real fp16 out= beside the complex32 input: both widen.
    out = torch.empty(0, dtype=torch.half, device="neuron")
    torch.fft.irfft(signal.to("neuron"), out=out)
    assert torch.equal(out.cpu(), torch.fft.irfft(signal.to(torch.complex64)).half())


def test_16_bit_polygamma_computes_wider_and_rounds_once_as_cuda_does():
    """The CPU has a float16 polygamma that computes in float16 (its series overflows and loses
    digits); CUDA computes at float32 and rounds once, and neuron computes it natively in double
    and rounds once."""
    x = torch.tensor([0.01, 0.37, 3.0, 10.0, 25.0], dtype=torch.float16)
    openneuron.clear_op_tracking()
    for order in (1, 3, 4):
        result = torch.polygamma(order, x.to("neuron"))
        assert result.dtype == torch.float16
        assert torch.equal(result.cpu(), torch.polygamma(order, x.double()).half())
    # The CPU's own float16 kernel differs from that.
    assert not torch.equal(torch.polygamma(3, x), torch.polygamma(3, x.double()).half())
    assert openneuron.get_fallback_ops() == {}
