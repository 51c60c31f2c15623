"""torchao's float8 training (convert_to_float8_training) on neuron: a tiny random-weight Llama
whose linear layers multiply in float8 through torch._scaled_mm trains natively, with the losses
of the same run on the CPU and close to its bf16 run. torchao computes each scale from its amax
in float64, which is not a NeuronCore type: those three scalar ops are the only host fallback."""

import warnings

import pytest
import torch

import openneuron

with warnings.catch_warnings():
    warnings.simplefilter("ignore")  # torchao's optional CUDA extensions do not load on CPU
    from torchao.float8 import Float8LinearConfig, convert_to_float8_training
from transformers import LlamaConfig, LlamaForCausalLM

STEPS = 4
# torchao's amax_to_scale: float64 clamp(amax), reciprocal and multiply by the float8 maximum.
FLOAT64_SCALE_OPS = {"aten::clamp", "aten::reciprocal", "aten::mul.Tensor"}


def train(device, recipe):
    """Losses of STEPS AdamW steps of a 2-layer bf16 Llama; recipe None keeps bf16 linears."""
    torch.manual_seed(0)
    config = LlamaConfig(
        vocab_size=128,
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=64,
    )
    model = LlamaForCausalLM(config).to(torch.bfloat16)
    if recipe is not None:
        convert_to_float8_training(
            model,
            config=Float8LinearConfig.from_recipe_name(recipe),
            module_filter_fn=lambda module, name: name != "lm_head",
        )
    model = model.to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    ids = torch.randint(0, 128, (4, 32), generator=torch.Generator().manual_seed(1)).to(device)
    losses = []
    for _ in range(STEPS):
        loss = model(input_ids=ids, labels=ids).loss
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        losses.append(loss.item())
    return losses


@pytest.mark.parametrize("recipe", ["tensorwise", "rowwise"])
def test_float8_training_runs_on_neuron_with_the_cpus_losses(recipe):
    openneuron.clear_op_tracking()
    on_device = train("neuron", recipe)
    assert set(openneuron.get_fallback_ops()) <= FLOAT64_SCALE_OPS
    assert "aten::_scaled_mm" in openneuron.get_executed_ops()
    # Same float8 quantisation, products rounded once to bf16 on both: measured within 5e-4.
    assert on_device == pytest.approx(train("cpu", recipe), abs=5e-3)
    # float8 linears track the bf16 model's losses (measured: within 2.5e-3 over these steps).
    assert on_device == pytest.approx(train("cpu", None), abs=2e-2)


def train_mxfp8(device):
    """Losses of STEPS AdamW steps of a bf16 two-layer MLP whose linears run torchao's MXFP8
    training recipe in its emulated mode: torchao's real-kernel mode for MX training casts with
    Triton and CUDA kernels only (SM100), so emulation is what it offers any other device."""
    from torchao.prototype.moe_training.config import MXFP8TrainingOpConfig
    from torchao.quantization import quantize_
    from torchao.quantization.quantize_.common import KernelPreference

    torch.manual_seed(0)
    model = torch.nn.Sequential(
        torch.nn.Linear(64, 128, bias=False), torch.nn.GELU(), torch.nn.Linear(128, 64, bias=False)
    ).to(device=device, dtype=torch.bfloat16)
    quantize_(
        model,
        MXFP8TrainingOpConfig(kernel_preference=KernelPreference.EMULATED),
        filter_fn=lambda module, name: isinstance(module, torch.nn.Linear),
    )
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2)
    x = torch.randn(32, 64, generator=torch.Generator().manual_seed(1)).to(device, torch.bfloat16)
    losses = []
    for _ in range(STEPS):
        loss = model(x).float().pow(2).mean()
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        losses.append(loss.item())
    return losses


def test_mxfp8_training_runs_natively_with_the_cpus_losses():
    openneuron.clear_op_tracking()
    on_device = train_mxfp8("neuron")
    assert openneuron.get_fallback_ops() == {}
    # The same e8m0 scales and fp8 elements on both; measured within 1e-7 relative.
    assert on_device == pytest.approx(train_mxfp8("cpu"), rel=1e-5)
    assert on_device[-1] < on_device[0] / 2  # it trains


def mxfp8_grouped_products(device):
    """Output and gradients of torchao's MXFP8 grouped product (the MoE experts' path of its
    MXFP8 training recipe), emulated: four experts of 32 tokens, K 64, N 96."""
    from torchao.prototype.moe_training.mxfp8_grouped_mm import _to_mxfp8_then_scaled_grouped_mm
    from torchao.quantization.quantize_.common import KernelPreference

    generator = torch.Generator().manual_seed(0)
    tokens = torch.randn(128, 64, generator=generator).to(device, torch.bfloat16)
    tokens.requires_grad_()
    # (experts, K, N) in each expert's column-major layout, as torchao requires.
    weights = torch.randn(4, 96, 64, generator=generator).to(device, torch.bfloat16)
    weights = weights.transpose(-2, -1).detach().requires_grad_()
    offsets = torch.tensor([32, 64, 96, 128], dtype=torch.int32, device=device)
    out = _to_mxfp8_then_scaled_grouped_mm(
        tokens, weights, offsets, kernel_preference=KernelPreference.EMULATED
    )
    out.float().pow(2).sum().backward()
    return [out.detach().cpu(), tokens.grad.cpu(), weights.grad.cpu()]


def test_mxfp8_grouped_products_for_moe_training_run_natively_as_on_the_cpu():
    openneuron.clear_op_tracking()
    on_device = mxfp8_grouped_products("neuron")
    assert openneuron.get_fallback_ops() == {}
    # Same quantisation, grouped products over exact fp8 elements: bit-equal on this AVX-512
    # host; the tolerance leaves room for another summation order of the products elsewhere.
    for got, expected in zip(on_device, mxfp8_grouped_products("cpu")):
        torch.testing.assert_close(got, expected, rtol=1e-3, atol=1e-3)
