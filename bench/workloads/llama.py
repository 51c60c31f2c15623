"""W5: Llama-style decoder training (transformers.LlamaForCausalLM from a config: RMSNorm, RoPE,
SiLU MLP, SDPA attention) under bf16 autocast with AdamW(fused=True)."""

import torch

from bench.workloads import (
    Tolerance,
    Workload,
    causal_lm_loss,
    cycling_batches,
    register,
    training,
)


def build(device, *, seed, batch, seq, layers, hidden, heads, kv_heads, vocab, batches=2):
    import transformers

    torch.manual_seed(seed)
    config = transformers.LlamaConfig(
        vocab_size=vocab,
        hidden_size=hidden,
        intermediate_size=int(hidden * 8 / 3) // 64 * 64,
        num_hidden_layers=layers,
        num_attention_heads=heads,
        num_key_value_heads=kv_heads,
        max_position_embeddings=max(128, seq),
        attention_dropout=0.0,
        attn_implementation="sdpa",
    )
    model = transformers.LlamaForCausalLM(config)
    data = torch.Generator().manual_seed(seed + 1)
    cpu_batches = [(torch.randint(0, vocab, (batch, seq), generator=data),) for _ in range(batches)]
    model.to(device).train()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3, fused=True)
    batch_of = cycling_batches(cpu_batches, device)

    def autocast_loss(model, tokens):
        with torch.autocast(device.type, dtype=torch.bfloat16):
            return causal_lm_loss(model, tokens)

    return training(model, optimizer, batch_of, autocast_loss)


WORKLOAD = register(
    Workload(
        name="llama",
        description="W5 Llama-style decoder training, bf16 autocast, fused AdamW",
        training=True,
        builder=build,
        sizes={
            "small": dict(batch=2, seq=64, layers=2, hidden=128, heads=4, kv_heads=2, vocab=1024),
            "benchmark": dict(
                batch=4, seq=128, layers=4, hidden=256, heads=4, kv_heads=2, vocab=1024
            ),
        },
        tolerance=Tolerance(
            2e-2,
            2e-2,
            "bf16 autocast: matmuls round to bf16 (2^-8 relative), so "
            "one-ulp differences in their results change the loss at the "
            "1e-3 level per step and accumulate over 10 AdamW steps",
        ),
    )
)
