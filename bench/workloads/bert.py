"""W4: BERT-style encoder inference (transformers.BertModel from a config), fp32 and bf16."""

import torch

from bench.workloads import Built, Tolerance, Workload, cycling_batches, register


def build(device, *, seed, dtype, batch, seq, layers, hidden, heads, vocab, batches=2):
    import transformers

    torch.manual_seed(seed)
    config = transformers.BertConfig(
        vocab_size=vocab,
        hidden_size=hidden,
        num_hidden_layers=layers,
        num_attention_heads=heads,
        intermediate_size=4 * hidden,
        max_position_embeddings=max(128, seq),
        hidden_dropout_prob=0.0,
        attention_probs_dropout_prob=0.0,
    )
    model = transformers.BertModel(config).to(dtype)
    data = torch.Generator().manual_seed(seed + 1)
    cpu_batches = [
        (
            torch.randint(0, vocab, (batch, seq), generator=data),
            torch.ones(batch, seq, dtype=torch.long),
        )
        for _ in range(batches)
    ]
    model.to(device).eval()
    batch_of = cycling_batches(cpu_batches, device)

    runner = {"model": model}

    def step(i):
        tokens, attention_mask = batch_of(i)
        with torch.no_grad():
            out = runner["model"](input_ids=tokens, attention_mask=attention_mask)
            return out.last_hidden_state

    return Built(model, None, step, runner)


_SIZES = {
    "small": dict(batch=2, seq=128, layers=4, hidden=256, heads=4, vocab=1024),
    "benchmark": dict(batch=16, seq=128, layers=4, hidden=256, heads=4, vocab=1024),
}


def _sizes(dtype):
    return {name: dict(size, dtype=dtype) for name, size in _SIZES.items()}


FP32 = register(
    Workload(
        name="bert-fp32",
        description="W4 BERT-style encoder inference (4 layers, hidden 256), fp32",
        training=False,
        builder=build,
        sizes=_sizes(torch.float32),
        tolerance=Tolerance(
            1e-4, 1e-4, "fp32 forward only; summation order in matmul, softmax and layer norm"
        ),
    )
)

BF16 = register(
    Workload(
        name="bert-bf16",
        description="W4 BERT-style encoder inference (4 layers, hidden 256), bf16 weights",
        training=False,
        builder=build,
        sizes=_sizes(torch.bfloat16),
        tolerance=Tolerance(
            5e-2,
            5e-2,
            "bf16 keeps 8 mantissa bits: every op rounds (2^-8 relative) "
            "and one-ulp differences in an op's result propagate through "
            "4 layers; outputs are layer-normed, so O(1)",
        ),
    )
)
