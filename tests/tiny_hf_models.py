"""Tiny random-weight Hugging Face models, a word-level tokenizer and toy data, all built
locally (nothing is downloaded), for tests that run Trainer, TRL and PEFT in seconds."""

from __future__ import annotations

import os

import torch

WORDS = "the a cat dog sat ran on under mat log big small red blue".split()


def offline() -> None:
    """No hub access and no telemetry from the libraries under test (CI has no network)."""
    os.environ["HF_HUB_OFFLINE"] = "1"
    os.environ["HF_HUB_DISABLE_TELEMETRY"] = "1"
    import huggingface_hub.constants

    huggingface_hub.constants.HF_HUB_DISABLE_TELEMETRY = True


def tokenizer():
    """A whitespace, word-level fast tokenizer over WORDS with pad/eos/unk tokens."""
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    vocab = {"<pad>": 0, "<eos>": 1, "<unk>": 2, **{w: i + 3 for i, w in enumerate(WORDS)}}
    words = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    words.pre_tokenizer = pre_tokenizers.Whitespace()
    return PreTrainedTokenizerFast(
        tokenizer_object=words, pad_token="<pad>", eos_token="<eos>", unk_token="<unk>"
    )


def llama(vocab_size: int = len(WORDS) + 3, seed: int = 0):
    """A two-layer Llama with grouped-query attention and random weights drawn from `seed`."""
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(seed)
    config = LlamaConfig(
        vocab_size=vocab_size,
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=32,
        pad_token_id=0,
        eos_token_id=1,
        bos_token_id=1,
    )
    return LlamaForCausalLM(config)


def token_rows(count: int = 8, length: int = 12, vocab_size: int = len(WORDS) + 3):
    """Causal-LM examples (input_ids and labels alike) of random tokens, the same every call."""
    generator = torch.Generator().manual_seed(0)
    rows = torch.randint(3, vocab_size, (count, length), generator=generator)
    return [{"input_ids": row, "labels": row.clone()} for row in rows]


def sentences(count: int = 8, length: int = 10) -> list[str]:
    """Random sentences over WORDS, the same every call."""
    generator = torch.Generator().manual_seed(0)
    picks = torch.randint(0, len(WORDS), (count, length), generator=generator)
    return [" ".join(WORDS[i] for i in row.tolist()) for row in picks]


def reset_accelerate() -> None:
    """Forgets accelerate's process-wide state, so the next Trainer chooses its device anew."""
    from accelerate.state import AcceleratorState

    AcceleratorState._reset_state(reset_partial_state=True)
