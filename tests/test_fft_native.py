"""torch.fft at float32 / complex64 runs on the device (the primitives _fft_c2c, _fft_r2c,
_fft_c2r): every front end, each norm, lengths that are and are not powers of two, several dims,
strided inputs and out=, values and gradients against the CPU, no host fallback; complex128
still runs on the host (not a NeuronCore type), counted as such.
"""

import pytest
import torch

import openneuron
from tests.kernel_mutants import kernel_replaced

DEVICE = "neuron"
F = torch.fft
# Sums of up to 60 float32 terms formed in double and rounded once, against the CPU's float
# pocketfft: measured worst difference 1.9e-6 on values of size ~10.
TOL = dict(rtol=2e-5, atol=2e-5)

REAL_INPUT = {
    "fft": lambda x: F.fft(x),
    "ifft": lambda x: F.ifft(x, n=9, norm="ortho"),
    "rfft": lambda x: F.rfft(x, norm="forward"),
    "rfft2": lambda x: F.rfft2(x),
    "rfftn": lambda x: F.rfftn(x, s=(4, 6), dim=(0, 2)),
    "ihfft": lambda x: F.ihfft(x),
    "fft2": lambda x: F.fft2(x, norm="backward"),
    "fftn": lambda x: F.fftn(x),
}
COMPLEX_INPUT = {
    "fft": lambda z: F.fft(z, dim=1),
    "ifft2": lambda z: F.ifft2(z),
    "irfft": lambda z: F.irfft(z),
    "irfft odd": lambda z: F.irfft(z, n=11, norm="ortho"),
    "irfftn": lambda z: F.irfftn(z, dim=(0, 1)),
    "hfft": lambda z: F.hfft(z, norm="forward"),
    "hfft2": lambda z: F.hfft2(z),
}


def check(fn, x):
    torch.manual_seed(0)
    dev_x = x.to(DEVICE).requires_grad_()
    cpu_x = x.clone().requires_grad_()
    openneuron.clear_op_tracking()
    dev = fn(dev_x)
    cpu = fn(cpu_x)
    upstream = torch.randn_like(cpu.detach())

    def as_real(t):
        return torch.view_as_real(t.resolve_conj()) if t.is_complex() else t

    (as_real(dev) * as_real(upstream).to(DEVICE)).sum().backward()
    (as_real(cpu) * as_real(upstream)).sum().backward()
    assert not any("fft" in op for op in openneuron.get_fallback_ops()), (
        openneuron.get_fallback_ops()
    )
    assert dev.dtype == cpu.dtype and dev.shape == cpu.shape
    torch.testing.assert_close(dev.detach().cpu(), cpu.detach(), **TOL)
    torch.testing.assert_close(dev_x.grad.cpu(), cpu_x.grad, **TOL)


@pytest.mark.parametrize("name", list(REAL_INPUT))
def test_real_input_transforms_match_cpu_natively(name):
    torch.manual_seed(1)
    x = torch.randn(6, 5, 12)[:, :, ::2]  # strided: the last dim has stride 2
    check(REAL_INPUT[name], x)


@pytest.mark.parametrize("name", list(COMPLEX_INPUT))
def test_complex_input_transforms_match_cpu_natively(name):
    torch.manual_seed(2)
    z = torch.randn(7, 6, dtype=torch.complex64)
    check(COMPLEX_INPUT[name], z)


def test_out_forms_and_integer_inputs():
    x = torch.arange(10, dtype=torch.int32)
    out = torch.empty(0, dtype=torch.complex64, device=DEVICE)
    openneuron.clear_op_tracking()
    result = F.rfft(x.to(DEVICE), out=out)
    assert result is out
    torch.testing.assert_close(out.cpu(), F.rfft(x), **TOL)
    z = torch.randn(4, 8, dtype=torch.complex64)
    out_c = torch.empty(4, 8, dtype=torch.complex64, device=DEVICE)
    F.fft(z.to(DEVICE), dim=0, out=out_c)
    torch.testing.assert_close(out_c.cpu(), F.fft(z, dim=0), **TOL)
    assert openneuron.get_fallback_ops() == {}


def test_complex128_runs_on_the_host_and_is_counted():
    z = torch.randn(5, dtype=torch.complex128)
    openneuron.clear_op_tracking()
    torch.testing.assert_close(F.fft(z.to(DEVICE)).cpu(), F.fft(z))
    assert "aten::_fft_c2c" in openneuron.get_fallback_ops()


def test_a_wrong_transform_is_caught():
    def conjugated(self, dim, normalization, forward):
        return torch.ops.aten._fft_c2c(self.cpu(), dim, normalization, not forward).to(DEVICE)

    with kernel_replaced("_fft_c2c", conjugated), pytest.raises(AssertionError):
        check(COMPLEX_INPUT["fft"], torch.randn(7, 6, dtype=torch.complex64))
