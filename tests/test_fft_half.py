"""torch.fft at float16 and complex32, which CUDA accepts and PyTorch's front end refuses on
other devices before dispatch: on neuron each transform runs at float32 (complex64) and rounds
once, forward and backward, with the dtypes CUDA returns."""

import warnings

import pytest
import torch

REAL_INPUT = ["rfft", "ihfft", "rfft2", "ihfft2", "rfftn", "ihfftn"]
COMPLEX_OK = ["fft", "ifft", "irfft", "hfft", "fft2", "ifft2", "irfft2", "hfft2"]
COMPLEX_OK += ["fftn", "ifftn", "irfftn", "hfftn"]


@pytest.fixture(autouse=True)
def quiet_fallback_warnings():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yield


def widened(dtype):
    return {torch.float16: torch.float32, torch.complex32: torch.complex64}[dtype]


def as_wide(t):
    return t.to(torch.complex64 if t.is_complex() else torch.float32)


def assert_within_one_16bit_step(result, reference):
    """The device transforms at float32 with its own FFT (sums in double) and rounds once; the
    reference is the CPU's float32 FFT rounded once. The two float32 values differ by a few
    float32 ulps, so where they straddle a float16 rounding boundary the rounded results differ
    by one float16 step (2**-10 relative), never more."""
    torch.testing.assert_close(as_wide(result.cpu()), as_wide(reference), rtol=2**-10, atol=1e-6)


@pytest.mark.parametrize("name", REAL_INPUT + COMPLEX_OK)
def test_float16_transform_matches_float32_rounded_once_with_its_gradient(name):
    transform = getattr(torch.fft, name)
    torch.manual_seed(0)
    x = torch.randn(4, 8).half()
    on_neuron = x.to("neuron").requires_grad_()
    result = transform(on_neuron)
    reference_input = x.float().requires_grad_()
    reference = transform(reference_input)
    expected_dtype = torch.complex32 if reference.is_complex() else torch.float16
    assert result.dtype == expected_dtype and result.device.type == "neuron"
    assert_within_one_16bit_step(result, reference.to(expected_dtype))
    # A loss that reads every output element; its gradient reaches the float16 input.
    weight = torch.randn(reference.shape)
    loss = (as_wide(result).abs() if result.is_complex() else as_wide(result)) * weight.to("neuron")
    loss.sum().backward()
    ref_loss = (reference.abs() if reference.is_complex() else reference) * weight
    ref_loss.sum().backward()
    # The gradient passes through float16 roundings the float32 reference lacks (the rounded
    # result and its gradient): measured over 180 seeded cases, |diff| <= 2.6e-3 * (|ref| + 1).
    assert on_neuron.grad.dtype == torch.float16
    torch.testing.assert_close(
        on_neuron.grad.cpu().float(), reference_input.grad, rtol=6e-3, atol=6e-3
    )


@pytest.mark.parametrize("name", COMPLEX_OK)
def test_complex32_transform_matches_complex64_rounded_once(name):
    x = torch.randn(4, 8, dtype=torch.complex64).to(torch.complex32)
    result = getattr(torch.fft, name)(x.to("neuron"))
    reference = getattr(torch.fft, name)(x.to(torch.complex64))
    narrowed = torch.complex32 if reference.is_complex() else torch.float16
    assert result.dtype == narrowed
    assert_within_one_16bit_step(result, reference.to(narrowed))


@pytest.mark.parametrize("name", REAL_INPUT)
def test_complex32_input_to_a_real_transform_is_refused_naming_complex32(name):
    x = torch.zeros(4, 8, dtype=torch.complex32, device="neuron")
    with pytest.raises(RuntimeError, match="ComplexHalf"):
        getattr(torch.fft, name)(x)


def test_inference_mode_takes_the_same_route():
    x = torch.randn(16).half()
    with torch.inference_mode():
        result = torch.fft.rfft(x.to("neuron"))
    assert result.dtype == torch.complex32
    assert_within_one_16bit_step(result, torch.fft.rfft(x.float()).to(torch.complex32))


def test_other_dtypes_keep_pytorchs_front_end():
    x = torch.randn(4, 8)
    torch.testing.assert_close(torch.fft.fft2(x.to("neuron")).cpu(), torch.fft.fft2(x))
    with pytest.raises(RuntimeError, match="Unsupported dtype"):
        torch.fft.fft(torch.zeros(8, dtype=torch.bfloat16, device="neuron"))


@pytest.mark.parametrize("name", ["fft", "rfft", "irfft", "fft2", "ihfftn"])
def test_out_form_takes_the_16_bit_result(name):
    transform = getattr(torch.fft, name)
    x = torch.randn(4, 8).half()
    reference = transform(x.float())
    narrowed = torch.complex32 if reference.is_complex() else torch.float16
    out = torch.empty(0, dtype=narrowed, device="neuron")
    assert transform(x.to("neuron"), out=out) is out
    assert torch.equal(as_wide(out.cpu()), as_wide(reference.to(narrowed)))
    # A wider out holds the 16-bit result cast up, as CUDA computes it.
    wide = torch.empty(0, dtype=as_wide(reference).dtype, device="neuron")
    transform(x.to("neuron"), out=wide)
    assert torch.equal(wide.cpu(), as_wide(reference.to(narrowed)))
    wrong_kind = torch.empty(0, dtype=torch.float16 if reference.is_complex() else torch.complex32)
    with pytest.raises(RuntimeError, match="output tensor"):
        transform(x.to("neuron"), out=wrong_kind.to("neuron"))
