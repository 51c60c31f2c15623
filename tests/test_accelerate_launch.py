"""``accelerate launch --num_processes 2`` runs two ranks on two neuron devices through
accelerate's own neuron paths (MULTI_NEURON, the ``neuron`` c10d backend, its padded object
collectives), with no device or backend named anywhere."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import distributed_harness
import pytest
import torch

pytest.importorskip("accelerate", reason="accelerate is a pinned dev requirement")

SCRIPT = Path(__file__).with_name("accelerate_launch_script.py")


def _launcher() -> list[str]:
    """The ``accelerate`` command beside this interpreter, else the same CLI through -m."""
    command = Path(sys.executable).with_name("accelerate")
    if command.exists():
        return [str(command), "launch"]
    found = shutil.which("accelerate")
    return [found, "launch"] if found else [sys.executable, "-m", "accelerate.commands.launch"]


def _expected_weight() -> torch.Tensor:
    """The weight after one SGD step on the gradient averaged over the two ranks, on CPU."""
    torch.manual_seed(0)
    model = torch.nn.Linear(4, 2)
    grads = []
    for rank in range(2):
        model.zero_grad()
        model(torch.full((3, 4), float(rank + 1))).square().sum().backward()
        grads.append(model.weight.grad.clone())
    return model.weight.detach() - 0.1 * (grads[0] + grads[1]) / 2


def test_two_ranks_on_two_neuron_devices(tmp_path):
    if torch.neuron.device_count() < 2:
        pytest.skip("needs two neuron devices (OPENNEURON_DEVICES >= 2)")
    env = dict(os.environ, HF_HOME=str(tmp_path / "hf_home"), HF_HUB_OFFLINE="1")
    env.pop("LOCAL_RANK", None)
    command = _launcher() + [
        "--num_processes=2",
        "--num_machines=1",
        "--mixed_precision=no",
        "--dynamo_backend=no",
        f"--main_process_port={distributed_harness.free_port()}",
        str(SCRIPT),
        str(tmp_path),
    ]
    done = subprocess.run(
        command,
        env=env,
        cwd=Path(__file__).parent.parent,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    reports = [json.loads((tmp_path / f"rank{rank}.json").read_text()) for rank in range(2)]
    for rank, report in enumerate(reports):
        assert report["device"] == f"neuron:{rank}", report
        assert report["parameter_device"] == f"neuron:{rank}", report
        assert report["distributed_type"] == "DistributedType.MULTI_NEURON", report
        assert report["accelerate_backend"] == report["dist_backend"] == "neuron", report
        assert report["gathered"] == ["from rank 0", "from rank 1"], report
        assert report["broadcast"] == ["sent by rank 0"], report
        assert report["reduced"] == [3.0], report
        assert report["wrapper"] == "DistributedDataParallel", report
        assert report["fallback"] == {}, report
        torch.testing.assert_close(torch.tensor(report["weight"]), _expected_weight())
