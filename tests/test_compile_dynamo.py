"""Dynamo on neuron tensors: what PyTorch's own Dynamo tests (tests/upstream/run_dynamo.py)
found, each checked against the same function on CPU tensors (frame and op counts, results).
"""

import pytest
import torch
import torch._dynamo
import torch._dynamo.testing

import openneuron  # noqa: F401


@pytest.fixture(autouse=True)
def fresh_dynamo():
    torch._dynamo.reset()
    yield
    torch._dynamo.reset()


def _counts(fn, device):
    """(frame_count, op_count, results) of fn compiled with a CompileCounter on `device`."""
    torch._dynamo.reset()
    a = torch.ones(10, device=device)
    b = torch.ones(10, device=device) * -2.0
    counter = torch._dynamo.testing.CompileCounter()
    compiled = torch._dynamo.optimize(counter)(fn)
    results = [compiled(a, b).cpu(), compiled(b, a).cpu()]
    return counter.frame_count, counter.op_count, results


def _print_first(a, b):
    print(a)
    x = a + b
    return x + 2.0


def _print_between(a, b):
    x = (a + b) / 2.0
    print(x)
    return x + 2.0


@pytest.mark.parametrize("fn", [_print_first, _print_between])
def test_printing_after_a_graph_break_captures_no_frame(fn, capsys):
    # Printing formats a host copy in openneuron.printing; Dynamo compiled those frames as
    # graphs of their own (7 frames for test_subgraphs.py's test_start1 where the CPU has 1).
    neuron_frames, neuron_ops, neuron_results = _counts(fn, "neuron")
    cpu_frames, cpu_ops, cpu_results = _counts(fn, "cpu")
    assert (neuron_frames, neuron_ops) == (cpu_frames, cpu_ops)
    for got, want in zip(neuron_results, cpu_results):
        torch.testing.assert_close(got, want, rtol=0, atol=0)
    assert "device='neuron:0'" in capsys.readouterr().out


def _addcdiv_(a, b, c):
    return a.clone().addcdiv_(b, c, value=5.0)


def _addcmul_(a, b, c):
    return a.clone().addcmul_(b, c, value=0.3)


@pytest.mark.parametrize("fn", [_addcdiv_, _addcmul_])
def test_in_place_addcdiv_and_addcmul_with_a_value_compile(fn):
    # Dynamo writes these as Inductor's prims.fma(product, 5.0, self), whose Python number
    # could not be passed for its Tensor argument (test_functions.py's test_addcdiv_); the
    # backend now runs it as the prim's eager kernel does, product * value + self, so the
    # result equals the CPU's through AOTAutograd bit for bit.
    torch.manual_seed(0)
    inputs = [torch.randn(64) for _ in range(3)]
    want = torch.compile(fn, backend="aot_eager")(*inputs)
    torch._dynamo.reset()
    got = torch.compile(fn, backend="neuron")(*[t.to("neuron") for t in inputs])
    torch.testing.assert_close(got.cpu(), want, rtol=0, atol=0)


def test_default_backend_routes_a_graph_that_only_makes_neuron_tensors():
    # No tensor input, but values on the device (test_repros.py's
    # test_odict_get_item_index_name under the default device): Inductor was chosen, as for a
    # CPU graph, and failed with KeyError 'neuron'; now ours compiles it.
    def fn(x, dtype):
        return torch.zeros(5, dtype=dtype, device="neuron") + 1, x * 2

    got = torch.compile(fn)(3, torch.float16)
    assert got[0].device.type == "neuron" and got[1] == 6
    torch.testing.assert_close(got[0].cpu(), torch.ones(5, dtype=torch.float16), rtol=0, atol=0)


@pytest.mark.parametrize("other", [4, 2.5, True])
def test_a_python_number_where_an_aten_call_takes_a_tensor(other):
    # aten.add.Tensor(ones, 4) in the graph (test_misc.py's test_is_tensor_like): the extern
    # call passed the int to the Tensor argument and failed ("Expected Tensor but got Int");
    # it now passes a wrapped-number scalar tensor, as PyTorch's argument parser does, so the
    # result dtype is the scalar promotion's.
    def fn(x):
        if torch.overrides.is_tensor_like(x):
            return (x * 2,)
        return (torch.ones(10, dtype=torch.float16, device="neuron") + x,)

    compiled = torch.compile(fn, backend="neuron", fullgraph=True)
    x = torch.randn(10, device="neuron")
    torch.testing.assert_close(compiled(x)[0].cpu(), fn(x)[0].cpu(), rtol=0, atol=0)
    got, want = compiled(other)[0], fn(other)[0]
    assert got.dtype == want.dtype == torch.float16
    torch.testing.assert_close(got.cpu(), want.cpu(), rtol=0, atol=0)
