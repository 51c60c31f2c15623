"""W6: Mixture-of-Experts decoder training (transformers.Qwen3MoeForCausalLM from a config) through
transformers' default experts path: router top-k, tokens sorted by expert, torch.histc for the
tokens per expert and torch._grouped_mm for every expert's projections, with AdamW."""

import torch

from bench.workloads import (
    Tolerance,
    Workload,
    causal_lm_loss,
    cycling_batches,
    register,
    training,
)


def build(device, *, seed, batch, seq, layers, hidden, experts, top_k, expert_hidden, vocab):
    import transformers

    torch.manual_seed(seed)
    config = transformers.Qwen3MoeConfig(
        vocab_size=vocab,
        hidden_size=hidden,
        intermediate_size=expert_hidden * 2,
        moe_intermediate_size=expert_hidden,
        num_experts=experts,
        num_experts_per_tok=top_k,
        decoder_sparse_step=1,
        num_hidden_layers=layers,
        num_attention_heads=4,
        num_key_value_heads=2,
        head_dim=hidden // 4,
        max_position_embeddings=max(128, seq),
        attention_dropout=0.0,
        attn_implementation="sdpa",
    )
    model = transformers.Qwen3MoeForCausalLM(config)
    data = torch.Generator().manual_seed(seed + 1)
    cpu_batches = [(torch.randint(0, vocab, (batch, seq), generator=data),) for _ in range(2)]
    model.to(device).train()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    return training(model, optimizer, cycling_batches(cpu_batches, device), causal_lm_loss)


WORKLOAD = register(
    Workload(
        name="moe",
        description="W6 Qwen3-MoE decoder training (grouped_mm experts), AdamW",
        training=True,
        builder=build,
        sizes={
            "small": dict(
                batch=2,
                seq=32,
                layers=2,
                hidden=64,
                experts=8,
                top_k=2,
                expert_hidden=32,
                vocab=512,
            ),
            "benchmark": dict(
                batch=4,
                seq=128,
                layers=4,
                hidden=256,
                experts=8,
                top_k=2,
                expert_hidden=256,
                vocab=1024,
            ),
        },
        tolerance=Tolerance(
            1e-4,
            1e-4,
            "fp32: the expert products accumulate in another order than the CPU's mm "
            "(1e-7 relative per product), which AdamW carries over 10 steps",
        ),
    )
)
