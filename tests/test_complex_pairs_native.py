"""Complex tensors handled through their float pairs on the device: complex64 times a real
factor (the scaling inside the irfft/hfft gradients) and torch.complex, equal to the CPU's,
with no op on the host fallback.
"""

import pytest
import torch

import openneuron
from tests.kernel_mutants import kernel_replaced

DEVICE = "neuron"


def complex_sample(shape=(4, 5), seed=0):
    torch.manual_seed(seed)
    return torch.randn(shape, dtype=torch.complex64)


def test_complex_times_a_real_factor_matches_cpu():
    z = complex_sample()
    r = torch.randn(4, 5)
    row = torch.randn(5)
    d_z, d_r, d_row = z.to(DEVICE), r.to(DEVICE), row.to(DEVICE)
    openneuron.clear_op_tracking()
    results = {
        "tensor": (d_z * d_r, z * r),
        "real first": (d_r * d_z, r * z),
        "broadcast": (d_z * d_row, z * row),
        "scalar": (d_z * 2.5, z * 2.5),
        "in place": (d_z.clone().mul_(d_row), z.clone().mul_(row)),
        "in place scalar": (d_z.clone().mul_(2), z.clone().mul_(2)),
        "mul_.Scalar": (torch.ops.aten.mul_.Scalar(d_z.clone(), 3), z * 3),
        "out": (
            torch.mul(d_z, d_r, out=torch.empty(0, dtype=torch.complex64, device=DEVICE)),
            z * r,
        ),
    }
    assert openneuron.get_fallback_ops() == {}
    for name, (dev, cpu) in results.items():
        assert dev.dtype == torch.complex64, name
        torch.testing.assert_close(dev.cpu(), cpu, rtol=1e-6, atol=1e-6, msg=name)


@pytest.mark.parametrize("op", [torch.fft.irfft, torch.fft.hfft], ids=lambda f: f.__name__)
def test_irfft_and_hfft_gradients_run_natively(op):
    x = torch.randn(5, 6, 7)
    dev = x.to(DEVICE).requires_grad_()
    cpu = x.clone().requires_grad_()
    openneuron.clear_op_tracking()
    op(dev, n=10, dim=1, norm="ortho").sum().backward()
    op(cpu, n=10, dim=1, norm="ortho").sum().backward()
    assert openneuron.get_fallback_ops() == {}
    torch.testing.assert_close(dev.grad.cpu(), cpu.grad, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16], ids=str)
def test_torch_complex_matches_cpu(dtype):
    torch.manual_seed(1)
    real, imag = torch.randn(3, 4).to(dtype), torch.randn(4).to(dtype)
    openneuron.clear_op_tracking()
    got = torch.complex(real.to(DEVICE), imag.to(DEVICE))
    out = torch.empty(0, dtype=got.dtype, device=DEVICE)
    torch.complex(real.to(DEVICE), imag.to(DEVICE), out=out)
    assert openneuron.get_fallback_ops() == {}
    want = torch.complex(real.float(), imag.float()).to(got.dtype)
    assert got.dtype == (torch.complex64 if dtype == torch.float32 else torch.complex32)
    for result in (got, out):
        assert torch.equal(torch.view_as_real(result.cpu()), torch.view_as_real(want))
    with pytest.raises(RuntimeError, match="Expected object of scalar type Float"):
        torch.complex(real.float().to(DEVICE), imag.half().to(DEVICE))


def test_a_wrong_complex_scaling_is_caught():
    def scales_the_real_half_only(self, other):
        # Multiplies the real parts and leaves the imaginary ones alone.
        if not self.is_complex():
            self, other = other, self
        pairs = torch.view_as_real(self.cpu()).clone()
        pairs[..., 0] *= other.cpu() if isinstance(other, torch.Tensor) else other
        return torch.view_as_complex(pairs).to(DEVICE)

    with kernel_replaced("mul.Tensor", scales_the_real_half_only), pytest.raises(AssertionError):
        test_complex_times_a_real_factor_matches_cpu()
