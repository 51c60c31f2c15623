"""What each rank runs in the distributed tests (spawned by distributed_harness.launch).

Every collective is checked against a reference computed on the CPU from the inputs that every
rank can rebuild (inputs are a function of the rank), so no check trusts the transport.
"""

from __future__ import annotations

import datetime
import os
import time
import traceback

import torch
import torch.distributed as dist

# Integer-valued inputs in [-3, 3]: sums and products of up to 3 ranks are exact in every
# dtype, so reductions other than averages must match the CPU bit for bit.
FLOAT_DTYPES = [torch.float32, torch.bfloat16, torch.float16]
INT_DTYPES = [torch.int32, torch.int64, torch.int8, torch.uint8]
DTYPES = FLOAT_DTYPES + INT_DTYPES


def rank_input(rank: int, shape, dtype: torch.dtype, salt: int = 0) -> torch.Tensor:
    """The CPU tensor rank `rank` contributes; any rank can rebuild any other's."""
    generator = torch.Generator().manual_seed(1000 * rank + salt)
    low, high = (0, 4) if dtype == torch.uint8 else (-3, 4)
    values = torch.randint(low, high, shape, generator=generator)
    if dtype == torch.uint8 or dtype in INT_DTYPES:
        return values.to(dtype)
    # Keep products non-zero and sums away from cancellation: no element is 0.
    return torch.where(values == 0, torch.ones_like(values), values).to(dtype)


def device() -> torch.device:
    return torch.device("neuron", torch.neuron.current_device())


def check(actual: torch.Tensor, expected: torch.Tensor, what: str) -> None:
    torch.testing.assert_close(actual.cpu(), expected, msg=lambda m: f"{what}: {m}")


def init(rank: int, world_size: int, backend=None, timeout_s: float = 20.0, **kwargs) -> None:
    torch.neuron.set_device(rank % torch.neuron.device_count())
    dist.init_process_group(
        backend=backend,
        init_method=f"tcp://127.0.0.1:{os.environ['MASTER_PORT']}",
        rank=rank,
        world_size=world_size,
        timeout=datetime.timedelta(seconds=timeout_s),
        **kwargs,
    )


# ---- collectives ----------------------------------------------------------------------------


def reduce_reference(inputs, op) -> torch.Tensor:
    stacked = torch.stack([t.to(torch.float64) for t in inputs])
    if op == dist.ReduceOp.SUM:
        result = stacked.sum(0)
    elif op == dist.ReduceOp.PRODUCT:
        result = stacked.prod(0)
    elif op == dist.ReduceOp.MIN:
        result = stacked.min(0).values
    elif op == dist.ReduceOp.MAX:
        result = stacked.max(0).values
    elif op == dist.ReduceOp.AVG:
        result = stacked.sum(0) / len(inputs)
        if not inputs[0].is_floating_point():
            result = torch.trunc(result)
    else:
        raise ValueError(op)
    return result.to(inputs[0].dtype)


def reduce_ops_for(dtype):
    ops = [dist.ReduceOp.SUM, dist.ReduceOp.MIN, dist.ReduceOp.MAX, dist.ReduceOp.AVG]
    if dtype != torch.uint8 and dtype != torch.int8:
        ops.append(dist.ReduceOp.PRODUCT)  # 8-bit products of 3 ranks could overflow
    return ops


