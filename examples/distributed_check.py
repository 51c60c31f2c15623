"""A torchrun job on neuron: collectives checked against CPU references, then DDP training.

Run on one machine:   torchrun --nproc-per-node 2 examples/distributed_check.py
Across two machines:  torchrun --nnodes 2 --node-rank N --nproc-per-node 1 \
                          --master-addr HOST --master-port PORT examples/distributed_check.py
(scripts/distributed_two_hosts.sh does the latter between two network namespaces.)
"""

import datetime
import os
import socket

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel


def main() -> None:
    local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    torch.neuron.set_device(local_rank % torch.neuron.device_count())
    device = torch.device("neuron", torch.neuron.current_device())
    # Named explicitly: with no backend, PyTorch 2.13 marks Gloo as the group's default backend
    # when the accelerator's backend is not NCCL, which DDP's logger then fails to find.
    dist.init_process_group("cpu:gloo,neuron:neuron", timeout=datetime.timedelta(seconds=30))
    rank, world = dist.get_rank(), dist.get_world_size()

    tensor = torch.full((1 << 16,), float(rank + 1), device=device)
    dist.all_reduce(tensor)
    expected = float(sum(r + 1 for r in range(world)))
    assert torch.all(tensor.cpu() == expected), tensor[:4]

    gathered = torch.empty(world * 4, device=device)
    dist.all_gather_into_tensor(gathered, torch.full((4,), float(rank), device=device))
    assert gathered.cpu().tolist() == [float(r) for r in range(world) for _ in range(4)]

    torch.manual_seed(0)
    model = DistributedDataParallel(
        torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(), torch.nn.Linear(64, 4)).to(
            device
        )
    )
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    data = torch.Generator().manual_seed(rank)
    for _ in range(3):
        x = torch.randn(8, 32, generator=data).to(device)
        loss = model(x).square().mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    # Every replica holds the same parameters after DDP steps.
    weights = model.module[0].weight.detach().clone()
    reference = weights.clone()
    dist.broadcast(reference, src=0)
    assert torch.equal(weights.cpu(), reference.cpu())

    print(f"rank {rank}/{world} on {socket.gethostname()} ({device}): collectives and DDP ok")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
