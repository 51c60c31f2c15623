"""W3: GPT-2-style decoder training (transformers.GPT2LMHeadModel from a config), AdamW."""

import torch

from bench.workloads import (
    Tolerance,
    Workload,
    causal_lm_loss,
    cycling_batches,
    register,
    training,
)


def build(device, *, seed, batch, seq, n_layer, n_embd, n_head, vocab, batches=2):
    import transformers

    torch.manual_seed(seed)
    config = transformers.GPT2Config(
        vocab_size=vocab,
        n_positions=max(128, seq),
        n_embd=n_embd,
        n_layer=n_layer,
        n_head=n_head,
        # Dropout draws differ between devices (each has its own generator): off.
        resid_pdrop=0.0,
        embd_pdrop=0.0,
        attn_pdrop=0.0,
    )
    model = transformers.GPT2LMHeadModel(config)
    data = torch.Generator().manual_seed(seed + 1)
    cpu_batches = [(torch.randint(0, vocab, (batch, seq), generator=data),) for _ in range(batches)]
    model.to(device).train()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    batch_of = cycling_batches(cpu_batches, device)

    return training(model, optimizer, batch_of, causal_lm_loss)


WORKLOAD = register(
    Workload(
        name="gpt2",
        description="W3 GPT-2-style decoder training (4 layers, 256 wide, seq 128), fp32, AdamW",
        training=True,
        builder=build,
        sizes={
            "small": dict(batch=2, seq=128, n_layer=4, n_embd=256, n_head=4, vocab=1024),
            "benchmark": dict(batch=8, seq=128, n_layer=4, n_embd=256, n_head=4, vocab=1024),
        },
        tolerance=Tolerance(
            1e-3,
            1e-4,
            "fp32, but AdamW divides by sqrt(v): tiny gradient "
            "differences from summation order move small weights by up "
            "to lr per step, so 10 steps drift more than SGD",
        ),
    )
)