def scenario_collectives(rank: int, world: int) -> None:
    dev = device()
    shape = (5, 3)
    for dtype in DTYPES:
        everyone = [rank_input(r, shape, dtype) for r in range(world)]
        mine = everyone[rank]
        for op in reduce_ops_for(dtype):
            tensor = mine.to(dev)
            dist.all_reduce(tensor, op=op)
            check(tensor, reduce_reference(everyone, op), f"all_reduce {op} {dtype}")
            root = world - 1
            tensor = mine.to(dev)
            dist.reduce(tensor, dst=root, op=op)
            if rank == root:
                check(tensor, reduce_reference(everyone, op), f"reduce {op} {dtype}")
        if dtype.is_floating_point:
            factor = 0.5
            tensor = mine.to(dev)
            dist.all_reduce(tensor, op=dist._make_nccl_premul_sum(factor))
            expected = reduce_reference([t * factor for t in everyone], dist.ReduceOp.SUM)
            check(tensor, expected, f"all_reduce premul_sum {dtype}")
            tensor = mine.to(dev)
            dist.all_reduce(
                tensor, op=dist._make_nccl_premul_sum(torch.tensor(2.0, dtype=dtype, device=dev))
            )
            expected = reduce_reference([t * 2 for t in everyone], dist.ReduceOp.SUM)
            check(tensor, expected, f"all_reduce premul_sum tensor factor {dtype}")

        tensor = mine.to(dev)
        dist.broadcast(tensor, src=1)
        check(tensor, everyone[1], f"broadcast {dtype}")

        gathered = [torch.empty(shape, dtype=dtype, device=dev) for _ in range(world)]
        dist.all_gather(gathered, mine.to(dev))
        for r in range(world):
            check(gathered[r], everyone[r], f"all_gather[{r}] {dtype}")
        flat = torch.empty((world * shape[0], shape[1]), dtype=dtype, device=dev)
        dist.all_gather_into_tensor(flat, mine.to(dev))
        check(flat, torch.cat(everyone), f"all_gather_into_tensor {dtype}")

        root = 0
        gather_list = (
            [torch.empty(shape, dtype=dtype, device=dev) for _ in range(world)]
            if rank == root
            else None
        )
        dist.gather(mine.to(dev), gather_list, dst=root)
        if rank == root:
            for r in range(world):
                check(gather_list[r], everyone[r], f"gather[{r}] {dtype}")

        chunks = [rank_input(root, shape, dtype, salt=7 + r) for r in range(world)]
        out = torch.empty(shape, dtype=dtype, device=dev)
        dist.scatter(out, [c.to(dev) for c in chunks] if rank == root else None, src=root)
        check(out, chunks[rank], f"scatter {dtype}")

        lists = [
            [rank_input(r, shape, dtype, salt=20 + c) for c in range(world)] for r in range(world)
        ]
        for op in [dist.ReduceOp.SUM, dist.ReduceOp.MAX, dist.ReduceOp.AVG]:
            out = torch.empty(shape, dtype=dtype, device=dev)
            dist.reduce_scatter(out, [t.to(dev) for t in lists[rank]], op=op)
            expected = reduce_reference([lists[r][rank] for r in range(world)], op)
            check(out, expected, f"reduce_scatter {op} {dtype}")
            out = torch.empty(shape, dtype=dtype, device=dev)
            dist.reduce_scatter_tensor(out, torch.cat(lists[rank]).to(dev), op=op)
            check(out, expected, f"reduce_scatter_tensor {op} {dtype}")

        # Uneven all-to-all: rank r sends (r + d + 1) rows to rank d.
        sends = [rank_input(rank, (rank + d + 1, 2), dtype, salt=40 + d) for d in range(world)]
        expect = [rank_input(s, (s + rank + 1, 2), dtype, salt=40 + rank) for s in range(world)]
        out = torch.empty((sum(e.shape[0] for e in expect), 2), dtype=dtype, device=dev)
        dist.all_to_all_single(
            out,
            torch.cat(sends).to(dev),
            output_split_sizes=[e.shape[0] for e in expect],
            input_split_sizes=[s.shape[0] for s in sends],
        )
        check(out, torch.cat(expect), f"all_to_all_single uneven {dtype}")
        outs = [torch.empty(e.shape, dtype=dtype, device=dev) for e in expect]
        dist.all_to_all(outs, [s.to(dev) for s in sends])
        for s in range(world):
            check(outs[s], expect[s], f"all_to_all[{s}] {dtype}")
    # Each way the data can travel: whole in the fingerprint exchange (all-reduce up to 256 KiB,
    # all-gather and reduce-scatter up to 2 MiB per peer), all-reduce as a reduce-scatter
    # carried in it plus an all-gather (chunks up to 32 MiB by default, up to 4 MiB in the
    # 2-rank suite, which sets that limit; uneven here), then through the transport's
    # all-reduce, and all-gather and reduce-scatter as one message per pair.
    numel = 4200001  # chunks past 4 MiB: carried by default, the transport's in the 2-rank suite
    everyone = [rank_input(r, (numel,), torch.float32, salt=59) for r in range(world)]
    tensor = everyone[rank].to(dev)
    dist.all_reduce(tensor)
    check(tensor, reduce_reference(everyone, dist.ReduceOp.SUM), f"all_reduce of {numel}")
    for numel in (4097, 300001, 600001, 2400001):
        everyone = [rank_input(r, (numel,), torch.float32, salt=60) for r in range(world)]
        tensor = everyone[rank].to(dev)
        dist.all_reduce(tensor, op=dist.ReduceOp.MAX)
        check(tensor, reduce_reference(everyone, dist.ReduceOp.MAX), f"all_reduce of {numel}")
        flat = torch.empty(world * numel, device=dev)
        dist.all_gather_into_tensor(flat, everyone[rank].to(dev))
        check(flat, torch.cat(everyone), f"all_gather_into_tensor of {numel}")
        out = torch.empty(numel, device=dev)
        sources = [rank_input(r, (world * numel,), torch.float32, salt=61) for r in range(world)]
        dist.reduce_scatter_tensor(out, sources[rank].to(dev))
        chunks = [t[rank * numel : (rank + 1) * numel] for t in sources]
        check(out, reduce_reference(chunks, dist.ReduceOp.SUM), f"reduce_scatter of {numel}")
    dist.barrier()


