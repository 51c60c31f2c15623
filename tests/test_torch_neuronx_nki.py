"""TorchNeuron's NKI entry points under ``torch_neuronx``: ``nki_op`` registers a PyTorch
function that calls kernels as a custom op (eager and torch.compile, with a derived fake), and
``wrap_nki`` runs a kernel on torch tensors, with or without a launch grid."""

import torch

from openneuron import nki
from openneuron.nki import language as nl
from openneuron.torch_neuronx import nki_op, wrap_nki


@nki.jit
def add_kernel(a, b):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    nl.store(out, nl.add(nl.load(a), nl.load(b)))
    return out


@nki.jit
def exp_into(x, out):
    nl.store(out, nl.exp(nl.load(x)))


# The TorchNeuron shape: a typed PyTorch function whose body calls kernels, one returning its
# output and one writing into a tensor the function allocated.
@nki_op("torch_neuronx_test::add_then_exp", mutates_args={})
def add_then_exp(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    total = add_kernel(a, b)
    out = torch.empty_like(total)
    exp_into(total, out)
    return out


def _inputs():
    generator = torch.Generator().manual_seed(0)
    a, b = (torch.randn(64, 32, generator=generator) for _ in range(2))
    return a, b, (a + b).exp()


def test_nki_op_runs_in_eager():
    a, b, expected = _inputs()
    result = add_then_exp(a.to("neuron"), b.to("neuron"))
    assert result.device.type == "neuron"
    torch.testing.assert_close(result.cpu(), expected, rtol=1e-5, atol=1e-5)


def test_nki_op_compiles_as_one_graph_with_derived_fake():
    a, b, expected = _inputs()
    compiled = torch.compile(lambda x, y: add_then_exp(x, y) * 2, backend="neuron", fullgraph=True)
    result = compiled(a.to("neuron"), b.to("neuron"))
    torch.testing.assert_close(result.cpu(), expected * 2, rtol=1e-5, atol=1e-5)


def test_nki_op_fake_gives_shapes_without_running_kernels():
    with torch._subclasses.fake_tensor.FakeTensorMode():
        fake = add_then_exp(
            torch.empty(8, 16, device="neuron"), torch.empty(8, 16, device="neuron")
        )
    assert fake.shape == (8, 16) and fake.dtype == torch.float32


def test_wrap_nki_runs_kernel_on_torch_tensors_with_and_without_grid():
    a, b, _ = _inputs()
    wrapped = wrap_nki(add_kernel.func)
    for runnable in (wrapped, wrapped[1]):
        out = runnable(a.to("neuron"), b.to("neuron"))
        torch.testing.assert_close(out.cpu(), a + b, rtol=0, atol=0)
    assert wrap_nki(add_kernel) is add_kernel
