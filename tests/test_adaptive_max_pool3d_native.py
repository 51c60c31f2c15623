"""Adaptive 3-D max pooling (F.adaptive_max_pool3d, nn.AdaptiveMaxPool3d) on neuron: the CPU's
values, indices, gradients and errors at float32, bfloat16 and float16, with no op left to the
host fallback."""

import pytest
import torch
import torch.nn.functional as F

import openneuron
from tests.kernel_mutants import kernel_replaced

FLOATS = [torch.float32, torch.bfloat16, torch.float16]
# Overlapping windows send several output gradients to one input element: the CPU adds them in
# the 16-bit type one by one, neuron in fp32 with one rounding (a few 16-bit units apart at most).
GRAD_TOL = {
    torch.float32: dict(atol=1e-6, rtol=1e-6),
    torch.bfloat16: dict(atol=2e-2, rtol=2e-2),
    torch.float16: dict(atol=2e-3, rtol=2e-3),
}

CASES = [
    # (input shape, output size, channels_last_3d input)
    ((2, 3, 5, 7, 4), (3, 2, 4), False),
    ((2, 3, 6, 6, 6), 4, True),
    ((3, 4, 9, 5), (None, 2, 3), False),
    ((1, 2, 3, 3, 3), 1, False),
    ((2, 1, 4, 4, 4), (5, 6, 7), False),
]


def make_input(shape, dtype, channels_last, seed):
    x = torch.randn(shape, generator=torch.Generator().manual_seed(seed)).to(dtype)
    if channels_last:
        x = x.to(memory_format=torch.channels_last_3d)
    return x


def natively(fn):
    openneuron.clear_op_tracking()
    with openneuron.strict():
        result = fn()
    assert openneuron.get_fallback_ops() == {}
    return result


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_adaptive_max_pool3d_forward_and_gradient_match_the_cpu(dtype):
    for seed, (shape, size, channels_last) in enumerate(CASES):
        x = make_input(shape, dtype, channels_last, seed)
        x[..., 0, 0, 0] = float("nan")  # NaN wins its windows
        results = {}
        for device in ("cpu", "neuron"):
            leaf = x.to(device).requires_grad_()
            pool = lambda: F.adaptive_max_pool3d(leaf, size, return_indices=True)  # noqa: E731
            out, indices = natively(pool) if device == "neuron" else pool()
            grad_out = make_input(out.shape, dtype, False, seed + 100).to(device)
            step = lambda: torch.autograd.grad(out, leaf, grad_out)[0]  # noqa: E731
            grad = natively(step) if device == "neuron" else step()
            results[device] = (out, indices, grad)
        (out, indices, grad), (cpu_out, cpu_indices, cpu_grad) = results["neuron"], results["cpu"]
        assert out.dtype == dtype and out.shape == cpu_out.shape and out.is_contiguous()
        torch.testing.assert_close(out.cpu(), cpu_out, atol=0, rtol=0, equal_nan=True)
        assert torch.equal(indices.cpu(), cpu_indices)
        torch.testing.assert_close(grad.cpu(), cpu_grad, **GRAD_TOL[dtype])


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_adaptive_max_pool3d_module_and_out_match_the_cpu(dtype):
    x = make_input((2, 3, 6, 5, 4), dtype, False, 9)
    module = torch.nn.AdaptiveMaxPool3d((2, 3, 2))
    assert torch.equal(natively(lambda: module(x.to("neuron"))).cpu(), module(x))
    out = torch.empty(0, dtype=dtype, device="neuron")
    indices = torch.empty(0, dtype=torch.long, device="neuron")
    natively(lambda: torch._C._nn.adaptive_max_pool3d(x.to("neuron"), 2, out=(out, indices)))
    cpu_out, cpu_indices = F.adaptive_max_pool3d(x, 2, return_indices=True)
    assert torch.equal(out.cpu(), cpu_out) and torch.equal(indices.cpu(), cpu_indices)


def test_adaptive_max_pool3d_refuses_what_the_cpu_refuses():
    for shape, dtype in [
        ((2, 3, 4), torch.float32),
        ((2, 3, 0, 4, 4), torch.float32),
        ((2, 3, 4, 4, 4), torch.int32),
    ]:
        x = torch.zeros(shape, dtype=dtype)
        with pytest.raises(Exception) as on_cpu:
            F.adaptive_max_pool3d(x, 2)
        with pytest.raises(type(on_cpu.value)) as on_neuron:
            F.adaptive_max_pool3d(x.to("neuron"), 2)
        assert str(on_neuron.value).splitlines()[0] == str(on_cpu.value).splitlines()[0]


def test_adaptive_max_pool3d_mutant_is_caught():
    def first_element(x, output_size):
        out, indices = torch.ops.aten.adaptive_max_pool3d.default(x.cpu(), output_size)
        return out.to(x.device), torch.zeros_like(indices).to(x.device)

    with kernel_replaced("adaptive_max_pool3d", first_element):
        with pytest.raises(AssertionError):
            test_adaptive_max_pool3d_forward_and_gradient_match_the_cpu(torch.float32)
