"""generate() on neuron sends nothing to the host fallback: Llama, GPT-2 and T5 (random weights)
with greedy search, sampling, beam search and a static KV cache; greedy and beam search give
the CPU's tokens (sampling draws from neuron's own generator, so its tokens differ)."""

import copy
import os
import warnings

import pytest
import torch

import openneuron

os.environ.setdefault("HF_HUB_OFFLINE", "1")
transformers = pytest.importorskip("transformers")

VOCAB = 128
SPECIAL = dict(pad_token_id=0, bos_token_id=1, eos_token_id=2)


def build(name):
    torch.manual_seed(0)
    if name == "llama":
        config = transformers.LlamaConfig(
            vocab_size=VOCAB, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
            num_attention_heads=4, num_key_value_heads=2, **SPECIAL,
        )  # fmt: skip
        return transformers.LlamaForCausalLM(config)
    if name == "gpt2":
        config = transformers.GPT2Config(
            vocab_size=VOCAB, n_embd=64, n_layer=2, n_head=4, **SPECIAL
        )
        return transformers.GPT2LMHeadModel(config)
    config = transformers.T5Config(
        vocab_size=VOCAB, d_model=64, d_ff=128, num_layers=2, num_heads=4, d_kv=16,
        decoder_start_token_id=0, pad_token_id=0, eos_token_id=2,
    )  # fmt: skip
    return transformers.T5ForConditionalGeneration(config)


MODES = {
    "greedy": dict(do_sample=False),
    "sampling": dict(do_sample=True, top_k=20, top_p=0.9, temperature=0.8),
    "beam_search": dict(do_sample=False, num_beams=3),
    "static_cache": dict(do_sample=False, cache_implementation="static"),
}


@pytest.mark.parametrize("mode", list(MODES))
@pytest.mark.parametrize("name", ["llama", "gpt2", "t5"])
def test_generate_runs_with_no_fallback(name, mode):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cpu_model = build(name).eval()
    neuron_model = copy.deepcopy(cpu_model).to("neuron")
    prompt = torch.randint(3, VOCAB, (2, 6), generator=torch.Generator().manual_seed(1))
    settings = dict(max_new_tokens=6, min_new_tokens=6, **MODES[mode])
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        openneuron.clear_op_tracking()
        tokens = neuron_model.generate(prompt.to("neuron"), **settings)
        fallbacks = openneuron.get_fallback_ops()
        expected = cpu_model.generate(prompt, **settings)
    assert fallbacks == {}, f"{name} {mode}: {fallbacks}"
    assert tokens.shape == expected.shape
    if mode != "sampling":
        assert torch.equal(tokens.cpu(), expected)
