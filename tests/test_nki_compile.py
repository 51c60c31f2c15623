"""An NKI kernel registered with openneuron.nki_op inside torch.compile(backend="neuron"): one
graph with no break, the kernel one extern node, results equal to eager and to PyTorch, and
its registered backward used by the compiled backward graph."""

import pytest
import torch
import torch.nn.functional as F

import openneuron
from examples.nki.norms import rmsnorm
from openneuron.compile import reset_compile_metrics
from openneuron.nki import torch_kernels
from tests.compile_fixtures import fresh_compiler  # noqa: F401  (fresh caches per test)
from tests.test_nki_torch import _rmsnorm_backward, _rmsnorm_backward_setup

# The simulator's rmsnorm against PyTorch's in fp32: measured max error 1e-6; 1e-5 allows for
# other shapes' rounding.
TOLERANCE = dict(rtol=1e-5, atol=1e-5)


@pytest.fixture(scope="module")
def rmsnorm_op():
    op = openneuron.nki_op("nki_compile_test::rmsnorm")(rmsnorm)
    op.register_autograd(_rmsnorm_backward, setup_context=_rmsnorm_backward_setup)
    return op


def reference(x, w):
    return F.rms_norm(torch.relu(x) * 2, (x.shape[-1],), w, eps=1e-6) + 1


def test_nki_op_is_one_extern_node_of_a_compiled_graph(rmsnorm_op):
    torch._dynamo.reset()
    reset_compile_metrics()

    def model(x, w):
        return rmsnorm_op(torch.relu(x) * 2, w, 1e-6) + 1

    x, w = torch.randn(130, 96), torch.randn(96)
    compiled = torch.compile(model, backend="neuron")
    before = torch_kernels.cache_info()["hits"] + torch_kernels.cache_info()["misses"]
    out = compiled(x.to("neuron"), w.to("neuron"))
    metrics = openneuron.compile_metrics()
    assert metrics["graphs"] == 1 and metrics["graph_breaks"] == {}
    assert metrics["lowered_extern"] == 1  # the kernel; relu, mul and add are fused around it
    assert torch_kernels.cache_info()["hits"] + torch_kernels.cache_info()["misses"] > before
    eager = model(x.to("neuron"), w.to("neuron"))
    torch.testing.assert_close(out.cpu(), eager.cpu(), rtol=0, atol=0)
    torch.testing.assert_close(out.cpu(), reference(x, w), **TOLERANCE)


def test_compiled_backward_uses_the_registered_autograd(rmsnorm_op):
    torch._dynamo.reset()

    def loss_fn(x, w):
        return (rmsnorm_op(torch.relu(x) * 2, w, 1e-6) + 1).square().sum()

    x0, w0 = torch.randn(64, 32), torch.randn(32)
    x = x0.to("neuron").requires_grad_()
    w = w0.to("neuron").requires_grad_()
    loss = torch.compile(loss_fn, backend="neuron")(x, w)
    loss.backward()
    xc, wc = x0.clone().requires_grad_(), w0.clone().requires_grad_()
    expected = reference(xc, wc).square().sum()
    expected.backward()
    torch.testing.assert_close(loss.cpu(), expected, rtol=1e-5, atol=1e-3)
    torch.testing.assert_close(x.grad.cpu(), xc.grad, **TOLERANCE)
    torch.testing.assert_close(w.grad.cpu(), wc.grad, rtol=1e-5, atol=1e-4)
