"""Diffusion models from diffusers (random weights) train on neuron as on the CPU, with nothing on
the host fallback: a small UNet2DModel (convolutions, group norm, attention, nearest upsampling)
and a small DiT (patch embedding, adaLN-Zero transformer blocks), one noise-prediction step each.
"""

import copy
import os
import warnings

import pytest
import torch
import torch.nn.functional as F

import openneuron

os.environ.setdefault("HF_HUB_OFFLINE", "1")
diffusers = pytest.importorskip("diffusers")


def unet():
    return diffusers.UNet2DModel(
        sample_size=16,
        in_channels=3,
        out_channels=3,
        layers_per_block=1,
        block_out_channels=(16, 32),
        down_block_types=("DownBlock2D", "AttnDownBlock2D"),
        up_block_types=("AttnUpBlock2D", "UpBlock2D"),
        norm_num_groups=8,
        attention_head_dim=8,
    )


def dit():
    return diffusers.DiTTransformer2DModel(
        num_attention_heads=2,
        attention_head_dim=16,
        in_channels=4,
        out_channels=4,
        num_layers=2,
        sample_size=8,
        patch_size=2,
        num_embeds_ada_norm=1000,
        norm_num_groups=8,
    )


# model, latent shape, and how the model is called on (noisy sample, timesteps).
MODELS = {
    "unet2d": (unet, (2, 3, 16, 16), lambda m, x, t: m(x, t).sample),
    "dit": (
        dit,
        (2, 4, 8, 8),
        lambda m, x, t: m(x, timestep=t, class_labels=torch.tensor([1, 3], device=x.device)).sample,
    ),
}

# fp32 throughout. Measured after one step: losses within 1e-7 relative of the CPU's, gradients
# within 1.5e-7 absolute (convolution, group norm and attention sum in other orders than the
# CPU's kernels); the tolerance leaves a margin of about 7x.
TOLERANCE = dict(rtol=1e-4, atol=1e-6)


def build(name):
    factory, shape, call = MODELS[name]
    torch.manual_seed(0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = factory()
    # Zero-initialised output layers (DiT's adaLN-Zero, the UNet's last conv in some configs)
    # would make most gradients exactly zero; random weights exercise every path.
    with torch.no_grad():
        for p in model.parameters():
            if p.abs().sum() == 0:
                p.normal_(0.0, 0.02)
        # DiT's label embedding drops class labels at random in training (classifier-free
        # guidance); the two devices draw different numbers, so it is turned off.
        for module in model.modules():
            if isinstance(module, diffusers.models.embeddings.LabelEmbedding):
                module.dropout_prob = 0.0
    return model, shape, call


def training_step(model, call, clean, noise, timesteps):
    scheduler = diffusers.DDPMScheduler(num_train_timesteps=1000)
    noisy = scheduler.add_noise(clean, noise, timesteps.cpu()).to(clean.device)
    loss = F.mse_loss(call(model, noisy, timesteps), noise)
    loss.backward()
    return loss


@pytest.mark.parametrize("name", list(MODELS))
def test_training_step_matches_the_cpu_with_no_fallback(name):
    cpu_model, shape, call = build(name)
    neuron_model = copy.deepcopy(cpu_model).to("neuron")
    generator = torch.Generator().manual_seed(1)
    clean = torch.randn(shape, generator=generator)
    noise = torch.randn(shape, generator=generator)
    timesteps = torch.tensor([10, 700])

    cpu_loss = training_step(cpu_model, call, clean, noise, timesteps)
    openneuron.clear_op_tracking()
    neuron_loss = training_step(
        neuron_model, call, clean.to("neuron"), noise.to("neuron"), timesteps.to("neuron")
    )
    fallbacks = openneuron.get_fallback_ops()

    torch.testing.assert_close(neuron_loss.cpu(), cpu_loss, **TOLERANCE)
    for (param, p_cpu), p_dev in zip(cpu_model.named_parameters(), neuron_model.parameters()):
        assert p_dev.grad is not None, param
        torch.testing.assert_close(
            p_dev.grad.cpu(), p_cpu.grad, **TOLERANCE, msg=lambda m, n=param: f"{n}: {m}"
        )
    assert fallbacks == {}, f"{name} ran ops on the host fallback: {fallbacks}"
