"""Mixture-of-Experts language models from transformers (random weights, their default experts
path: histc + _grouped_mm) train and generate on neuron as on the CPU, with nothing on the host
fallback. Six families: Qwen3-MoE, Mixtral, OLMoE, Qwen2-MoE, DeepSeek-V3, GPT-OSS."""

import copy
import os
import warnings

import pytest
import torch

import openneuron

os.environ.setdefault("HF_HUB_OFFLINE", "1")
transformers = pytest.importorskip("transformers")

VOCAB = 128
COMMON = dict(
    vocab_size=VOCAB,
    hidden_size=64,
    num_hidden_layers=2,
    num_attention_heads=4,
    num_key_value_heads=2,
    max_position_embeddings=128,
    attention_dropout=0.0,
    pad_token_id=0,
    bos_token_id=1,
    eos_token_id=2,
)

FAMILIES = {
    "qwen3_moe": lambda: transformers.Qwen3MoeForCausalLM(
        transformers.Qwen3MoeConfig(
            **COMMON,
            head_dim=16,
            intermediate_size=64,
            moe_intermediate_size=32,
            num_experts=8,
            num_experts_per_tok=2,
            decoder_sparse_step=1,
        )
    ),
    "mixtral": lambda: transformers.MixtralForCausalLM(
        transformers.MixtralConfig(
            **COMMON, intermediate_size=32, num_local_experts=4, num_experts_per_tok=2
        )
    ),
    "olmoe": lambda: transformers.OlmoeForCausalLM(
        transformers.OlmoeConfig(
            **COMMON, intermediate_size=32, num_experts=8, num_experts_per_tok=2
        )
    ),
    "qwen2_moe": lambda: transformers.Qwen2MoeForCausalLM(
        transformers.Qwen2MoeConfig(
            **COMMON,
            intermediate_size=64,
            moe_intermediate_size=32,
            shared_expert_intermediate_size=32,
            num_experts=8,
            num_experts_per_tok=2,
        )
    ),
    "deepseek_v3": lambda: transformers.DeepseekV3ForCausalLM(
        transformers.DeepseekV3Config(
            **COMMON,
            intermediate_size=64,
            moe_intermediate_size=32,
            n_routed_experts=8,
            num_experts_per_tok=2,
            n_shared_experts=1,
            first_k_dense_replace=0,
            kv_lora_rank=16,
            q_lora_rank=16,
            qk_rope_head_dim=8,
            qk_nope_head_dim=8,
            v_head_dim=16,
            n_group=2,
            topk_group=1,
        )
    ),
    "gpt_oss": lambda: transformers.GptOssForCausalLM(
        transformers.GptOssConfig(
            **COMMON,
            head_dim=16,
            intermediate_size=32,
            num_local_experts=4,
            num_experts_per_tok=2,
            layer_types=["full_attention"] * 2,
        )
    ),
}

# fp32 throughout: expert products sum in another order than the CPU's mm (1e-7 relative),
# measured below 1e-5 on losses and gradients after one step.
TOLERANCE = dict(rtol=1e-4, atol=1e-5)


def build(family):
    torch.manual_seed(0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = FAMILIES[family]()
    assert model.config._experts_implementation_internal == "grouped_mm"
    return model


@pytest.mark.parametrize("family", list(FAMILIES))
def test_training_steps_match_the_cpu_with_no_fallback(family):
    cpu_model = build(family)
    neuron_model = copy.deepcopy(cpu_model).to("neuron")
    tokens = torch.randint(3, VOCAB, (2, 16), generator=torch.Generator().manual_seed(1))
    optimizers = {
        "cpu": torch.optim.AdamW(cpu_model.parameters(), lr=1e-3),
        "neuron": torch.optim.AdamW(neuron_model.parameters(), lr=1e-3),
    }
    losses = {"cpu": [], "neuron": []}
    openneuron.clear_op_tracking()
    for step in range(3):
        for device, model in (("cpu", cpu_model), ("neuron", neuron_model)):
            batch = tokens.to(device)
            optimizers[device].zero_grad()
            loss = model(input_ids=batch, labels=batch).loss
            loss.backward()
            if step == 0 and device == "neuron":
                for (name, p_cpu), p_dev in zip(
                    cpu_model.named_parameters(), neuron_model.parameters()
                ):
                    if p_cpu.grad is None:
                        assert p_dev.grad is None, name
                        continue
                    torch.testing.assert_close(
                        p_dev.grad.cpu(), p_cpu.grad, **TOLERANCE, msg=lambda m, n=name: f"{n}: {m}"
                    )
            optimizers[device].step()
            losses[device].append(loss.item())
    torch.testing.assert_close(
        torch.tensor(losses["neuron"]), torch.tensor(losses["cpu"]), **TOLERANCE
    )
    fallbacks = openneuron.get_fallback_ops()
    assert fallbacks == {}, f"{family} ran ops on the host fallback: {fallbacks}"
    executed = openneuron.get_executed_ops()
    assert executed.get("aten::_grouped_mm", 0) > 0 and executed.get("aten::histc", 0) > 0


@pytest.mark.parametrize("family", list(FAMILIES))
def test_greedy_generation_gives_the_cpu_tokens_with_no_fallback(family):
    cpu_model = build(family).eval()
    neuron_model = copy.deepcopy(cpu_model).to("neuron")
    prompt = torch.randint(3, VOCAB, (2, 6), generator=torch.Generator().manual_seed(2))
    settings = dict(max_new_tokens=8, do_sample=False, min_new_tokens=8)
    with torch.no_grad():
        expected = cpu_model.generate(prompt, **settings)
        openneuron.clear_op_tracking()
        tokens = neuron_model.generate(prompt.to("neuron"), **settings)
    assert torch.equal(tokens.cpu(), expected)
    fallbacks = openneuron.get_fallback_ops()
    assert fallbacks == {}, f"{family} generate() ran ops on the host fallback: {fallbacks}"


def test_compiled_moe_trains_like_the_cpu():
    """torch.compile(backend="neuron") on the data-dependent routing: graph breaks are allowed,
    failures are not; loss and gradients as the CPU's. Under compile, transformers calls its own
    grouped-product op for fp32 experts (a loop of mm per expert); on neuron it runs as the
    one-kernel grouped product, forward and backward."""
    cpu_model = build("qwen3_moe")
    neuron_model = copy.deepcopy(cpu_model).to("neuron")
    compiled = torch.compile(neuron_model, backend="neuron")
    tokens = torch.randint(3, VOCAB, (2, 16), generator=torch.Generator().manual_seed(1))
    openneuron.clear_op_tracking()
    loss = compiled(input_ids=tokens.to("neuron"), labels=tokens.to("neuron")).loss
    loss.backward()
    assert openneuron.get_fallback_ops() == {}
    # Two products per layer forward, and two grouped products for each in the backward.
    layers = cpu_model.config.num_hidden_layers
    assert openneuron.get_executed_ops().get("aten::_grouped_mm", 0) == 6 * layers
    expected = cpu_model(input_ids=tokens, labels=tokens).loss
    expected.backward()
    torch.testing.assert_close(loss.detach().cpu(), expected.detach(), **TOLERANCE)
    for (name, p_cpu), p_dev in zip(cpu_model.named_parameters(), neuron_model.parameters()):
        if p_cpu.grad is not None:
            torch.testing.assert_close(
                p_dev.grad.cpu(), p_cpu.grad, **TOLERANCE, msg=lambda m, n=name: f"{n}: {m}"
            )
