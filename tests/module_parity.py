"""One module on neuron against the same module on the CPU: forward, input gradient and
parameter gradients, at a dtype whose parameters and inputs are rounded alike on both sides."""

import copy
import warnings

import torch

import openneuron

DEVICE = "neuron"


def rounded(tensor, dtype):
    """The tensor rounded to `dtype` and held at float32 (the CPU reference's precision)."""
    return tensor.detach().to(dtype).to(torch.float32)


def run_module(factory, shape, dtype, input_scale):
    """(neuron module, cpu module, neuron input, cpu input, neuron out, cpu out) after a
    backward pass of the same upstream gradient through both."""
    torch.manual_seed(0)
    cpu_module = factory()
    with torch.no_grad():
        for param in cpu_module.parameters():
            param.copy_(rounded(param, dtype))
    dev_module = copy.deepcopy(cpu_module).to(DEVICE, dtype)
    x = torch.randn(shape) * input_scale
    cpu_x = rounded(x, dtype).requires_grad_()
    dev_x = cpu_x.detach().to(DEVICE, dtype).requires_grad_()
    openneuron.clear_op_tracking()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        dev_out = dev_module(dev_x)
        cpu_out = cpu_module(cpu_x)
        upstream = rounded(torch.randn(cpu_out.shape), dtype)
        (cpu_out * upstream).sum().backward()
        (dev_out * upstream.to(DEVICE, dtype)).sum().backward()
    return dev_module, cpu_module, dev_x, cpu_x, dev_out, cpu_out


def check_module(factory, shape, dtype, input_scale, tol):
    """Runs the module on both devices with no host fallback and compares everything; `tol`
    holds atol/rtol for the output and input gradient."""
    dev_module, cpu_module, dev_x, cpu_x, dev_out, cpu_out = run_module(
        factory, shape, dtype, input_scale
    )
    assert openneuron.get_fallback_ops() == {}
    assert dev_out.dtype == dtype
    torch.testing.assert_close(dev_out.cpu().float(), cpu_out.detach(), **tol)
    torch.testing.assert_close(dev_x.grad.cpu().float(), cpu_x.grad, **tol)
    for dev_param, cpu_param in zip(dev_module.parameters(), cpu_module.parameters(), strict=True):
        # A parameter gradient sums over the batch and positions: its error grows with them.
        torch.testing.assert_close(
            dev_param.grad.cpu().float(),
            cpu_param.grad,
            atol=tol["atol"] * 8,
            rtol=tol["rtol"] * 4,
        )
