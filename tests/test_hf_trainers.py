"""Transformers' Trainer, TRL's SFTTrainer and PEFT's LoRA pick the neuron device with no
setting (the ``torch_neuronx`` name makes accelerate and Transformers see it), train without
the host fallback, and log the losses the same run logs on CPU."""

import pytest
import tiny_hf_models
import torch

import openneuron

pytest.importorskip("trl", reason="TRL is a pinned dev requirement (requirements.txt)")
pytest.importorskip("peft", reason="PEFT is a pinned dev requirement (requirements.txt)")

STEPS = 3


@pytest.fixture(autouse=True)
def fresh_accelerate_state(tmp_path, monkeypatch):
    tiny_hf_models.offline()
    monkeypatch.chdir(tmp_path)
    tiny_hf_models.reset_accelerate()
    yield
    tiny_hf_models.reset_accelerate()


def _common_args(use_cpu: bool) -> dict:
    # Nothing names a device: use_cpu=True is the CPU run the neuron run is compared with.
    return dict(
        output_dir="out",
        per_device_train_batch_size=4,
        max_steps=STEPS,
        learning_rate=1e-2,
        logging_steps=1,
        report_to=[],
        save_strategy="no",
        seed=0,
        use_cpu=use_cpu,
    )


def _train(trainer) -> tuple[list[float], torch.device, dict]:
    openneuron.clear_op_tracking()
    trainer.train()
    losses = [entry["loss"] for entry in trainer.state.log_history if "loss" in entry]
    device = next(trainer.model.parameters()).device
    return losses, device, openneuron.get_fallback_ops()


def _trainer_run(use_cpu: bool):
    from transformers import Trainer, TrainingArguments

    args = TrainingArguments(**_common_args(use_cpu))
    trainer = Trainer(
        model=tiny_hf_models.llama(), args=args, train_dataset=tiny_hf_models.token_rows()
    )
    return _train(trainer)


def _sft_run(use_cpu: bool, lora: bool):
    from datasets import Dataset
    from peft import LoraConfig
    from trl import SFTConfig, SFTTrainer

    adapter = LoraConfig(r=4, lora_alpha=8, target_modules=["q_proj", "v_proj"])
    trainer = SFTTrainer(
        model=tiny_hf_models.llama(),
        args=SFTConfig(max_length=16, **_common_args(use_cpu)),
        train_dataset=Dataset.from_dict({"text": tiny_hf_models.sentences()}),
        processing_class=tiny_hf_models.tokenizer(),
        peft_config=adapter if lora else None,
    )
    assert trainer.args.bf16  # TRL's default: the neuron run goes through bf16 autocast
    return _train(trainer)


# TRL trains in bf16 autocast by default (on CPU too): its losses agree to bf16's precision.
BF16_TOLERANCE = dict(rtol=4e-3, atol=1e-3)
FP32_TOLERANCE = dict(rtol=1e-4, atol=1e-5)


def _check_against_cpu(neuron_run, cpu_run, tolerance):
    losses, device, fallback = neuron_run
    cpu_losses, cpu_device, _ = cpu_run
    assert device == torch.device("neuron", 0)
    assert cpu_device == torch.device("cpu")
    assert fallback == {}, f"ops on the host fallback: {fallback}"
    assert len(losses) == STEPS
    torch.testing.assert_close(losses, cpu_losses, **tolerance)
    assert losses[-1] != losses[0]  # it trained


def test_trainer_picks_neuron_and_matches_cpu():
    neuron_run = _trainer_run(use_cpu=False)
    tiny_hf_models.reset_accelerate()
    _check_against_cpu(neuron_run, _trainer_run(use_cpu=True), FP32_TOLERANCE)


def test_sft_trainer_picks_neuron_and_matches_cpu():
    neuron_run = _sft_run(use_cpu=False, lora=False)
    tiny_hf_models.reset_accelerate()
    _check_against_cpu(neuron_run, _sft_run(use_cpu=True, lora=False), BF16_TOLERANCE)


def test_sft_trainer_with_lora_picks_neuron_and_matches_cpu():
    neuron_run = _sft_run(use_cpu=False, lora=True)
    tiny_hf_models.reset_accelerate()
    _check_against_cpu(neuron_run, _sft_run(use_cpu=True, lora=True), BF16_TOLERANCE)


def test_peft_lora_model_trains_adapter_weights_only_on_neuron():
    from peft import LoraConfig, get_peft_model
    from transformers import Trainer, TrainingArguments

    model = get_peft_model(
        tiny_hf_models.llama(), LoraConfig(r=4, lora_alpha=8, target_modules=["q_proj"])
    )
    frozen = {n: p.detach().clone() for n, p in model.named_parameters() if not p.requires_grad}
    adapters = {n: p.detach().clone() for n, p in model.named_parameters() if p.requires_grad}
    trainer = Trainer(
        model=model,
        args=TrainingArguments(**_common_args(use_cpu=False)),
        train_dataset=tiny_hf_models.token_rows(),
    )
    losses, device, fallback = _train(trainer)
    assert device == torch.device("neuron", 0) and fallback == {}, (device, fallback)
    after = dict(model.named_parameters())
    assert all(torch.equal(after[n].cpu(), p) for n, p in frozen.items())
    assert any(not torch.equal(after[n].cpu(), p) for n, p in adapters.items() if "lora_B" in n)