def scenario_staged_collectives(rank: int, world: int) -> None:
    """The pinned-host staging path (OPENNEURON_DIST_STAGING=1 in this process)."""
    assert os.environ.get("OPENNEURON_DIST_STAGING") == "1"
    dev = device()
    everyone = [rank_input(r, (64,), torch.float32) for r in range(world)]
    tensor = everyone[rank].to(dev)
    dist.all_reduce(tensor)
    check(tensor, reduce_reference(everyone, dist.ReduceOp.SUM), "staged all_reduce")
    flat = torch.empty(64 * world, device=dev)
    dist.all_gather_into_tensor(flat, everyone[rank].to(dev))
    check(flat, torch.cat(everyone), "staged all_gather_into_tensor")
    out = torch.empty(64 // world * world // world, device=dev)
    source = torch.cat([everyone[rank][: 64 // world * world // world]] * world).to(dev)
    dist.reduce_scatter_tensor(out, source)
    expected = sum(e[: out.numel()] for e in everyone)
    check(out, expected, "staged reduce_scatter_tensor")
    peer_tensor = torch.empty(8, device=dev)
    if rank == 0:
        dist.send(torch.arange(8.0, device=dev), dst=1)
    elif rank == 1:
        dist.recv(peer_tensor, src=0)
        check(peer_tensor, torch.arange(8.0), "staged recv")


def scenario_cpu_tensors(rank: int, world: int) -> None:
    """CPU tensors through the same group (Gloo, or the neuron backend when it is the only one)."""
    everyone = [rank_input(r, (4,), torch.float32) for r in range(world)]
    tensor = everyone[rank].clone()
    dist.all_reduce(tensor)
    check(tensor, reduce_reference(everyone, dist.ReduceOp.SUM), "cpu all_reduce")
    objects = [None] * world
    dist.all_gather_object(objects, {"rank": rank})
    assert objects == [{"rank": r} for r in range(world)], objects


# ---- streams and Work -----------------------------------------------------------------------


def long_chain(x: torch.Tensor, steps: int = 12) -> torch.Tensor:
    """Work that is still queued on the stream when the host returns."""
    weight = torch.eye(x.shape[-1], device=x.device)
    for _ in range(steps):
        x = x @ weight
    return x


def scenario_stream_ordering(rank: int, world: int) -> None:
    dev = device()
    n = 384
    base = torch.full((n, n), float(rank + 1), device=dev)
    # The all-reduce must read the chain's result, not the buffer before the chain wrote it.
    produced = long_chain(base)
    dist.all_reduce(produced)
    expected = float(sum(r + 1 for r in range(world)))
    check(produced[:2, :2], torch.full((2, 2), expected), "all_reduce after pending work")

    # A side stream: the collective follows that stream's work, and wait() orders the consumer.
    side = torch.neuron.Stream()
    with torch.neuron.stream(side):
        on_side = long_chain(torch.full((n, n), 2.0 * (rank + 1), device=dev))
        work = dist.all_reduce(on_side, async_op=True)
        work.wait()
        doubled = on_side * 2
    side.synchronize()
    check(doubled[:1, :1], torch.full((1, 1), 4.0 * expected), "wait() on a side stream")


def scenario_work_semantics(rank: int, world: int) -> None:
    dev = device()
    tensor = torch.full((1024,), float(rank), device=dev)
    dist.barrier()
    if rank == 1:
        time.sleep(0.5)  # rank 0's collective cannot finish before rank 1 joins
    started = time.monotonic()
    work = dist.all_reduce(tensor, async_op=True)
    issue_s = time.monotonic() - started
    if rank == 0:
        assert issue_s < 0.3, f"async all_reduce blocked the host for {issue_s:.3f} s"
        assert not work.is_completed(), "completed before the peer joined"
        # Compute overlaps the pending collective.
        side = torch.ones(64, 64, device=dev) @ torch.ones(64, 64, device=dev)
        check(side[:1, :1], torch.full((1, 1), 64.0), "compute during a pending collective")
    future = work.get_future()
    values = future.wait()
    assert work.is_completed() and work.is_success()
    expected = float(sum(range(world)))
    check(values[0], torch.full((1024,), expected), "future value")
    chained = work.get_future().then(lambda fut: fut.value()[0].sum().item())
    assert chained.wait() == expected * 1024
    work.wait()
    check(tensor, torch.full((1024,), expected), "after wait()")

    # record_stream: a buffer freed while its collective is pending is not handed out again.
    dist.barrier()
    if rank == 1:
        time.sleep(0.3)
    pending = torch.full((1 << 16,), 1.0, device=dev)
    address = pending.data_ptr()
    work = dist.all_reduce(pending, async_op=True)
    del pending
    reused = torch.empty(1 << 16, device=dev)
    if rank == 0:
        assert reused.data_ptr() != address, "a buffer in use by a collective was reused"
    work.wait()
    torch.neuron.synchronize()


def scenario_p2p(rank: int, world: int) -> None:
    dev = device()
    right, left = (rank + 1) % world, (rank - 1) % world
    # A ring with plain isend/irecv (not batched): must not deadlock.
    outgoing = torch.full((1000,), float(rank), device=dev)
    incoming = torch.empty(1000, device=dev)
    send = dist.isend(outgoing, dst=right)
    recv = dist.irecv(incoming, src=left)
    send.wait()
    recv.wait()
    check(incoming, torch.full((1000,), float(left)), "isend/irecv ring")
    # The same ring batched.
    incoming = torch.empty(1000, device=dev)
    ops = [dist.P2POp(dist.isend, outgoing, right), dist.P2POp(dist.irecv, incoming, left)]
    for request in dist.batch_isend_irecv(ops):
        request.wait()
    check(incoming, torch.full((1000,), float(left)), "batch_isend_irecv ring")
    # Blocking send/recv and a ring that passes a token all the way round.
    token = torch.zeros(3, device=dev)
    if rank == 0:
        dist.send(token + 1, dst=right)
        dist.recv(token, src=left)
        check(token, torch.full((3,), float(world)), "token ring")
    else:
        dist.recv(token, src=left)
        dist.send(token + 1, dst=right)
    # Receive from any source: rank 0 hears once from every other rank, in whatever order.
    if rank == 0:
        senders = []
        for _ in range(world - 1):
            anywhere = torch.empty(2, device=dev)
            sender = dist.recv(anywhere)
            check(anywhere, torch.full((2,), float(sender)), "recv from any source")
            senders.append(sender)
        assert sorted(senders) == list(range(1, world)), senders
    else:
        dist.send(torch.full((2,), float(rank), device=dev), dst=0)
    # A receive into a tensor Python keeps, then an any-source receive whose sender the host
    # waits for: the communication stream releases the first receive's buffers (which takes
    # the GIL) while the host waits, so the wait must not hold the GIL. A tag of its own keeps
    # the any-source receive from matching the first message.
    kept = torch.empty(64, device=dev)
    for round_ in range(20):
        if rank == 0:
            dist.recv(kept, src=1, tag=7)
            sender = dist.recv(torch.empty(1, device=dev))
            assert sender in range(1, world), sender
        elif rank == 1:
            dist.send(torch.full((64,), float(round_), device=dev), dst=0, tag=7)
            dist.send(torch.ones(1, device=dev), dst=0)
    if rank == 0:
        check(kept, torch.full((64,), 19.0), "receives before any-source receives")
    dist.barrier()


def scenario_groups(rank: int, world: int) -> None:
    dev = device()
    pair = [0, world - 1]
    group = dist.new_group(pair)
    if rank in pair:
        tensor = torch.full((4,), float(rank + 1), device=dev)
        dist.all_reduce(tensor, group=group)
        check(tensor, torch.full((4,), float(sum(r + 1 for r in pair))), "new_group all_reduce")
        dist.barrier(group=group)
    subgroup, subgroups = dist.new_subgroups(group_size=1 if world == 3 else 2)
    tensor = torch.full((2,), float(rank), device=dev)
    dist.all_reduce(tensor, group=subgroup)
    members = dist.get_process_group_ranks(subgroup)
    check(tensor, torch.full((2,), float(sum(members))), "subgroup all_reduce")
    splits = [[r] for r in range(world)] if world == 3 else [[0, 1]]
    split = dist.split_group(split_ranks=splits)
    assert split is not None
    tensor = torch.full((2,), float(rank + 10), device=dev)
    dist.all_reduce(tensor, group=split)
    members = dist.get_process_group_ranks(split)
    check(tensor, torch.full((2,), float(sum(m + 10 for m in members))), "split_group all_reduce")
    dist.barrier(group=split)
    # Coalesced all-reduces and all-gathers.
    a = torch.full((3,), float(rank), device=dev)
    b = torch.full((5,), float(rank * 2), device=dev)
    with dist._coalescing_manager(device=dev, async_ops=True) as manager:
        dist.all_reduce(a)
        dist.all_reduce(b)
    manager.wait()
    check(a, torch.full((3,), float(sum(range(world)))), "coalesced all_reduce a")
    check(b, torch.full((5,), float(2 * sum(range(world)))), "coalesced all_reduce b")
    outs = [torch.empty(2 * world, device=dev) for _ in range(2)]
    ins = [torch.full((2,), float(rank + i), device=dev) for i in range(2)]
    with dist._coalescing_manager(device=dev):
        for out, inp in zip(outs, ins):
            dist.all_gather_into_tensor(out, inp)
    for i, out in enumerate(outs):
        expected = torch.cat([torch.full((2,), float(r + i)) for r in range(world)])
        check(out, expected, f"coalesced all_gather_into_tensor {i}")
    dist.barrier()


def scenario_default_backend(rank: int, world: int) -> None:
    assert dist.get_default_backend_for_device("neuron") == "neuron"
    assert "neuron:neuron" in dist.get_backend_config(), dist.get_backend_config()


# ---- parallelism on top ---------------------------------------------------------------------


def _mlp_batches(batch, features, classes, steps, seed=1):
    data = torch.Generator().manual_seed(seed)
    return [
        (
            torch.randn(batch, features, generator=data),
            torch.randint(0, classes, (batch,), generator=data),
        )
        for _ in range(steps)
    ]


def _ddp_matches_single(
    rank, world, model_of, batches_of, loss_of, make_optimizer, tolerance, **ddp_kwargs
):
    """Trains DDP on this rank's half of each batch and a local model on the whole batch."""
    from torch.nn.parallel import DistributedDataParallel as DDP

    dev = device()
    reference = model_of().to(dev)
    replica = model_of().to(dev)
    model = DDP(replica, **ddp_kwargs)
    ref_opt = make_optimizer(reference)
    opt = make_optimizer(model)
    for batch in batches_of():
        per_rank = batch[0].shape[0] // world
        local = tuple(t[rank * per_rank : (rank + 1) * per_rank].to(dev) for t in batch)
        whole = tuple(t[: per_rank * world].to(dev) for t in batch)
        opt.zero_grad()
        loss_of(model, *local).backward()
        opt.step()
        ref_opt.zero_grad()
        loss_of(reference, *whole).backward()
        ref_opt.step()
    for (name, mine), theirs in zip(replica.named_parameters(), reference.parameters()):
        torch.testing.assert_close(
            mine.detach().cpu(),
            theirs.detach().cpu(),
            **tolerance,
            msg=lambda m, n=name: f"{n}: {m}",
        )


def scenario_ddp_mlp(rank: int, world: int) -> None:
    from bench.workloads import classification_loss

    def model_of():
        torch.manual_seed(0)
        return torch.nn.Sequential(
            torch.nn.Linear(64, 128),
            torch.nn.ReLU(),
            torch.nn.Linear(128, 128),
            torch.nn.ReLU(),
            torch.nn.Linear(128, 10),
        )

    def sgd(module):
        return torch.optim.SGD(module.parameters(), lr=0.05, momentum=0.9)

    tolerance = dict(rtol=1e-4, atol=1e-5)  # the W1 workload's fp32 tolerance
    batches = lambda: _mlp_batches(32 * world, 64, 10, 3)  # noqa: E731
    # Small buckets so several all-reduces overlap the backward pass.
    for options in (
        dict(bucket_cap_mb=0.02),
        dict(bucket_cap_mb=0.02, gradient_as_bucket_view=True),
        dict(static_graph=True),
    ):
        _ddp_matches_single(
            rank, world, model_of, batches, classification_loss, sgd, tolerance, **options
        )

    # no_sync: two micro-batches accumulate locally, the second all-reduces the sum.
    from torch.nn.parallel import DistributedDataParallel as DDP

    dev = device()
    model = DDP(model_of().to(dev))
    reference = model_of().to(dev)
    (batch,) = _mlp_batches(16 * world * 2, 64, 10, 1)
    x, y = batch
    per_rank = 16
    for micro in range(2):
        offset = micro * per_rank * world
        local = (
            x[offset + rank * per_rank : offset + (rank + 1) * per_rank].to(dev),
            y[offset + rank * per_rank : offset + (rank + 1) * per_rank].to(dev),
        )
        if micro == 0:
            with model.no_sync():
                classification_loss(model, *local).backward()
            grad = next(model.parameters()).grad.clone()
        else:
            classification_loss(model, *local).backward()
        whole = (
            x[offset : offset + per_rank * world].to(dev),
            y[offset : offset + per_rank * world].to(dev),
        )
        classification_loss(reference, *whole).backward()
    # After no_sync the first gradient was this rank's own, not the average.
    local_only = model_of().to(dev)
    classification_loss(
        local_only,
        x[rank * per_rank : (rank + 1) * per_rank].to(dev),
        y[rank * per_rank : (rank + 1) * per_rank].to(dev),
    ).backward()
    torch.testing.assert_close(grad.cpu(), next(local_only.parameters()).grad.cpu(), **tolerance)
    for mine, theirs in zip(model.parameters(), reference.parameters()):
        torch.testing.assert_close(mine.grad.cpu(), theirs.grad.cpu(), **tolerance)


def scenario_ddp_gpt2(rank: int, world: int) -> None:
    import transformers

    from bench.workloads import causal_lm_loss, get_workload

    sizes = get_workload("gpt2").sizes["small"]

    def model_of():
        torch.manual_seed(0)
        config = transformers.GPT2Config(
            vocab_size=sizes["vocab"],
            n_positions=128,
            n_embd=128,
            n_layer=2,
            n_head=4,
            resid_pdrop=0.0,
            embd_pdrop=0.0,
            attn_pdrop=0.0,
        )
        return transformers.GPT2LMHeadModel(config).train()

    def batches():
        data = torch.Generator().manual_seed(1)
        return [
            (torch.randint(0, sizes["vocab"], (2 * world, 32), generator=data),) for _ in range(2)
        ]

    def adamw(module):
        return torch.optim.AdamW(module.parameters(), lr=1e-3)

    tolerance = dict(rtol=1e-3, atol=1e-4)  # the W3 workload's tolerance
    _ddp_matches_single(
        rank, world, model_of, batches, causal_lm_loss, adamw, tolerance, bucket_cap_mb=1
    )


def scenario_expert_parallel(rank: int, world: int) -> None:
    """Expert parallelism as MoE layers do it: each rank hosts a slice of the experts; tokens
    are routed (top-1) to the rank that hosts their expert with all_to_all_single and uneven
    splits, computed there with torch._grouped_mm, and sent back. Every token must reach the
    rank of its expert and come back as one process computing every expert would give it."""
    dev = device()
    experts, hidden, tokens = 4 * world, 16, 24
    generator = torch.Generator().manual_seed(7)
    weights = torch.randn(experts, hidden, hidden, generator=generator)  # every rank alike
    x = torch.randn(tokens, hidden, generator=torch.Generator().manual_seed(100 + rank))
    expert_of = torch.randint(0, experts, (tokens,), generator=torch.Generator().manual_seed(rank))
    per_rank = experts // world

    # Sort by expert (so by destination rank) and tell each rank how many rows it gets.
    order = torch.argsort(expert_of, stable=True)
    send_x, send_ids = x[order].to(dev), expert_of[order].to(torch.int32).to(dev)
    send_counts = torch.histc(send_ids // per_rank, bins=world, min=0, max=world - 1)
    recv_counts = torch.empty_like(send_counts)
    dist.all_to_all_single(recv_counts, send_counts)
    send_splits = send_counts.cpu().long().tolist()
    recv_splits = recv_counts.cpu().long().tolist()
    received = torch.empty(sum(recv_splits), hidden, device=dev)
    received_ids = torch.empty(sum(recv_splits), dtype=torch.int32, device=dev)
    dist.all_to_all_single(received, send_x, recv_splits, send_splits)
    dist.all_to_all_single(received_ids, send_ids, recv_splits, send_splits)
    local_ids = received_ids.cpu()
    assert ((local_ids // per_rank) == rank).all(), f"tokens for other ranks: {local_ids}"

    # The local experts' products in one grouped kernel, then back to the senders.
    local_order = torch.argsort(received_ids, stable=True)
    local_counts = torch.histc(
        received_ids[local_order] - rank * per_rank, bins=per_rank, min=0, max=per_rank - 1
    )
    offsets = torch.cumsum(local_counts, 0, dtype=torch.int32)
    local_weights = weights[rank * per_rank : (rank + 1) * per_rank].to(dev)
    computed = torch._grouped_mm(received[local_order], local_weights, offsets)
    answered = torch.empty_like(computed)
    answered[local_order] = computed
    returned = torch.empty(tokens, hidden, device=dev)
    dist.all_to_all_single(returned, answered, send_splits, recv_splits)
    result = torch.empty_like(returned)
    result[order.to(dev)] = returned

    expected = torch.stack([x[t] @ weights[expert_of[t]] for t in range(tokens)])
    check(result, expected, "expert-parallel MoE layer")


def _mlp_block(dim=16, hidden=32):
    torch.manual_seed(3)
    return torch.nn.Sequential(
        torch.nn.LayerNorm(dim),
        torch.nn.Linear(dim, hidden),
        torch.nn.GELU(),
        torch.nn.Linear(hidden, dim),
    )


def scenario_tensor_parallel(rank: int, world: int) -> None:
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.tensor import Shard
    from torch.distributed.tensor.parallel import (
        ColwiseParallel,
        RowwiseParallel,
        SequenceParallel,
        parallelize_module,
    )

    dev = device()
    mesh = init_device_mesh("neuron", (world,))
    x = torch.randn(4, 8, 16, generator=torch.Generator().manual_seed(5))
    reference = _mlp_block().to(dev)
    expected = reference(x.to(dev))
    expected.sum().backward()

    tp = parallelize_module(
        _mlp_block().to(dev), mesh, {"1": ColwiseParallel(), "3": RowwiseParallel()}
    )
    out = tp(x.to(dev))
    out.sum().backward()
    torch.testing.assert_close(out.cpu(), expected.cpu(), rtol=1e-5, atol=1e-5)
    for (name, mine), theirs in zip(tp.named_parameters(), reference.parameters()):
        grad = mine.grad.full_tensor() if hasattr(mine.grad, "full_tensor") else mine.grad
        torch.testing.assert_close(
            grad.cpu(), theirs.grad.cpu(), rtol=1e-5, atol=1e-5, msg=lambda m, n=name: f"{n}: {m}"
        )

    # Sequence parallel: the norm runs on sequence shards, the linears tensor-parallel.
    sp = parallelize_module(
        _mlp_block().to(dev),
        mesh,
        {
            "0": SequenceParallel(),
            "1": ColwiseParallel(input_layouts=Shard(1)),
            "3": RowwiseParallel(output_layouts=Shard(1)),
        },
    )
    seq = 8 // world * world
    local = x[:, rank * (seq // world) : (rank + 1) * (seq // world)].to(dev)
    out = sp(local)
    torch.testing.assert_close(
        out.cpu(),
        expected[:, rank * (seq // world) : (rank + 1) * (seq // world)].detach().cpu(),
        rtol=1e-5,
        atol=1e-5,
    )


def scenario_fsdp2_llama(rank: int, world: int) -> None:
    import transformers
    from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard

    from bench.workloads import causal_lm_loss, get_workload

    sizes = get_workload("llama").sizes["small"]
    dev = device()

    def model_of():
        torch.manual_seed(0)
        config = transformers.LlamaConfig(
            vocab_size=sizes["vocab"],
            hidden_size=64,
            intermediate_size=128,
            num_hidden_layers=2,
            num_attention_heads=4,
            num_key_value_heads=2,
            max_position_embeddings=64,
            attention_dropout=0.0,
            attn_implementation="sdpa",
        )
        return transformers.LlamaForCausalLM(config).to(dev).train()

    data = torch.Generator().manual_seed(1)
    batches = [torch.randint(0, sizes["vocab"], (2 * world, 16), generator=data) for _ in range(2)]
    reference = model_of()
    ref_opt = torch.optim.AdamW(reference.parameters(), lr=1e-3)
    model = model_of()
    policy = MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=torch.float32)
    for layer in model.model.layers:
        fully_shard(layer, mp_policy=policy)
    fully_shard(model, mp_policy=policy)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    for tokens in batches:
        local = tokens[rank * 2 : (rank + 1) * 2].to(dev)
        opt.zero_grad()
        loss = causal_lm_loss(model, local)
        loss.backward()
        opt.step()
        ref_opt.zero_grad()
        with torch.autocast("neuron", dtype=torch.bfloat16):
            ref_loss = causal_lm_loss(reference, tokens.to(dev))
        ref_loss.backward()
        ref_opt.step()
    # bf16 parameters in compute: the W5 workload's tolerance.
    for (name, mine), theirs in zip(model.named_parameters(), reference.parameters()):
        torch.testing.assert_close(
            mine.full_tensor().cpu(),
            theirs.detach().cpu(),
            rtol=2e-2,
            atol=2e-2,
            msg=lambda m, n=name: f"{n}: {m}",
        )


def scenario_fsdp2_cpu_offload(rank: int, world: int) -> None:
    from torch.distributed.fsdp import CPUOffloadPolicy, fully_shard

    dev = device()
    reference = _mlp_block().to(dev)
    model = _mlp_block().to(dev)
    fully_shard(model, offload_policy=CPUOffloadPolicy())
    assert next(model.parameters()).to_local().device.type == "cpu"
    x = torch.randn(4, 8, 16, generator=torch.Generator().manual_seed(5))
    per_rank = 4 // world if world <= 4 else 1
    local = x[rank * per_rank : (rank + 1) * per_rank]
    model(local.to(dev)).sum().backward()
    reference(x[: per_rank * world].to(dev)).sum().backward()
    for mine, theirs in zip(model.parameters(), reference.parameters()):
        # FSDP averages the per-rank sums: the reference's sum over all ranks divided by world.
        torch.testing.assert_close(
            mine.grad.full_tensor().cpu(), theirs.grad.cpu() / world, rtol=1e-5, atol=1e-5
        )


def scenario_checkpoint_save(rank: int, world: int, directory: str) -> dict:
    """Saves a tensor-parallel MLP with torch.distributed.checkpoint; rank 0 keeps the full state
    too."""
    import torch.distributed.checkpoint as dcp
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.tensor.parallel import (
        ColwiseParallel,
        RowwiseParallel,
        parallelize_module,
    )

    dev = device()
    mesh = init_device_mesh("neuron", (world,))
    model = parallelize_module(
        _mlp_block().to(dev), mesh, {"1": ColwiseParallel(), "3": RowwiseParallel()}
    )
    with torch.no_grad():
        for parameter in model.parameters():
            parameter.add_(0.25)  # differ from a freshly built block
    state = model.state_dict()
    dcp.save(state, checkpoint_id=os.path.join(directory, "dcp"))
    full = {
        k: (v.full_tensor() if hasattr(v, "full_tensor") else v).cpu() for k, v in state.items()
    }
    if rank == 0:
        torch.save(full, os.path.join(directory, "full.pt"))
    return {"saved": sorted(state)}


def scenario_destroy_then_compute(rank: int, world: int) -> None:
    dist.destroy_process_group()
    x = torch.arange(6.0, device=device())
    check(x * 2, torch.arange(6.0) * 2, "compute after destroy_process_group")
    torch.neuron.synchronize()


SCENARIOS = {
    "default_backend": scenario_default_backend,
    "collectives": scenario_collectives,
    "cpu_tensors": scenario_cpu_tensors,
    "stream_ordering": scenario_stream_ordering,
    "work_semantics": scenario_work_semantics,
    "p2p": scenario_p2p,
    "groups": scenario_groups,
    "ddp_mlp": scenario_ddp_mlp,
    "ddp_gpt2": scenario_ddp_gpt2,
    "tensor_parallel": scenario_tensor_parallel,
    "fsdp2_llama": scenario_fsdp2_llama,
    "fsdp2_cpu_offload": scenario_fsdp2_cpu_offload,
    "staged_collectives": scenario_staged_collectives,
    "expert_parallel": scenario_expert_parallel,
}


def run_suite(rank: int, world: int, names, backend=None, checkpoint_dir=None) -> dict:
    """Runs the named scenarios in order; stops at the first failure (later ones would only
    wait for a rank that left the sequence) and reports each one's outcome."""
    init(rank, world, backend=backend, device_id=torch.device("neuron", rank % 2))
    results = {}
    failed = None
    for name in names:
        if failed:
            results[name] = f"not run: {failed} failed first"
            continue
        started = time.monotonic()
        try:
            if name == "checkpoint_save":
                scenario_checkpoint_save(rank, world, checkpoint_dir)
            else:
                SCENARIOS[name](rank, world)
            results[name] = f"ok ({time.monotonic() - started:.1f} s)"
        except Exception:
            results[name] = "FAILED\n" + traceback.format_exc()
            failed = name
    if not failed:
        scenario_destroy_then_compute(rank, world)
    return results


# ---- failures -------------------------------------------------------------------------------


def failure_dead_peer(rank: int, world: int, mode: str) -> dict:
    """Rank 1 dies (or stalls) before joining an all-reduce; rank 0 must raise, not hang."""
    # No backend named: the default for the neuron accelerator must be the neuron backend.
    init(rank, world, backend=None, timeout_s=4.0)
    config = dist.get_backend_config()
    dist.barrier()
    if rank == 1:
        if mode == "killed":
            os._exit(3)
        time.sleep(60)  # stalled: the parent kills this rank once rank 0 has reported
    tensor = torch.ones(1 << 14, device=device())
    started = time.monotonic()
    try:
        dist.all_reduce(tensor)
        tensor.cpu()
    except Exception as error:
        elapsed = time.monotonic() - started
        # The device stays usable after the failure.
        check(torch.ones(3, device=device()) + 1, torch.full((3,), 2.0), "compute after failure")
        return {
            "raised": f"{type(error).__name__}: {error}",
            "elapsed_s": elapsed,
            "config": config,
        }
    return {"raised": None, "elapsed_s": time.monotonic() - started, "config": config}


def failure_mismatch(rank: int, world: int) -> dict:
    """Collectives whose shapes, dtypes or kinds differ between ranks (run with
    TORCH_DISTRIBUTED_DEBUG=DETAIL)."""
    init(rank, world, backend="neuron", timeout_s=10.0)
    dev = device()
    errors = {}
    cases = {
        "shape": lambda: dist.all_reduce(torch.ones(4 + rank, device=dev)),
        "dtype": lambda: dist.all_reduce(
            torch.ones(4, device=dev, dtype=torch.float32 if rank == 0 else torch.int32)
        ),
        "op": lambda: (
            dist.all_reduce(torch.ones(4, device=dev))
            if rank == 0
            else dist.broadcast(torch.ones(4, device=dev), src=0)
        ),
    }
    for name, case in cases.items():
        try:
            case()
            torch.neuron.synchronize()
            errors[name] = None
        except Exception as error:
            errors[name] = f"{type(error).__name__}: {error}"
    # Matching collectives still work afterwards.
    tensor = torch.ones(4, device=dev)
    dist.all_reduce(tensor)
    check(tensor, torch.full((4,), float(world)), "all_reduce after mismatches")
    return errors


def default_group(rank: int, world: int) -> dict:
    """A group made with no backend named and no debug mode: DDP runs on it as on CUDA with
    NCCL, and collectives whose shapes, dtypes or kinds differ between ranks raise clear errors
    (the transport would abort the process) and leave the group usable."""
    init(rank, world, backend=None, timeout_s=10.0)
    dev = device()

    def model_of():
        torch.manual_seed(0)
        return torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 4))

    def loss_of(model, x, y):
        return torch.nn.functional.cross_entropy(model(x), y)

    _ddp_matches_single(
        rank,
        world,
        model_of,
        lambda: _mlp_batches(8 * world, 8, 4, 2),
        loss_of,
        lambda m: torch.optim.SGD(m.parameters(), lr=0.1),
        dict(rtol=1e-4, atol=1e-5),  # the W1 workload's fp32 tolerance
    )
    errors = {}
    cases = {
        "shape": lambda: dist.all_reduce(torch.ones(4 + rank, device=dev)),
        "dtype": lambda: dist.all_reduce(
            torch.ones(4, device=dev, dtype=torch.float32 if rank == 0 else torch.int32)
        ),
        "op": lambda: (
            dist.all_reduce(torch.ones(4, device=dev))
            if rank == 0
            else dist.broadcast(torch.ones(4, device=dev), src=0)
        ),
        "gather_size": lambda: dist.all_gather_into_tensor(
            torch.empty(world * (3 + rank), device=dev), torch.ones(3 + rank, device=dev)
        ),
        # Sizes on either side of the old 16 KiB carry limit, and a carried all-reduce against
        # a broadcast that carries nothing.
        "large_shape": lambda: dist.all_reduce(torch.ones(8192 + rank, device=dev)),
        "small_and_large": lambda: dist.all_reduce(torch.ones(4096 * (1 + rank), device=dev)),
        "large_op": lambda: (
            dist.all_reduce(torch.ones(8192, device=dev))
            if rank == 0
            else dist.broadcast(torch.ones(8192, device=dev), src=0)
        ),
        "large_scatter": lambda: dist.reduce_scatter_tensor(
            torch.empty(8192 + rank, device=dev), torch.ones(world * (8192 + rank), device=dev)
        ),
        "large_gather": lambda: dist.all_gather_into_tensor(
            torch.empty(world * (8192 + rank), device=dev), torch.ones(8192 + rank, device=dev)
        ),
        # Past 256 KiB: all-reduce in chunks on both ranks, whole against chunks, chunks against
        # the transport's all-reduce; all-gather carried against one message per pair.
        "chunked_shape": lambda: dist.all_reduce(torch.ones(300000 + rank, device=dev)),
        "whole_and_chunked": lambda: dist.all_reduce(torch.ones(60000 * (1 + rank), device=dev)),
        "chunked_and_transport": lambda: dist.all_reduce(
            torch.ones(600000 * (1 + 3 * rank), device=dev)
        ),
        "carried_and_pairwise_gather": lambda: dist.all_gather_into_tensor(
            torch.empty(world * 300000 * (1 + rank), device=dev),
            torch.ones(300000 * (1 + rank), device=dev),
        ),
    }
    for name, case in cases.items():
        try:
            case()
            torch.neuron.synchronize()
            errors[name] = None
        except Exception as error:
            errors[name] = f"{type(error).__name__}: {error}"
    tensor = torch.ones(4, device=dev)
    dist.all_reduce(tensor)
    check(tensor, torch.full((4,), float(world)), "all_reduce after mismatches")
    # No message of a failed collective is left for the next one to take.
    everyone = [rank_input(r, (8193,), torch.float32, salt=70) for r in range(world)]
    tensor = everyone[rank].to(dev)
    dist.all_reduce(tensor)
    check(tensor, reduce_reference(everyone, dist.ReduceOp.SUM), "large all_reduce afterwards")
    chunked = [rank_input(r, (300001,), torch.float32, salt=71) for r in range(world)]
    tensor = chunked[rank].to(dev)
    dist.all_reduce(tensor)
    check(tensor, reduce_reference(chunked, dist.ReduceOp.SUM), "chunked all_reduce afterwards")
    flat = torch.empty(world * 8193, device=dev)
    dist.all_gather_into_tensor(flat, everyone[rank].to(dev))
    check(flat, torch.cat(everyone), "large all_gather after mismatches")
    return {
        "errors": errors,
        "p2p_errors": p2p_mismatches(rank, dev),
        "config": dist.get_backend_config(),
    }


def p2p_mismatches(rank: int, dev) -> dict:
    """Rank 0 sends, rank 1 receives into a tensor of another size or dtype; rank 1 must raise
    naming both sides, and a matching pair must still work afterwards."""
    cases = {
        "larger": (torch.ones(10, device=dev), torch.empty(4, device=dev)),
        "smaller": (torch.ones(4, device=dev), torch.empty(10, device=dev)),
        "dtype": (torch.ones(4, device=dev), torch.empty(4, device=dev, dtype=torch.int32)),
    }
    errors = {}
    for name, (sent, into) in cases.items():
        try:
            if rank == 0:
                dist.send(sent, dst=1)
            elif rank == 1:
                dist.recv(into, src=0)
            torch.neuron.synchronize()
            errors[name] = None
        except Exception as error:
            errors[name] = f"{type(error).__name__}: {error}"
    # Receive from any source into the wrong size, then a matching pair on the same tag.
    try:
        if rank == 0:
            dist.send(torch.ones(6, device=dev), dst=1, tag=3)
        elif rank == 1:
            dist.recv(torch.empty(5, device=dev), tag=3)
        torch.neuron.synchronize()
        errors["any_source"] = None
    except Exception as error:
        errors["any_source"] = f"{type(error).__name__}: {error}"
    received = torch.empty(8, device=dev)
    if rank == 0:
        dist.send(torch.arange(8.0, device=dev), dst=1, tag=3)
    elif rank == 1:
        dist.recv(received, src=0, tag=3)
        check(received, torch.arange(8.0), "recv after mismatched receives")
    torch.neuron.synchronize()
    dist.barrier()
    return errors
