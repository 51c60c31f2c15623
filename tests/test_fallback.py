"""The host fallback is never silent: counted per op, warned once, an error in strict mode."""

import os
import subprocess
import sys
import warnings

import pytest
import torch

import openneuron


def test_native_op_is_counted_as_executed_not_fallback():
    openneuron.clear_op_tracking()
    x = torch.ones(4, device="neuron")
    (x + x).cpu()
    executed = openneuron.get_executed_ops()
    assert executed.get("aten::add.Tensor", 0) == 1
    assert "aten::add.Tensor" not in openneuron.get_fallback_ops()


# float64 is not a NeuronCore type (design decision 4): ops on it stay on the host for good,
# which makes them the examples of the fallback here.


def test_fallback_op_is_counted_and_correct():
    openneuron.clear_op_tracking()
    x = torch.linspace(0.5, 2, 9, dtype=torch.float64)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = torch.kthvalue(x.to("neuron"), 3).values
        torch.kthvalue(x.to("neuron"), 3)
    torch.testing.assert_close(result.cpu(), torch.kthvalue(x, 3).values)
    assert result.device.type == "neuron"
    # Structured ops without a kernel decompose to their out= variant, which falls back.
    assert openneuron.get_fallback_ops()["aten::kthvalue.values"] == 2
    assert openneuron.get_executed_ops()["aten::kthvalue.values"] == 2


def test_first_fallback_of_an_op_warns_once():
    x = torch.arange(6.0, dtype=torch.float64, device="neuron")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        torch.nanmedian(x)
        torch.nanmedian(x)
    messages = [str(w.message) for w in caught if "nanmedian" in str(w.message)]
    assert len(messages) == 1, messages
    assert "host" in messages[0] and "OPENNEURON_STRICT" in messages[0]


def test_clear_op_tracking_resets_counts():
    torch.ones(2, device="neuron").cpu()
    assert openneuron.get_executed_ops()
    openneuron.clear_op_tracking()
    assert openneuron.get_executed_ops() == {} and openneuron.get_fallback_ops() == {}


def test_strict_mode_raises_naming_the_op_and_process_stays_usable():
    x = torch.arange(4.0, dtype=torch.float64, device="neuron")
    with openneuron.strict(), pytest.raises(NotImplementedError, match="aten::_cummax_helper"):
        torch.cummax(x, 0)
    # Native ops still run under strict mode, and everything runs again afterwards.
    with openneuron.strict():
        torch.testing.assert_close((x.float() * 2).cpu(), torch.arange(4.0) * 2)
    torch.testing.assert_close(
        torch.cummax(x, 0).values.cpu(),
        torch.cummax(torch.arange(4.0, dtype=torch.float64), 0).values,
    )


def test_strict_mode_from_environment():
    script = (
        "import torch\n"
        "x = torch.ones(2, device='neuron')\n"
        "print((x + 1).cpu().tolist())\n"
        "try:\n"
        "    torch.cummin(x.double(), 0)\n"
        "except NotImplementedError as e:\n"
        "    print('strict:', e)\n"
    )
    env = dict(os.environ, OPENNEURON_STRICT="1")
    done = subprocess.run(
        [sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert "[2.0, 2.0]" in done.stdout
    assert "strict:" in done.stdout and "aten::_cummin_helper" in done.stdout


def test_float64_runs_on_host_fallback_and_is_correct():
    openneuron.clear_op_tracking()
    a = torch.randn(5, dtype=torch.float64)
    b = torch.randn(5, dtype=torch.float64)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = a.to("neuron") + b.to("neuron")
    assert result.dtype == torch.float64 and result.device.type == "neuron"
    torch.testing.assert_close(result.cpu(), a + b, rtol=0, atol=0)
    assert openneuron.get_fallback_ops().get("aten::add.Tensor") == 1


def test_fallback_random_op_uses_the_neuron_generator():
    # bernoulli_ has no native kernel yet: its host run must still follow neuron seeds.
    draws = []
    for _ in range(2):
        generator = torch.Generator(device="neuron").manual_seed(7)
        x = torch.full((64,), 0.5, device="neuron")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            draws.append(torch.bernoulli(x, generator=generator).cpu())
    torch.testing.assert_close(draws[0], draws[1])


def test_fallback_keeps_the_cpu_layout_of_broadcast_arguments():
    """A broadcast (stride-0) argument reaches the host kernel still broadcast, so the result
    is laid out as on the CPU (TensorIterator follows the other operand's permuted strides
    here; a dense host copy of the broadcast made it contiguous). tensordot's float64 gradient
    differed from its meta kernel's strides this way."""
    ones = torch.ones(1, 1, 2, dtype=torch.float64)
    permuted = torch.randn(2, 2, 2, dtype=torch.float64).permute(1, 2, 0)
    expected = ones.expand(2, 2, 2) * permuted
    openneuron.clear_op_tracking()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = ones.to("neuron").expand(2, 2, 2) * permuted.to("neuron")
    assert openneuron.get_fallback_ops().get("aten::mul.Tensor", 0) >= 1
    assert got.stride() == expected.stride() == (2, 1, 4)
    torch.testing.assert_close(got.cpu(), expected, rtol=0, atol=0)
