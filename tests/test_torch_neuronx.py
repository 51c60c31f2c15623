"""``import torch_neuronx`` (TorchNeuron's import name) gives openneuron's package unless AWS's
is installed; it carries the native-backend names TorchNeuron's users import, the XLA-era ones
explain they are not provided, and accelerate and Transformers see the neuron device."""

import os

import pytest
import torch

import openneuron
import openneuron.torch_neuronx as ours


def _with_path_first(directory) -> str:
    return os.pathsep.join([str(directory), os.environ.get("PYTHONPATH", "")])


def test_fresh_interpreter_imports_openneuron_package(run_python):
    done = run_python(
        """
        import importlib.util
        import torch
        assert importlib.util.find_spec("torch_neuronx") is not None
        import torch_neuronx
        import openneuron.torch_neuronx
        print(torch_neuronx is openneuron.torch_neuronx, torch_neuronx.device_count())
        try:
            from torch_neuronx.xla_impl import ops
        except ImportError as error:
            print(error)
        """
    )
    assert done.returncode == 0, done.stderr
    first, explanation = done.stdout.splitlines()
    assert first.split() == ["True", str(torch.neuron.device_count())]
    # An XLA-era submodule explains itself instead of "No module named ...".
    assert "torch_neuronx.xla_impl belongs to the XLA-based torch-neuronx" in explanation
    assert "torch.compile(model, backend='neuron')" in explanation


def test_installed_aws_package_wins(run_python, tmp_path):
    package = tmp_path / "torch_neuronx"
    package.mkdir()
    (package / "__init__.py").write_text("MADE_BY = 'aws'\n")
    (package / "xla_impl.py").write_text("PRESENT = True\n")
    done = run_python(
        """
        import torch, torch_neuronx, torch_neuronx.xla_impl
        print(torch_neuronx.MADE_BY, torch_neuronx.xla_impl.PRESENT)
        """,
        PYTHONPATH=_with_path_first(tmp_path),
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["aws", "True"]


def test_accelerate_and_transformers_choose_neuron_with_no_setting(run_python):
    done = run_python(
        """
        import torch
        from accelerate import PartialState
        from accelerate.utils import is_neuron_available
        from transformers.utils import is_torch_neuron_available
        print(is_neuron_available(), is_torch_neuron_available(), PartialState().device)
        """
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["True", "True", "neuron"]


def test_module_names_reach_openneuron(restore_device):
    assert ours.device_count() == torch.neuron.device_count()
    ours.set_device(ours.device_count() - 1)
    assert ours.current_device() == torch.neuron.current_device() == ours.device_count() - 1
    assert ours.get_device_properties(0).total_memory == torch.neuron.mem_get_info(0)[1]
    assert ours.is_available() and ours.is_neuron_runtime_initialized()
    with ours.device(0):
        assert torch.ones(1, device="neuron").device == torch.device("neuron", 0)
    assert isinstance(ours.current_stream(), ours.Stream)
    for name in ours.__all__:
        assert getattr(ours, name) is not None, name


def test_op_tracking_reports_names():
    x = torch.arange(6.0, device="neuron")
    ours.clear_op_tracking()
    (x * 2).sum().item()
    assert "aten::mul.Tensor" in ours.get_executed_ops()
    assert ours.get_fallback_ops() == sorted(openneuron.get_fallback_ops())
    ours.clear_op_tracking()
    assert ours.get_executed_ops() == [] and ours.get_fallback_ops() == []


def test_memory_and_compile_metrics_are_openneuron_s():
    kept = torch.empty(1024, device="neuron")
    assert ours.memory_allocated() == torch.neuron.memory_allocated() >= kept.nbytes
    assert ours.get_dynamo_metrics() == openneuron.compile_metrics()


@pytest.mark.parametrize("name", ["trace", "analyze", "DataParallel", "nki_jit", "async_load"])
def test_xla_era_call_explains_it_is_not_provided(name):
    from openneuron.torch_neuronx import XlaApiNotSupportedError

    with pytest.raises(XlaApiNotSupportedError, match=rf"torch_neuronx\.{name} .*XLA"):
        getattr(ours, name)(torch.nn.Linear(2, 2), torch.ones(1, 2))


def test_unknown_submodule_is_an_ordinary_missing_module():
    with pytest.raises(ModuleNotFoundError):
        import torch_neuronx.no_such_module  # noqa: F401
