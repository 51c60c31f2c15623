"""One rank of ``accelerate launch --num_processes 2`` (run by test_accelerate_launch.py).

Written as a user would for any accelerator, with no device named: it reports where accelerate
put this rank, what its neuron-specific object collectives return, and the weights after one
data-parallel step, as JSON in ``<out_dir>/rank<N>.json``.
"""

import json
import sys
from pathlib import Path

import torch
import torch.distributed as dist
from accelerate import Accelerator
from accelerate.utils import broadcast_object_list, gather_object

import openneuron


def main(out_dir: str) -> None:
    accelerator = Accelerator()
    rank = accelerator.process_index
    openneuron.clear_op_tracking()
    report = {
        "device": str(accelerator.device),
        "distributed_type": str(accelerator.distributed_type),
        "accelerate_backend": accelerator.state.backend,
        "dist_backend": dist.get_backend(),
        # Both go through accelerate's neuron variants (padded byte tensors on the device).
        "gathered": gather_object([f"from rank {rank}"]),
        "broadcast": broadcast_object_list([f"sent by rank {rank}"]),
        "reduced": accelerator.reduce(
            torch.tensor([rank + 1.0], device=accelerator.device), "sum"
        ).tolist(),
    }

    torch.manual_seed(0)
    model = torch.nn.Linear(4, 2)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    model, optimizer = accelerator.prepare(model, optimizer)
    inputs = torch.full((3, 4), float(rank + 1), device=accelerator.device)
    accelerator.backward(model(inputs).square().sum())
    optimizer.step()
    report["wrapper"] = type(model).__name__
    report["weight"] = accelerator.unwrap_model(model).weight.detach().cpu().tolist()
    report["parameter_device"] = str(next(model.parameters()).device)
    report["fallback"] = openneuron.get_fallback_ops()
    Path(out_dir, f"rank{rank}.json").write_text(json.dumps(report))
    accelerator.end_training()


if __name__ == "__main__":
    main(sys.argv[1])
